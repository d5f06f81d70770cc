"""The OpenAPI parts of availability and dry runs (docs/http.md, "Availability" and "Dry
runs"): the ``_availability`` of a 1.2.0 row, ``POST /availability``, the ``dryRun`` query
parameter of an action and its answer. Used by :mod:`host.http.openapi`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from host.http.availability import AVAILABILITY_KEY, MAX_ACTIONS, MAX_SUBJECTS
from host.http.dryrun import DRY_RUN
from host.http.jsonschema import Schema, object_schema
from plugin_api import errors as e

__all__ = [
    "AVAILABILITY_SCHEMAS",
    "DRY_RUN_PARAMETER",
    "DRY_RUN_VERSIONS",
    "availability_operation",
    "dry_run_success",
    "with_availability",
]

_REF: Final = "#/components/schemas/"

_CERTAIN: Final[Schema] = {
    "type": "boolean",
    "description": "ViewSchema 1.5.0 (acceptSchemaVersions): whether the verdict is sure. A "
    "refusal always is; an enabled action is not when its effect may still refuse in code "
    "nothing declared (plugin_api.refuses), its entity has validators, or its declared rules "
    "depend on the request's inputs: a dry run tells then.",
}

_SCHEDULED: Final[Schema] = {
    "type": "array",
    "items": object_schema(
        {
            "timer": {"type": "string"},
            "action": {"type": "string"},
            "dueAt": {"type": "string", "format": "date-time"},
        },
        ["timer", "action", "dueAt"],
    ),
}

_SCHEDULE: Final[Schema] = object_schema(
    {"arm": _SCHEDULED, "cancel": _SCHEDULED}, ["arm", "cancel"]
)

_FORESEEN: Final[Schema] = {
    **_SCHEDULE,
    "description": "ViewSchema 1.5.0, the batch question only: on an enabled transition of a "
    "row of an entity with timers, the timers it would arm and the row's pending ones it would "
    "cancel if run now without inputs, as a dry run lists them (docs/timers.md).",
}

AVAILABILITY_SCHEMAS: Final[Mapping[str, Schema]] = {
    "Verdict": {
        "oneOf": [
            object_schema(
                {"enabled": {"const": True}, "certain": _CERTAIN, "timers": _FORESEEN},
                ["enabled"],
            ),
            object_schema(
                {
                    "enabled": {"const": False},
                    "kind": {
                        "type": "string",
                        "description": "The error kind the action would answer with "
                        "(PolicyDenied, WorkflowStateMismatch, NotFound, a kind a custom "
                        "policy raised, or the kind a declared requirement refuses with).",
                    },
                    "message": {"type": "string"},
                    "certain": _CERTAIN,
                },
                ["enabled", "kind", "message"],
            ),
        ]
    },
    "RowAvailability": {
        "type": "object",
        "description": "ViewSchema 1.2.0: for each row action the document lists (action FQN "
        "-> verdict), what the action would answer up to its workflow gate.",
        "additionalProperties": {"$ref": _REF + "Verdict"},
    },
    "AvailabilityQuestion": object_schema(
        {
            "subjects": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": MAX_SUBJECTS,
            },
            "actions": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": MAX_ACTIONS,
            },
        },
        ["subjects", "actions"],
    ),
    "AvailabilityAnswer": object_schema(
        {
            "ok": {"const": True},
            "availability": {
                "type": "object",
                "description": "Subject id -> action FQN -> verdict.",
                "additionalProperties": {"$ref": _REF + "RowAvailability"},
            },
        },
        ["ok", "availability"],
    ),
    "AuditRecord": object_schema(
        {
            "eventId": {"type": "string"},
            "tenantId": {"type": "string"},
            "actorId": {"type": "string"},
            "roles": {"type": "array", "items": {"type": "string"}},
            "action": {"type": "string"},
            "entity": {"type": "string"},
            "subjectId": {"type": "string"},
            "inputs": {"type": "object"},
            "outputs": {"type": "object"},
            "at": {"type": "string", "format": "date-time"},
        },
        [
            "eventId",
            "tenantId",
            "actorId",
            "roles",
            "action",
            "entity",
            "subjectId",
            "inputs",
            "outputs",
            "at",
        ],
    ),
}

DRY_RUN_PARAMETER: Final[Schema] = {
    "name": DRY_RUN,
    "in": "query",
    "required": False,
    "description": "`true`: run the whole action (and its transactional subscribers) in a "
    "transaction that is always rolled back and answer what it would have done (outputs, the "
    "row's changes, the audit record); no idempotency record, no event delivered. An action "
    "whose effect or transactional subscriber is not declared safe to dry-run: 422 "
    "DryRunUnsupported. Any other value than true or false: 400.",
    "schema": {"enum": ["true", "false"]},
}


def with_availability(row: Schema) -> Schema:
    """A projection's row schema that may also carry its 1.2.0 ``_availability``."""
    properties = {**row["properties"], AVAILABILITY_KEY: {"$ref": _REF + "RowAvailability"}}
    return {**row, "properties": properties}


