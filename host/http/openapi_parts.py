"""The shared parts of the OpenAPI document (:mod:`host.http.openapi`): references, the
response and error-response shapes, the headers on every response, the query parameters and
the component schemas every document holds. The endpoints' descriptions are built from
them (:mod:`host.http.openapi_projections`, :mod:`host.http.openapi_actions`,
:mod:`host.http.routes`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from host.fieldtypes import FIELD_TYPES
from host.http.cors import (
    CORS_HEADERS,
    OPTIONAL_HEADERS,
    SECURITY_HEADERS,
    TOKEN_SECURITY_HEADERS,
)
from host.http.jsonschema import Schema, object_schema
from host.http.openapi_availability import DRY_RUN_PARAMETER, DRY_RUN_VERSIONS
from host.http.viewschema import LOCALE, SCHEMA_VERSION, TARGET_PROFILE
from host.query.params import SCHEMA_1_1, SCHEMA_1_2, SCHEMA_1_3, SCHEMA_1_4, SCHEMA_1_5
from host.systemfields import SYSTEM
from plugin_api.definitions import FieldType
from plugin_api.errors import (
    ALL_ERRORS,
    IdempotencyKeyReused,
    ServiceUnavailable,
    TesseraError,
)

__all__ = [
    "HEADERS",
    "IDENTITY_HEADERS",
    "OPENAPI_VERSION",
    "OPERATOR_TEXT",
    "PARAMETERS",
    "REF",
    "RESPONSE_HEADERS",
    "SHARED_SCHEMAS",
    "STATUS_TEXT",
    "error_kinds",
    "error_responses",
    "header_name",
    "json_answer",
    "preflight",
    "query_parameter",
    "ref",
    "response_headers",
]

OPENAPI_VERSION: Final = "3.1.0"
REF: Final = "#/components"
IDENTITY_HEADERS: Final = ("X-Tenant-ID", "X-Actor-Id", "X-Actor-Roles")
STATUS_TEXT: Final[Mapping[int, str]] = {
    200: "Success",
    204: "CORS preflight",
    400: "Bad request",
    401: "Unauthenticated",
    403: "Forbidden",
    404: "Not found",
    409: "Conflict",
    413: "Request body too large",
    415: "Content-Type not a JSON media type (the response's Accept header names one)",
    422: "Idempotency-Key already used for another action or body, or a dry run through an "
    "effect not declared safe to dry-run",
    500: "Server error",
    503: "Service unavailable",
}


def ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": f"{REF}/{kind}/{name}"}


# -- responses ---------------------------------------------------------------------------------


def header_name(raw: bytes) -> str:
    """``access-control-max-age`` -> ``Access-Control-Max-Age``."""
    return "-".join(part.capitalize() for part in raw.decode().split("-"))


RESPONSE_HEADERS: Final = (
    *(header_name(name) for name, _ in (*CORS_HEADERS, *SECURITY_HEADERS)),
    "X-Request-Id",
)
"""Headers on every response: CORS, security, and the request id."""


def response_headers() -> dict[str, Any]:
    return {name: ref("headers", name) for name in RESPONSE_HEADERS}


def json_answer(description: str, schema: Schema) -> dict[str, Any]:
    return {
        "description": description,
        "headers": response_headers(),
        "content": {"application/json": {"schema": schema}},
    }


def error_responses(kinds: Mapping[int, set[str]]) -> dict[str, Any]:
    """One response per status, its ``error.kind`` limited to the kinds listed."""
    responses: dict[str, Any] = {}
    for status in sorted(kinds):
        listed = sorted(kinds[status])
        envelope = {
            "allOf": [
                ref("schemas", "ErrorEnvelope"),
                {"properties": {"error": {"properties": {"kind": {"enum": listed}}}}},
            ]
        }
        responses[str(status)] = json_answer(
            f"{STATUS_TEXT[status]}: error kind {', '.join(listed)}", envelope
        )
    return responses


def error_kinds(*errors: type[TesseraError]) -> dict[int, set[str]]:
    kinds: dict[int, set[str]] = {}
    for error in errors:
        kinds.setdefault(error.status, set()).add(error.kind)
    return kinds


OPERATOR_TEXT: Final[Mapping[str, str]] = {
    "eq": "equals the value",
    "ne": "differs from the value (null included)",
    "in": "is one of the comma-separated values",
    "lt": "is less than the value",
    "lte": "is at most the value",
    "gt": "is greater than the value",
    "gte": "is at least the value",
    "contains": "contains the text (case-insensitive for ASCII letters)",
    "null": "is null (`true`) or is not (`false`)",
}


def query_parameter(name: str, description: str, schema: Schema) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


def preflight() -> dict[str, Any]:
    return {
        "summary": "CORS preflight",
        "description": "Answered 204 on any path, with the CORS headers.",
        "responses": {"204": {"description": STATUS_TEXT[204], "headers": response_headers()}},
    }


# -- shared components -------------------------------------------------------------------------

_SYSTEM_VIEW_TYPES: Final = sorted({field.view_type for field in SYSTEM.values()})

_FIELD_DESCRIPTOR: Final[Schema] = object_schema(
    {
        "name": {"type": "string"},
        "type": {
            "enum": [*(t.value for t in FieldType), *sorted({f.view_type for f in SYSTEM.values()})]
        },
        "label": {"type": "string"},
        "typeOptions": object_schema(
            {
                key: schema
                for value_type in FIELD_TYPES.values()
                for key, schema in value_type.type_option_schemas.items()
            },
            [],
        ),
        "required": {"type": "boolean"},
        "nullable": {"type": "boolean"},
        "default": {},
        "readOnly": {"const": True, "description": "At 1.4.0: a followed field."},
        "follows": object_schema(
            {
                "reference": {"type": "string"},
                "entity": {"type": "string"},
                "field": {"type": "string"},
            },
            ["reference", "entity", "field"],
        ),
        "display": {
            "type": "string",
            "description": "At 1.4.0, on a reference: the target's display field; the row's "
            "text is in its `_display`.",
        },
    },
    ["name", "type", "label"],
)

SHARED_SCHEMAS: Final[Mapping[str, Schema]] = {
    "ErrorEnvelope": object_schema(
        {
            "ok": {"const": False},
            "error": object_schema(
                {
                    "kind": {
                        "enum": [
                            *(e.kind for e in ALL_ERRORS),
                            IdempotencyKeyReused.kind,
                            ServiceUnavailable.kind,
                        ]
                    },
                    "message": {"type": "string"},
                },
                ["kind", "message"],
            ),
        },
        ["ok", "error"],
    ),
    "Health": object_schema(
        {
            "ok": {"const": True},
            "service": {"type": "string"},
            "graphHash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        },
        ["ok", "service", "graphHash"],
    ),
    "Ready": object_schema(
        {
            "ok": {"const": True},
            "service": {"type": "string"},
            "graphHash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "database": {"enum": ["sqlite", "postgresql"]},
        },
        ["ok", "service", "graphHash", "database"],
    ),
    "SubjectReference": object_schema(
        {
            "tenantId": {
                "type": "string",
                "description": "Must equal X-Tenant-ID, otherwise 403 TenantBoundaryViolation.",
            },
            "entityFqn": {"type": "string", "description": "Defaults to the action's entity."},
            "identityHandle": {
                "type": "string",
                "minLength": 1,
                "description": "The row's id (a ULID); an unknown id is 404 NotFound.",
            },
        },
        ["tenantId", "identityHandle"],
        closed=False,
    ),
    "FieldDescriptor": _FIELD_DESCRIPTOR,
    "ActionDescriptor": object_schema(
        {
            "fqn": {"type": "string"},
            "name": {"type": "string"},
            "label": {"type": "string"},
            "subjectRequired": {"type": "boolean"},
            "inputs": {"type": "array", "items": ref("schemas", "FieldDescriptor")},
            "initialValues": {"type": "object"},
        },
        ["fqn", "name", "label", "subjectRequired", "inputs"],
    ),
    "HistoryPage": object_schema(
        {
            "ok": {"const": True},
            "projection": {"type": "string"},
            "subject": {"type": "string"},
            "data": object_schema(
                {
                    "items": {"type": "array", "items": {"$ref": f"{REF}/schemas/HistoryItem"}},
                    "pagination": object_schema(
                        {
                            "pageSize": {"type": "integer", "minimum": 1},
                            "nextCursor": {"type": ["string", "null"]},
                        },
                        ["pageSize", "nextCursor"],
                    ),
                },
                ["items", "pagination"],
            ),
        },
        ["ok", "projection", "subject", "data"],
    ),
    "HistoryItem": object_schema(
        {
            "eventId": {"type": "string"},
            "action": {"type": "string"},
            "actor": object_schema(
                {"id": {"type": "string"}, "roles": {"type": "array", "items": {"type": "string"}}},
                ["id", "roles"],
            ),
            "at": {"type": "string", "format": "date-time"},
            "versionBefore": {"type": ["string", "null"]},
            "versionAfter": {"type": ["string", "null"]},
            "changes": {
                "type": ["object", "null"],
                "additionalProperties": object_schema(
                    {"before": {}, "after": {}}, ["before", "after"]
                ),
            },
        },
        ["eventId", "action", "actor", "at", "versionBefore", "versionAfter", "changes"],
    ),
    "Pagination": object_schema(
        {
            "pageSize": {"type": "integer", "minimum": 0},
            "nextCursor": {"type": ["string", "null"]},
            "maxPageSize": {"type": "integer", "minimum": 1},
        },
        ["pageSize", "nextCursor"],
    ),
    "FilterDescriptor": object_schema(
        {
            "field": {"type": "string"},
            "label": {"type": "string"},
            "type": {"type": "string"},
            "operators": {"type": "array", "items": {"enum": list(OPERATOR_TEXT)}},
            "options": {"type": "array", "items": {"type": "string"}},
        },
        ["field", "label", "type", "operators"],
    ),
    "WorkflowDescriptor": object_schema(
        {
            "field": {"type": "string"},
            "initial": {"type": "string"},
            "states": {
                "type": "array",
                "items": object_schema(
                    {
                        "name": {"type": "string"},
                        "label": {"type": "string"},
                        "final": {"type": "boolean"},
                    },
                    ["name", "label", "final"],
                ),
            },
            "transitions": {
                "type": "array",
                "items": object_schema(
                    {
                        "name": {"type": "string"},
                        "from": {"type": "array", "items": {"type": "string"}},
                        "to": {"type": "string"},
                        "actions": {"type": "array", "items": {"type": "string"}},
                    },
                    ["name", "from", "to", "actions"],
                ),
            },
        },
        ["field", "initial", "states", "transitions"],
    ),
    "ViewSchema": object_schema(
        {
            "schemaVersion": {
                "enum": [SCHEMA_VERSION, SCHEMA_1_1, SCHEMA_1_2, SCHEMA_1_3, SCHEMA_1_4, SCHEMA_1_5]
            },
            "targetProfile": {"const": TARGET_PROFILE},
            "metadata": object_schema(
                {
                    "projection": {"type": "string"},
                    "entity": {"type": "string"},
                    "tenant": {"type": "string"},
                    "locale": {"const": LOCALE},
                    "generatedAt": {"type": "string", "format": "date-time"},
                },
                ["projection", "entity", "tenant", "locale", "generatedAt"],
            ),
            "fields": {"type": "array", "items": ref("schemas", "FieldDescriptor")},
            "actions": {"type": "array", "items": ref("schemas", "ActionDescriptor")},
            "filters": {
                "type": "array",
                "items": ref("schemas", "FilterDescriptor"),
                "description": "Always [] at 1.0.0; the declared filters at 1.1.0.",
            },
            "sort": object_schema(
                {
                    "fields": {"type": "array", "items": {"type": "string"}},
                    "default": {"type": "array", "items": {"type": "string"}},
                    "active": {"type": "array", "items": {"type": "string"}},
                },
                ["fields", "default", "active"],
            ),
            "search": object_schema(
                {
                    "fields": {"type": "array", "items": {"type": "string"}},
                    "active": {"type": ["string", "null"]},
                },
                ["fields", "active"],
            ),
            "workflow": {
                "anyOf": [ref("schemas", "WorkflowDescriptor"), {"type": "null"}],
                "description": f"At {SCHEMA_1_3}: the entity's workflow (null without one).",
            },
            "labels": object_schema(
                {
                    "plugin": {"type": "string"},
                    "entity": {"type": "string"},
                    "projection": {"type": "string"},
                    "displayField": {"type": ["string", "null"]},
                },
                ["plugin", "entity", "projection", "displayField"],
            )
            | {"description": f"At {SCHEMA_1_5}: the words a person reads (plugin API 1.10)."},
            "data": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        },
        ["schemaVersion", "targetProfile", "metadata", "fields", "actions", "filters", "data"],
    ),
}

PARAMETERS: Final[Mapping[str, Any]] = {
    "X-Tenant-ID": {
        "name": "X-Tenant-ID",
        "in": "header",
        "required": True,
        "description": "The active tenant (set by the gateway). Missing, blank, sent more "
        "than once, over 255 bytes of UTF-8 or holding NUL: 400.",
        "schema": {"type": "string", "pattern": "[^ \t]", "maxLength": 255},
    },
    "X-Actor-Id": {
        "name": "X-Actor-Id",
        "in": "header",
        "required": False,
        "description": "The acting actor; `anon` when absent (with TESSERA_REQUIRE_ACTOR_ID, "
        "an action without one is 403 PolicyDenied). Sent more than once, over 255 bytes of "
        "UTF-8 or holding NUL: 400.",
        "schema": {"type": "string", "maxLength": 255},
    },
    "X-Actor-Roles": {
        "name": "X-Actor-Roles",
        "in": "header",
        "required": False,
        "description": "Comma-separated role names (1 to 64 of A-Z a-z 0-9 _ . : @ / -), "
        "spaces and tabs around each trimmed, empty entries dropped, anything else 400; none "
        "means a roleless actor (403 PolicyDenied on every action requiring a role). Sent "
        "more than once: 400.",
        "schema": {"type": "string"},
    },
    "Idempotency-Key": {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "Makes a retry safe: the same key with the same action and body within "
        "the retention window (TESSERA_IDEMPOTENCY_RETENTION_S) answers the first success "
        "again, with `Idempotent-Replayed: true`, and runs nothing; with another action or "
        "body it is 422 IdempotencyKeyReused. Scoped by tenant and actor; 1 to 255 visible "
        "ASCII characters, else 400.",
        "schema": {"type": "string", "pattern": "^[\\x21-\\x7e]{1,255}$"},
    },
    "dryRun": DRY_RUN_PARAMETER,
    "dryRunSchemaVersions": DRY_RUN_VERSIONS,
    "Last-Event-ID": {
        "name": "Last-Event-ID",
        "in": "header",
        "required": False,
        "description": "Resume a live stream after this event id (an audit position): every "
        "missed change follows in commit order, or a `reset` event. Sent more than once: 400.",
        "schema": {"type": "string"},
    },
    "subject": {
        "name": "subject",
        "in": "query",
        "required": False,
        "description": "A row's id: renders the detail shape (`item`, null when unknown).",
        "schema": {"type": "string"},
    },
    **{
        name: {
            "name": name,
            "in": "query",
            "required": False,
            "description": f"Reserved; the output is always {value}.",
            "schema": {"type": "string"},
        }
        for name, value in (
            ("locale", LOCALE),
            ("renderer", TARGET_PROFILE),
        )
    },
    "acceptSchemaVersions": {
        "name": "acceptSchemaVersions",
        "in": "query",
        "required": False,
        "description": (
            f"Comma-separated ViewSchema versions, the newest listed wins: {SCHEMA_1_2} (all "
            f"of {SCHEMA_1_1} and each row's `_availability` for the actor of X-Actor-Id and "
            f"X-Actor-Roles, read as for actions), {SCHEMA_1_1} (adds `filters` "
            f"descriptors, `sort`, `search` and `pagination.maxPageSize`, and a projection's "
            f"default page size; docs/http.md); {SCHEMA_1_3} (all of {SCHEMA_1_2} and the "
            f"entity's `workflow`, docs/console.md); {SCHEMA_1_4} (all of {SCHEMA_1_3}, "
            f"followed fields' `readOnly` and `follows`, references' `display` and each row's "
            f"`_display`, docs/http.md); {SCHEMA_1_5} (all of {SCHEMA_1_4}, each "
            f"availability verdict's `certain`, and `labels`, actions labelled as declared, "
            f"docs/http.md); otherwise {SCHEMA_VERSION}, as in v0.1."
        ),
        "schema": {"type": "string"},
    },
}


def _allowed_headers() -> list[str]:
    """Every ``Access-Control-Allow-Headers`` value: the spec's, with any of the optional
    headers the request sends (in their order), and ``Authorization`` in token mode."""
    base = dict(CORS_HEADERS)[b"access-control-allow-headers"].decode()
    optional = [name.decode() for _, name in OPTIONAL_HEADERS]
    values = []
    for token in ([], ["Authorization"]):
        for mask in range(2 ** len(optional)):
            extra = [name for i, name in enumerate(optional) if mask >> i & 1]
            values.append(", ".join([base, *extra, *token]))
    return values


HEADERS: Final[Mapping[str, Any]] = {
    **{
        header_name(name): {
            "description": "CORS (on every response)",
            "schema": {"const": value.decode()},
        }
        for name, value in CORS_HEADERS
    },
    header_name(b"access-control-allow-headers"): {
        "description": "CORS (on every response); names Idempotency-Key and Last-Event-ID too "
        "when the request sends it (or its preflight names it), and Authorization in token "
        "mode",
        "schema": {"enum": _allowed_headers()},
    },
    "Idempotent-Replayed": {
        "description": "`true` on an answer replayed for a repeated Idempotency-Key",
        "schema": {"const": "true"},
    },
    **{
        header_name(name): {
            "description": "Security (on every response)"
            + ("; names Authorization too in token mode" if value != token else ""),
            "schema": {"const": value.decode()}
            if value == token
            else {"enum": [value.decode(), token.decode()]},
        }
        for (name, value), (_, token) in zip(SECURITY_HEADERS, TOKEN_SECURITY_HEADERS, strict=True)
    },
    "X-Request-Id": {
        "description": "The request's id (a ULID), as logged",
        "schema": {"type": "string"},
    },
}
