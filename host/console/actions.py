"""What a document's actions and reference fields become on a page, and running a
submitted form through the action route's code."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from host.console.documents import Catalogue, Document
from host.console.forms import changed_inputs, form_inputs
from plugin_api.errors import ConcurrencyConflict, NotFound

__all__ = [
    "action_of",
    "buttons",
    "new_key",
    "perform",
    "pickers",
    "possible",
    "reference_links",
    "rehearse",
    "subject_actions",
]

PICKER_ROWS = 100
"""Rows of the target entity a reference picker offers."""


def subject_actions(document: Document) -> list[dict[str, Any]]:
    return [a for a in document["actions"] if a["subjectRequired"]]


def buttons(document: Document) -> list[dict[str, Any]]:
    """Actions a row can run with one click: a subject and no inputs (transitions)."""
    return [a for a in subject_actions(document) if not a["inputs"]]


async def perform(
    found: Catalogue,
    document: Document,
    descriptor: Mapping[str, Any],
    subject: str | None,
    form: Mapping[str, str],
    key: str,
) -> dict[str, Any]:
    """Run the action of a submitted form; an update sends only what changed, and refuses a
    form whose row changed since it was drawn (the ``_version`` it showed)."""
    inputs = descriptor["inputs"]
    if "initialValues" in descriptor:
        initial = json.loads(form.get("_initial") or "{}")
        seen = form.get("_version")
        item = document["data"]["item"] or {}
        if seen and "_version" in item and item["_version"] != seen:
            raise ConcurrencyConflict("The row was modified since the form was drawn")
        values = changed_inputs(inputs, form, initial)
    else:
        values = form_inputs(inputs, form)
    body: dict[str, Any] = {"inputs": values}
    if subject is not None:
        body["subject"] = _subject(document, subject)
    answer = await found.act(descriptor["fqn"], body, key)
    outputs: dict[str, Any] = answer.get("outputs") or {}
    return outputs


async def rehearse(
    found: Catalogue, document: Document, descriptor: Mapping[str, Any], subject: str, key: str
) -> dict[str, Any]:
    """The dry run of a one-click action on ``subject`` (no inputs): what would change and
    which subscribers would hear of it, nothing kept.

    :raises TesseraError: the refusal the action itself would answer."""
    body = {"inputs": {}, "subject": _subject(document, subject)}
    return await found.act(descriptor["fqn"], body, key, dry_run=True)


def _subject(document: Document, subject: str) -> dict[str, str]:
    return {
        "tenantId": document["metadata"]["tenant"],
        "entityFqn": document["metadata"]["entity"],
        "identityHandle": subject,
    }


def action_of(document: Document, fqn: str) -> dict[str, Any]:
    for descriptor in document["actions"]:
        if descriptor["fqn"] == fqn:
            found: dict[str, Any] = descriptor
            return found
    raise NotFound(f"The document offers no action {fqn!r} here")


async def reference_links(found: Catalogue, document: Document) -> dict[str, str]:
    """For each reference field: the projection its values link to (when one is readable)."""
    links = {}
    for field in document["fields"]:
        if field["type"] == "reference":
            target = await found.projection_of(field["typeOptions"]["entity"])
            if target is not None:
                links[field["name"]] = target
    return links


async def pickers(
    found: Catalogue, inputs: Sequence[Mapping[str, Any]]
) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """For each reference input: (target projection, [(id, label)]) of its first rows."""
    pickers = {}
    for descriptor in inputs:
        if descriptor["type"] != "reference":
            continue
        target = await found.projection_of(descriptor["typeOptions"]["entity"])
        if target is None:
            continue
        document = await found.document(target, [("pageSize", str(PICKER_ROWS))])
        choices = [(row["id"], _row_label(row)) for row in document["data"]["items"]]
        pickers[descriptor["name"]] = (target, choices)
    return pickers


def _row_label(row: Mapping[str, Any]) -> str:
    for name, value in row.items():
        if name != "id" and isinstance(value, str) and not name.startswith("_"):
            return f"{value} ({row['id']})"
    return str(row["id"])


def possible(workflow: Mapping[str, Any] | None, fqn: str, row: Mapping[str, Any]) -> bool:
    """Whether the 1.3.0 workflow lets action ``fqn`` start from the row's state (true for
    actions that perform no transition, and when the row does not show its state)."""
    if workflow is None or workflow["field"] not in row:
        return True
    sources = [t["from"] for t in workflow["transitions"] if fqn in t["actions"]]
    return not sources or any(row[workflow["field"]] in found for found in sources)


def new_key() -> str:
    """A fresh Idempotency-Key: one per drawn form, so a double click acts once."""
    return secrets.token_urlsafe(18)