def dry_run_success(outputs: Schema) -> Schema:
    """The answer of a dry run of an action whose outputs are ``outputs``."""
    return object_schema(
        {
            "ok": {"const": True},
            "dryRun": {"const": True},
            "outputs": outputs,
            "changes": {
                "type": "object",
                "description": "Every column the write would set (stamps and system fields "
                "included), in read shape.",
            },
            "audit": {"$ref": _REF + "AuditRecord"},
            "subscribers": {
                "type": "object",
                "description": "Each transactional subscriber run in the transaction: "
                "`delivered`, `failed: ...` or `not run: ...`.",
                "additionalProperties": {"type": "string"},
            },
            "timers": {
                **_SCHEDULE,
                "description": "ViewSchema 1.5.0 only (acceptSchemaVersions): the timers the "
                "write would arm, and the row's pending ones it would cancel (docs/timers.md).",
            },
        },
        ["ok", "dryRun", "outputs", "changes", "audit", "subscribers"],
    )


DRY_RUN_VERSIONS: Final[Schema] = {
    "name": "acceptSchemaVersions",
    "in": "query",
    "required": False,
    "description": "With `dryRun=true`, 1.5.0: the answer carries `timers`, what the write "
    "would schedule; otherwise as before.",
    "schema": {"type": "string"},
}


_VERSIONS: Final[Schema] = {
    "name": "acceptSchemaVersions",
    "in": "query",
    "required": False,
    "description": "1.5.0: each verdict carries `certain`, and an enabled transition of a row "
    "of an entity with timers `timers`, what it would schedule; otherwise as before.",
    "schema": {"type": "string"},
}


def availability_operation(
    identity: list[Schema],
    responses: Callable[[Mapping[int, set[str]]], dict[str, Any]],
    json_response: Callable[[str, Schema], dict[str, Any]],
) -> dict[str, Any]:
    """``POST /availability``."""
    kinds = {
        400: {e.BadRequest.kind},
        404: {e.UnknownAction.kind},
        413: {e.BadRequest.kind},
        415: {e.BadRequest.kind},
        500: {e.InternalError.kind},
    }
    return {
        "operationId": "availability",
        "summary": "Which of these actions may the actor run on these rows, and why not",
        "description": f"At most {MAX_SUBJECTS} subjects (row ids of the actions' entity) and "
        f"{MAX_ACTIONS} actions (all taking a subject, all of one entity); past either cap "
        "400. Each verdict is computed by the action's own checks: role, subject (unknown: "
        "NotFound), custom policies, workflow gate, declared requirements.",
        "tags": ["service"],
        "parameters": [*identity, _VERSIONS],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": _REF + "AvailabilityQuestion"}}},
        },
        "responses": {
            "200": json_response("The table", {"$ref": _REF + "AvailabilityAnswer"}),
            **responses(kinds),
        },
    }
