"""The row's story: its audit records as a timeline a person reads (docs/history.md), each
version linked to the row as of that version; and what is still to come, its pending timers
(docs/timers.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from host.console.documents import Catalogue, Document
from plugin_api.errors import TesseraError

__all__ = ["HISTORY_ROWS", "pending_timers", "timeline"]

HISTORY_ROWS = 50
"""The newest records a detail page shows."""

KNOWN = frozenset(
    {"eventId", "action", "actor", "at", "versionBefore", "versionAfter", "changes", "via"}
)


def _words(fqn: str, labels: Mapping[str, str]) -> str:
    if fqn in labels:
        return labels[fqn]
    last = fqn.rsplit(".", 1)[-1].replace("_", " ")
    return last[:1].upper() + last[1:] if "." in fqn else fqn


def _entry(
    item: Mapping[str, Any], labels: Mapping[str, str], fields: Mapping[str, str]
) -> dict[str, Any]:
    changes = item.get("changes")
    via = [
        f"{_words(hop.get('action', ''), labels)} ({hop.get('plugin', '?')})"
        for hop in item.get("via") or ()
    ]
    extra = {
        key: value.get("name", value) if isinstance(value, Mapping) else value
        for key, value in item.items()
        if key not in KNOWN and value is not None
    }  # what a later release records beside these (a timer's name, say), shown as given
    return {
        "action": _words(item["action"], labels),
        "fqn": item["action"],
        "actor": item["actor"]["id"],
        "roles": ", ".join(item["actor"]["roles"]),
        "at": item["at"],
        "version": item["versionAfter"],
        "changes": None
        if changes is None
        else [
            (fields.get(name, name), change["before"], change["after"])
            for name, change in changes.items()
        ],
        "via": via,
        "extra": extra,
    }


async def timeline(
    found: Catalogue, fqn: str, subject: str, document: Document
) -> tuple[list[dict[str, Any]], str | None]:
    """The row's newest records as timeline entries, or why none can be shown."""
    try:
        items: Sequence[Mapping[str, Any]] = await found.history(fqn, subject, HISTORY_ROWS)
    except TesseraError as error:
        return [], error.message
    labels = {a["fqn"]: a["label"] for a in document["actions"]}
    fields = {f["name"]: f["label"] for f in document["fields"]}
    return [_entry(item, labels, fields) for item in items], None


def pending_timers(document: Document) -> list[dict[str, Any]]:
    """The row's pending timers in a detail document (ViewSchema 1.5.0 ``data.timers``,
    earliest first) in words: the action's label (else its humanised name), when it is due,
    and whether it is overdue."""
    labels = {a["fqn"]: a["label"] for a in document["actions"]}
    return [
        {
            "action": _words(str(timer["action"]), labels),
            "due": timer["dueAt"],
            "overdue": bool(timer["overdue"]),
        }
        for timer in (document.get("data") or {}).get("timers") or ()
    ]
