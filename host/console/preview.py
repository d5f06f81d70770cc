"""Before the click: a one-click action's dry run as a person reads it (the fields that would
change, the event it would send and who would hear it), shown before the real action."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Preview", "preview"]

SYSTEM = frozenset({"id", "_version", "created_at", "updated_at"})
"""Columns every write sets: not worth a line of the preview."""

Preview = dict[str, Any]


def preview(
    rehearsal: Mapping[str, Any], item: Mapping[str, Any], fields: list[Mapping[str, Any]]
) -> Preview:
    """``changes``: (label, now, after) for each column the dry run would set to a new value;
    ``event``: the action's event; ``subscribers``: (name, outcome) of those that would hear
    it in its transaction."""
    labels = {f["name"]: f["label"] for f in fields}
    changed = []
    for name, after in (rehearsal.get("changes") or {}).items():
        if name in SYSTEM or name.startswith("_"):
            continue
        before = item.get(name)
        if name in item and before == after:
            continue
        changed.append((labels.get(name, name), before, after))
    audit = rehearsal.get("audit") or {}
    return {
        "changes": changed,
        "event": audit.get("action"),
        "subscribers": sorted((rehearsal.get("subscribers") or {}).items()),
    }
