"""Errors of the taxonomy in words a person understands (shown next to the form)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plugin_api.errors import TesseraError

__all__ = ["Problem", "explain", "row_title"]

PLAIN = {
    "ConcurrencyConflict": "This record was changed by someone else since you opened it. "
    "Reload the page to see the new values, then try again.",
    "PolicyDenied": "You are not allowed to do this.",
    "TenantBoundaryViolation": "This record belongs to another tenant.",
    "WorkflowStateMismatch": "This step does not apply to the record in its current state.",
    "WorkflowGuardDenied": "The workflow does not allow this step now.",
    "WorkflowSubjectNotFound": "This record does not exist (any more) for your tenant.",
    "ProjectionNotFound": "There is no such page.",
    "UnknownAction": "There is no such action.",
    "NotFound": "There is nothing here.",
    "BadRequest": "Something in the request is not right.",
    "PolicySubjectRequired": "This action needs a record to act on.",
    "IdempotencyKeyReused": "This form was already sent with other values. Reload the page "
    "to get a fresh form.",
    "EffectFailed": "The plugin's step failed; nothing was changed.",
    "ServiceUnavailable": "The service is not ready; try again in a moment.",
}


@dataclass(frozen=True, slots=True)
class Problem:
    """An error as a page shows it: the plain sentence, the kind and the API's message."""

    status: int
    kind: str
    words: str
    message: str


def explain(error: TesseraError) -> Problem:
    words = PLAIN.get(error.kind, "Something went wrong; nothing was changed.")
    return Problem(error.status, error.kind, words, error.message)


def row_title(document: Mapping[str, Any], item: Mapping[str, Any]) -> str:
    """What names a row for people: its display text (the entity's display field, ViewSchema
    1.5.0 ``labels.displayField``, when the projection shows it), else the entity's label and
    the id."""
    labels = document["labels"]
    shown = item.get(labels["displayField"]) if labels["displayField"] else None
    if isinstance(shown, str) and shown.strip():
        return shown
    return f"{labels['entity']} {item['id']}"
