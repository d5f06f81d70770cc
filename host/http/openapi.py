"""The OpenAPI 3.1 document of a compiled graph: what the service really does, per operation.

Every projection and every action is an operation of its own (path ``/projections/<fqn>``,
``/actions/<fqn>``), described from the definitions: the action's inputs as JSON Schema, its
outputs, the subject, the identity headers, every status and error kind it can answer with
(spec part 7), the CORS headers, the list and detail shapes of the ViewSchema. The document is
a pure function of the graph and the prefix (no clock), with the graph hash in ``info``.

A projection's query parameters come from :func:`projection_parameters` alone, so adding a
parameter to list projections is one change there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from host import __version__
from host.fieldtypes import (
    DECIMAL_PATTERN,
    FIELD_TYPES,
    INT64_MAX,
    INT64_MIN,
    MONEY_TEXT_MAX_LENGTH,
)
from host.graph.follow import follow
from host.graph.model import CompiledAction, CompiledEntity, CompiledProjection, Graph
from host.graph.rules import stampable_fields
from host.http.cors import ALLOW_HEADERS_WITH_KEY, CORS_HEADERS, SECURITY_HEADERS
from host.http.jsonschema import Schema, column_schema, nullable, object_schema, write_schema
from host.http.openapi_availability import (
    AVAILABILITY_SCHEMAS,
    DRY_RUN_PARAMETER,
    availability_operation,
    dry_run_success,
    with_availability,
)
from host.http.viewschema import LOCALE, SCHEMA_VERSION, TARGET_PROFILE
from host.query.params import IN_MAX_VALUES, SCHEMA_1_1, SCHEMA_1_2, SCHEMA_1_3, SCHEMA_1_4
from host.query.spec import Column, list_spec
from host.storage.reads import DISPLAY_KEY, displays
from host.systemfields import SYSTEM
from plugin_api import errors as e
from plugin_api.access import ReadAccess
from plugin_api.definitions import CreateAction, FieldType, TransitionAction, UpdateAction
from plugin_api.errors import (
    ALL_ERRORS,
    BadRequest,
    IdempotencyKeyReused,
    InternalError,
    ServiceUnavailable,
    TesseraError,
    UnsupportedMediaType,
)

__all__ = ["action_errors", "build_openapi", "inputs_schema", "openapi_text",
           "projection_parameters"]  # fmt: skip

OPENAPI_VERSION: Final = "3.1.0"
REF: Final = "#/components"
IDENTITY_HEADERS: Final = ("X-Tenant-ID", "X-Actor-Id", "X-Actor-Roles")
STATUS_TEXT: Final[Mapping[int, str]] = {
    200: "Success",
    204: "CORS preflight",
    400: "Bad request",
    403: "Forbidden",
    404: "Not found",
    409: "Conflict",
    413: "Request body too large",
    415: "Content-Type not a JSON media type (the response's Accept header names one)",
    422: "Idempotency-Key already used for another action or body, or a dry run through an "
    "effect not declared safe to dry-run",
    500: "Server error",
}


def _ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": f"{REF}/{kind}/{name}"}


def _kinds(status: int) -> list[str]:
    return [error.kind for error in ALL_ERRORS if error.status == status]


# -- responses ---------------------------------------------------------------------------------


def _header_name(raw: bytes) -> str:
    """``access-control-max-age`` -> ``Access-Control-Max-Age``."""
    return "-".join(part.capitalize() for part in raw.decode().split("-"))


RESPONSE_HEADERS: Final = (
    *(_header_name(name) for name, _ in (*CORS_HEADERS, *SECURITY_HEADERS)),
    "X-Request-Id",
)
"""Headers on every response: CORS, security, and the request id."""


def _headers() -> dict[str, Any]:
    return {name: _ref("headers", name) for name in RESPONSE_HEADERS}


def _json_response(description: str, schema: Schema) -> dict[str, Any]:
    return {
        "description": description,
        "headers": _headers(),
        "content": {"application/json": {"schema": schema}},
    }


def _error_responses(kinds: Mapping[int, set[str]]) -> dict[str, Any]:
    """One response per status, its ``error.kind`` limited to the kinds listed."""
    responses: dict[str, Any] = {}
    for status in sorted(kinds):
        listed = sorted(kinds[status])
        envelope = {
            "allOf": [
                _ref("schemas", "ErrorEnvelope"),
                {"properties": {"error": {"properties": {"kind": {"enum": listed}}}}},
            ]
        }
        responses[str(status)] = _json_response(
            f"{STATUS_TEXT[status]}: error kind {', '.join(listed)}", envelope
        )
    return responses


def _error_kinds(*errors: type[TesseraError]) -> dict[int, set[str]]:
    kinds: dict[int, set[str]] = {}
    for error in errors:
        kinds.setdefault(error.status, set()).add(error.kind)
    return kinds


# -- parameters --------------------------------------------------------------------------------


def projection_parameters(projection: CompiledProjection) -> list[dict[str, Any]]:
    """The query parameters of a projection's GET (spec part 4 and the list parameters of
    docs/http.md "Lists"), in a stable order."""
    spec = list_spec(projection)
    parameters: list[dict[str, Any]] = [
        _ref("parameters", "subject"),
        _ref("parameters", "locale"),
        _ref("parameters", "renderer"),
        _ref("parameters", "acceptSchemaVersions"),
        _query(
            "pageSize",
            f"List renders: rows per page, 1 to {spec.max_page_size}; with it the list is a "
            "page whose `pagination.nextCursor` leads to the next one. Out of range: 400.",
            {"type": "integer", "minimum": 1, "maximum": spec.max_page_size},
        ),
        _query(
            "cursor",
            "List renders: the `pagination.nextCursor` of the previous page, sent with the "
            "same filters, sort and q. Altered or from another request: 400.",
            {"type": "string"},
        ),
        _query(
            "asOf",
            "Detail renders: the row as it was at this `_version` of it, or after its last "
            "write at or before this RFC 3339 instant (docs/history.md). A version of another "
            "row, an instant before its creation or anything else: 400. Ignored by lists.",
            {"type": "string"},
        ),
    ]
    if spec.sortable:
        keys = ", ".join(spec.sortable)
        parameters.append(
            _query(
                "sort",
                f"List renders: comma-separated sort keys over {keys}, `-` for descending; "
                "`id` is always the final tie-breaker. Anything else: 400.",
                {"type": "string"},
            )
        )
    if spec.search:
        fields = ", ".join(column.name for column in spec.search)
        parameters.append(
            _query(
                "q",
                f"List renders: Unicode case-insensitive substring over {fields} (NFKC + "
                "case folding of both sides, served by a trigram index; docs/lists-search.md).",
                {"type": "string"},
            )
        )
    parameters.append(
        _query(
            "count",
            "List renders: `true` adds `data.count` = `{value, exact}`, the rows matching the "
            "filters, search and row scope; beyond TESSERA_LIST_COUNT_LIMIT rows `value` is a "
            "lower bound and `exact` false.",
            {"type": "string", "enum": ["true", "false"]},
        )
    )
    if spec.facetable:
        parameters.append(
            _query(
                "facet",
                "List renders (repeatable): adds `data.facets.<facet>` = `{exact, values: "
                "[{value, count}]}`, the matching rows per value (`<field>`) or per UTC year, "
                "month or day (`<datetime field>.year|month|day`, each value the bucket's "
                "first instant), bounded as `count`.",
                {"type": "string", "enum": list(spec.facetable)},
            )
        )
    parameters.append(
        _query(
            "format",
            "List renders: every matching row as a file, streamed: `csv` (text/csv, formula "
            "cells prefixed with ') or `ndjson` (application/x-ndjson, one JSON row per line). "
            "Not with pageSize or cursor (400).",
            {"type": "string", "enum": ["csv", "ndjson"]},
        )
    )
    for name, declared in spec.filters.items():
        for operator in declared.operators:
            parameters.append(
                _query(
                    f"filter.{name}.{operator}",
                    f"List renders: rows whose {name} {_OPERATOR_TEXT[operator]} (written as "
                    "in action inputs). A value that does not fit the field: 400.",
                    filter_value_schema(declared.column, operator),
                )
            )
        if "eq" in declared.operators:
            parameters.append(
                _query(
                    f"filter.{name}",
                    f"The same as `filter.{name}.eq`.",
                    filter_value_schema(declared.column, "eq"),
                )
            )
    return parameters


_BOOLEAN_TEXT: Final[Schema] = {"type": "string", "enum": ["true", "false"]}
_DATETIME_TEXT: Final = (
    "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    "(\\.[0-9]{1,6})?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])"
)
_IN_ELEMENTS: Final[Mapping[str, str]] = {
    "integer": "-?[0-9]{1,18}",
    "boolean": "(true|false)",
    "money": "-?[0-9]{1,30}(\\.[0-9]{1,30})?",
    "datetime": _DATETIME_TEXT,
    "timestamp": _DATETIME_TEXT,
}
"""One value of an ``in`` list, as a pattern (every date it matches exists)."""


def filter_value_schema(column: Column, operator: str) -> Schema:
    """The schema of a ``filter.<field>.<operator>`` value: the field's type as query text
    (``in`` takes comma-separated values, ``contains`` any text, ``null`` true or false)."""
    name = column.type.name
    if operator == "null" or (name == "boolean" and operator != "in"):
        return dict(_BOOLEAN_TEXT)
    if operator == "contains":
        return {"type": "string"}
    if operator == "in":
        element = _IN_ELEMENTS.get(name)
        if name == "enum":
            element = "(" + "|".join(re.escape(o) for o in column.field.options) + ")"
        if element is None:
            return {"type": "string"}
        return {"type": "string", "pattern": f"^{element}(,{element}){{0,{IN_MAX_VALUES - 1}}}$"}
    if name == "integer":
        return {"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX}
    if name == "enum":
        return {"type": "string", "enum": list(column.field.options)}
    if name in ("datetime", "timestamp"):
        return {"type": "string", "format": "date-time"}
    if name == "money":
        return {"type": "string", "pattern": DECIMAL_PATTERN, "maxLength": MONEY_TEXT_MAX_LENGTH}
    return {"type": "string"}


_OPERATOR_TEXT: Final[Mapping[str, str]] = {
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


def _query(name: str, description: str, schema: Schema) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


# -- projections -------------------------------------------------------------------------------


def row_schema(projection: CompiledProjection) -> Schema:
    """A row of the projection: exactly its fields, in read shapes (and at ViewSchema 1.2.0
    its ``_availability``)."""
    entity = projection.entity
    names = list(projection.definition.fields)
    properties = {name: _column_schema(entity, name) for name in names}
    texts = displays(projection)
    if texts:
        properties[DISPLAY_KEY] = {
            **object_schema({ref: {"type": ["string", "null"]} for ref in texts}, list(texts)),
            "description": f"At {SCHEMA_1_4}: the display text of each reference's row.",
        }
    return with_availability(object_schema(properties, names))


def _column_schema(entity: CompiledEntity, name: str) -> Schema:
    """A declared, system or followed field's read shape (a followed one may be null)."""
    followed = follow(entity, name)
    if followed is None:
        return column_schema(entity.fields, name)
    schema = column_schema(followed[1].fields, followed[2])
    return nullable(schema) if followed[2] in SYSTEM else schema


_COUNT: Final[Schema] = {
    "type": "object",
    "description": "Only with count=true (docs/lists-search.md).",
    "properties": {"value": {"type": "integer"}, "exact": {"type": "boolean"}},
    "required": ["value", "exact"],
}
_FACET: Final[Schema] = {
    "type": "object",
    "description": "Only with facet=<facet>: matching rows per value or date bucket, null last.",
    "properties": {
        "exact": {"type": "boolean"},
        "values": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"value": {}, "count": {"type": "integer"}},
                "required": ["value", "count"],
            },
        },
    },
    "required": ["exact", "values"],
}


def view_schema(projection: CompiledProjection, row: Schema) -> Schema:
    """The ViewSchema document of a projection, with ``data`` in list or detail shape."""
    data = {
        "oneOf": [
            object_schema(
                {
                    "items": {"type": "array", "items": row},
                    "pagination": _ref("schemas", "Pagination"),
                    "count": _COUNT,
                    "facets": {"type": "object", "additionalProperties": _FACET},
                },
                ["items", "pagination"],
            ),
            object_schema({"item": nullable(row)}, ["item"]),
        ]
    }
    return {
        "allOf": [
            _ref("schemas", "ViewSchema"),
            {
                "properties": {
                    "metadata": {
                        "properties": {
                            "projection": {"const": projection.fqn},
                            "entity": {"const": projection.entity.fqn},
                        }
                    },
                    "data": data,
                }
            },
        ]
    }


def projection_operation(projection: CompiledProjection) -> dict[str, Any]:
    """``GET /projections/<fqn>``."""
    entity = projection.entity.fqn
    ok = _json_response(
        "The ViewSchema: the list shape without `subject`, the detail shape with it "
        "(`item` is null for an unknown subject); with `format`, the list as a file.",
        view_schema(projection, _ref("schemas", f"{projection.fqn}.Row")),
    )
    ok["content"]["text/csv"] = {"schema": {"type": "string"}}
    ok["content"]["application/x-ndjson"] = {"schema": {"type": "string"}}
    responses = {"200": ok}
    floor, access = projection.entity.definition.access, projection.definition.access
    if access is None and floor is None:
        responses.update(_error_responses(_error_kinds(BadRequest, InternalError)))
        description = f"Rows of {entity} of the tenant. No policy applies to projections."
        identity = [_ref("parameters", "X-Tenant-ID")]
    else:
        errors = _error_kinds(BadRequest, InternalError, e.PolicyDenied)
        responses.update(_error_responses(errors))
        rules = " ".join(_access_text(a) for a in (floor, access) if a is not None)
        description = f"Rows of {entity} of the tenant the reader may see. " + rules
        identity = [_ref("parameters", name) for name in IDENTITY_HEADERS]
    return {
        "operationId": f"render.{projection.fqn}",
        "summary": f"Render projection {projection.fqn}",
        "description": description,
        "tags": [entity],
        "parameters": [*identity, *projection_parameters(projection)],
        "responses": responses,
    }


def history_operation(projection: CompiledProjection) -> dict[str, Any]:
    """``GET /projections/<fqn>/history``: a row's audit records (docs/history.md)."""
    entity = projection.entity.fqn
    kinds = _error_kinds(BadRequest, InternalError, e.NotFound)
    identity = [_ref("parameters", "X-Tenant-ID")]
    if projection.definition.access is not None or projection.entity.definition.access is not None:
        kinds = _error_kinds(BadRequest, InternalError, e.NotFound, e.PolicyDenied)
        identity = [_ref("parameters", name) for name in IDENTITY_HEADERS]
    return {
        "operationId": f"history.{projection.fqn}",
        "summary": f"History of a row of {entity} through {projection.fqn}",
        "description": "Every write of the row, newest first, paged by cursor: action, actor, "
        "time, `_version` before and after, and the changed fields this projection shows "
        "with their values before and after (`changes` is null on records written before "
        "Tessera kept them). Under the projection's read access: a row the reader may not "
        "see is a 404 NotFound, as an unknown one.",
        "tags": [entity],
        "parameters": [
            *identity,
            {
                "name": "subject",
                "in": "query",
                "required": True,
                "description": "The row's id.",
                "schema": {"type": "string"},
            },
            _query("pageSize", "Records per page, 1 to 500 (default 50).", {"type": "integer"}),
            _query(
                "cursor", "The `pagination.nextCursor` of the previous page.", {"type": "string"}
            ),
        ],
        "responses": {
            "200": _json_response("A page of the row's history", _ref("schemas", "HistoryPage")),
            **_error_responses(kinds),
        },
    }


def _access_text(access: ReadAccess) -> str:
    """The read access rules of a projection, for its operation's description."""
    parts = []
    if access.roles:
        parts.append(
            f"Requires one of the roles {', '.join(access.roles)} (otherwise 403 PolicyDenied, "
            "nothing read)."
        )
    if access.scope is not None:
        exempt = ", ".join(access.scope.exempt) or "none"
        parts.append(
            f"Only rows whose {access.scope.field} equals X-Actor-Id (exempt roles: {exempt}); "
            "a detail out of scope has a null item."
        )
    if access.policies:
        parts.append(
            f"Read policies {', '.join(access.policies)} may refuse (403 PolicyDenied) or "
            "restrict the rows."
        )
    return " ".join(parts)


# -- actions -----------------------------------------------------------------------------------


def inputs_schema(action: CompiledAction) -> Schema:
    """The ``inputs`` object an action accepts (absent or null means ``{}``)."""
    fields = action.entity.fields
    definition = action.definition
    if isinstance(definition, TransitionAction):
        names = stampable_fields(action)
        schema = object_schema({n: write_schema(fields[n]) for n in names}, [], closed=False)
        schema["description"] = (
            "Keys naming a stampable field are validated and written; any other key is "
            "accepted and kept only in the audit record."
        )
        return nullable(schema)
    filled = set()
    if isinstance(definition, CreateAction):
        filled = {stamp.field for stamp in definition.stamps}
        if action.entity.workflow is not None:
            filled.add(action.entity.workflow.state_field)
    required = [
        field.name
        for field in action.input_fields
        if isinstance(definition, CreateAction) and field.required and field.name not in filled
    ]
    properties = {field.name: write_schema(field) for field in action.input_fields}
    schema = object_schema(properties, required)
    schema["description"] = (
        "Partial patch: only the keys sent change; any other key is refused (400)."
        if isinstance(definition, UpdateAction)
        else "The new row's values; any other key is refused (400)."
    )
    return schema if required else nullable(schema)


def request_schema(action: CompiledAction) -> Schema:
    """The request body of ``POST /actions/<fqn>``."""
    if action.kind == "create":
        subject: Schema = {"type": "null", "description": "Ignored by create actions."}
        required: list[str] = []
    else:
        subject = {
            "allOf": [
                _ref("schemas", "SubjectReference"),
                {"properties": {"entityFqn": {"const": action.entity.fqn}}},
            ]
        }
        required = ["subject"]
    inputs = inputs_schema(action)
    schema = object_schema({"subject": subject, "inputs": inputs}, required, closed=False)
    if "required" in inputs or "required" in inputs.get("anyOf", [{}])[0]:
        schema["required"] = [*required, "inputs"]
    return schema


def output_fields(action: CompiledAction) -> tuple[list[str], list[str]]:
    """The field names an action's outputs may hold, and those they always hold."""
    entity = action.entity
    definition = action.definition
    state = [entity.workflow.state_field] if entity.workflow is not None else []
    if definition.effect is not None:
        possible = list(entity.fields)
    elif isinstance(definition, CreateAction):
        possible = [*definition.inputs, *state]
    elif isinstance(definition, UpdateAction):
        possible = list(definition.patchable)
    else:
        assert action.transition is not None
        stamped = [stamp.field for stamp in action.transition.stamps]
        possible = [*state, *stamped, *stampable_fields(action)]
    if isinstance(definition, CreateAction):
        return ["id", *_unique(possible)], ["id", *state]
    always = ["_version"]
    if isinstance(definition, TransitionAction) and action.transition is not None:
        always = [*state, *(stamp.field for stamp in action.transition.stamps), "_version"]
    return [*_unique(possible), "_version"], _unique(always)


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def outputs_schema(action: CompiledAction) -> Schema:
    fields = action.entity.fields
    possible, always = output_fields(action)
    return object_schema({name: column_schema(fields, name) for name in possible}, always)


def action_errors(action: CompiledAction) -> dict[int, set[str]]:
    """Every status and error kind ``POST /actions/<fqn>`` can answer with (spec part 7)."""
    definition = action.definition
    found: list[type[TesseraError]] = [
        e.BadRequest,
        e.ConcurrencyConflict,
        e.AuditEmissionFailed,
        e.InternalError,
    ]
    if definition.roles or definition.policies:
        found.append(e.PolicyDenied)
    if action.kind != "create":
        found += [e.PolicySubjectRequired, e.TenantBoundaryViolation, e.NotFound]
    if action.kind == "transition":
        found.append(e.WorkflowStateMismatch)
    if definition.effect is not None:
        found.append(e.EffectFailed)
    kinds = _error_kinds(*found)
    if definition.policies or definition.effect is not None:
        # A custom handler may raise any error of the taxonomy (plugin_api.errors).
        for status, extra in _error_kinds(*ALL_ERRORS).items():
            kinds.setdefault(status, set()).update(extra)
    kinds.setdefault(413, set()).add("BadRequest")
    kinds.setdefault(UnsupportedMediaType.status, set()).add(UnsupportedMediaType.kind)
    kinds.setdefault(IdempotencyKeyReused.status, set()).add(IdempotencyKeyReused.kind)
    if definition.effect is not None:  # a dry run through an effect not declared safe
        kinds.setdefault(e.DryRunUnsupported.status, set()).add(e.DryRunUnsupported.kind)
    return kinds


def _action_description(action: CompiledAction) -> str:
    definition = action.definition
    lines = [f"A {action.kind} action on {action.entity.fqn}."]
    if isinstance(definition, TransitionAction) and action.transition is not None:
        sources = ", ".join(action.transition.sources)
        lines.append(
            f"Transition `{definition.transition}`: {sources} -> {action.transition.target}."
        )
    roles = ", ".join(definition.roles)
    lines.append(f"Roles (any of): {roles}." if roles else "No role required.")
    if definition.policies:
        lines.append(f"Custom policies: {', '.join(definition.policies)}.")
    if definition.effect is not None:
        lines.append(f"Custom effect: {definition.effect}.")
    return " ".join(lines)


def action_operation(action: CompiledAction, links: Mapping[str, Any]) -> dict[str, Any]:
    """``POST /actions/<fqn>``."""
    outputs = outputs_schema(action)
    success = _json_response(
        "The action ran; `outputs` as in spec 2.9. With `dryRun=true`: what it would have "
        "done, nothing changed.",
        {
            "oneOf": [
                object_schema({"ok": {"const": True}, "outputs": outputs}, ["ok", "outputs"]),
                dry_run_success(outputs),
            ]
        },
    )
    if links:
        success["links"] = dict(links)
    operation: dict[str, Any] = {
        "operationId": f"invoke.{action.fqn}",
        "summary": f"Invoke action {action.fqn}",
        "description": _action_description(action),
        "tags": [action.entity.fqn],
        "parameters": [
            *(_ref("parameters", name) for name in IDENTITY_HEADERS),
            _ref("parameters", "Idempotency-Key"),
            _ref("parameters", "dryRun"),
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": request_schema(action)}},
        },
        "responses": {"200": success, **_error_responses(action_errors(action))},
    }
    return operation


def _reaches(other: CompiledAction, state: str | None) -> bool:
    """Whether ``other`` can act on a row in ``state`` (``None``: no workflow)."""
    if other.kind == "create":
        return False
    return other.transition is None or state in other.transition.sources


def action_links(action: CompiledAction, graph: Graph) -> dict[str, Any]:
    """Links from a create or a transition to what can follow it on the same row: the
    actions whose workflow gate the row's new state passes, and the projections in detail
    form (the stateful fuzzing follows them)."""
    entity = action.entity
    workflow = entity.workflow
    if action.kind == "create":
        row = "$response.body#/outputs/id"
        state = workflow.initial if workflow is not None else None
    elif action.transition is not None:
        row = "$request.body#/subject/identityHandle"
        state = action.transition.target
    else:
        return {}
    tenant = "$request.header.X-Tenant-ID"
    links: dict[str, Any] = {}
    for other in sorted(graph.actions.values(), key=lambda a: a.fqn):
        if other.entity.fqn == entity.fqn and _reaches(other, state):
            links[other.name] = {
                "operationId": f"invoke.{other.fqn}",
                "parameters": {"header.X-Tenant-ID": tenant},
                "requestBody": {
                    "subject": {"tenantId": tenant, "entityFqn": entity.fqn, "identityHandle": row},
                    "inputs": {},
                },
                "description": f"{other.fqn} on the same {entity.fqn}",
            }
    for projection in sorted(graph.projections.values(), key=lambda p: p.fqn):
        if projection.entity.fqn == entity.fqn:
            links[f"render_{projection.fqn.rsplit('.', 1)[-1]}"] = {
                "operationId": f"render.{projection.fqn}",
                "parameters": {"header.X-Tenant-ID": tenant, "query.subject": row},
                "description": f"The same {entity.fqn} in {projection.fqn}",
            }
    return links


# -- the document ------------------------------------------------------------------------------


def _preflight() -> dict[str, Any]:
    return {
        "summary": "CORS preflight",
        "description": "Answered 204 on any path, with the CORS headers.",
        "responses": {"204": {"description": STATUS_TEXT[204], "headers": _headers()}},
    }


def _paths(graph: Graph) -> dict[str, Any]:
    paths: dict[str, Any] = {
        "/_health": {
            "get": {
                "operationId": "health",
                "summary": "Liveness probe",
                "tags": ["service"],
                "responses": {"200": _json_response("Always", _ref("schemas", "Health"))},
            }
        },
        "/_ready": {
            "get": {
                "operationId": "ready",
                "summary": "Readiness probe: the database answers",
                "description": "503 ServiceUnavailable in the error envelope when the database "
                "does not answer within TESSERA_READY_TIMEOUT_S.",
                "tags": ["service"],
                "responses": {
                    "200": _json_response("Ready", _ref("schemas", "Ready")),
                    "503": _json_response("Not ready", _ref("schemas", "ErrorEnvelope")),
                },
            }
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "summary": "This document",
                "tags": ["service"],
                "responses": {"200": _json_response("The OpenAPI document", {"type": "object"})},
            }
        },
    }
    for fqn in sorted(graph.projections):
        paths[f"/projections/{fqn}"] = {"get": projection_operation(graph.projections[fqn])}
        paths[f"/projections/{fqn}/history"] = {"get": history_operation(graph.projections[fqn])}
    for fqn in sorted(graph.actions):
        action = graph.actions[fqn]
        paths[f"/actions/{fqn}"] = {"post": action_operation(action, action_links(action, graph))}
    identity = [_ref("parameters", name) for name in IDENTITY_HEADERS]
    paths["/availability"] = {
        "post": availability_operation(identity, _error_responses, _json_response)
    }
    for item in paths.values():
        item["options"] = _preflight()
    return paths


def _components(graph: Graph) -> dict[str, Any]:
    schemas: dict[str, Any] = {**_SHARED_SCHEMAS, **AVAILABILITY_SCHEMAS}
    for fqn in sorted(graph.projections):
        schemas[f"{fqn}.Row"] = row_schema(graph.projections[fqn])
    return {
        "schemas": schemas,
        "parameters": _PARAMETERS,
        "headers": {
            **{
                _header_name(name): {
                    "description": "CORS (on every response)",
                    "schema": {"const": value.decode()},
                }
                for name, value in CORS_HEADERS
            },
            _header_name(b"access-control-allow-headers"): {
                "description": "CORS (on every response); names Idempotency-Key too when the "
                "request sent one",
                "schema": {
                    "enum": [
                        dict(CORS_HEADERS)[b"access-control-allow-headers"].decode(),
                        ALLOW_HEADERS_WITH_KEY.decode(),
                    ]
                },
            },
            "Idempotent-Replayed": {
                "description": "`true` on an answer replayed for a repeated Idempotency-Key",
                "schema": {"const": "true"},
            },
            **{
                _header_name(name): {
                    "description": "Security (on every response)",
                    "schema": {"const": value.decode()},
                }
                for name, value in SECURITY_HEADERS
            },
            "X-Request-Id": {
                "description": "The request's id (a ULID), as logged",
                "schema": {"type": "string"},
            },
        },
    }


def build_openapi(graph: Graph, prefix: str = "/api") -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``graph`` served under ``prefix``."""
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Tessera",
            "version": __version__,
            "description": (
                "Projections and actions of the installed plugins. Compiled graph "
                f"`{graph.hash}`. The service performs no authentication: a gateway sets "
                "the identity headers (spec part 5)."
            ),
            "x-graph-hash": graph.hash,
            "x-plugins": [
                {"name": p.name, "distribution": p.distribution, "version": p.version}
                for p in graph.plugins
            ],
        },
        "servers": [{"url": prefix or "/"}],
        "tags": [
            {"name": "service"},
            *({"name": fqn} for fqn in sorted(graph.entities)),
        ],
        "paths": _paths(graph),
        "components": _components(graph),
    }


def openapi_text(graph: Graph, prefix: str = "/api") -> str:
    """The document as indented JSON with sorted keys (deterministic)."""
    return json.dumps(build_openapi(graph, prefix), indent=2, sort_keys=True, ensure_ascii=False)


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

_SHARED_SCHEMAS: Final[Mapping[str, Schema]] = {
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
            "inputs": {"type": "array", "items": _ref("schemas", "FieldDescriptor")},
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
            "operators": {"type": "array", "items": {"enum": list(_OPERATOR_TEXT)}},
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
                "enum": [SCHEMA_VERSION, SCHEMA_1_1, SCHEMA_1_2, SCHEMA_1_3, SCHEMA_1_4]
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
            "fields": {"type": "array", "items": _ref("schemas", "FieldDescriptor")},
            "actions": {"type": "array", "items": _ref("schemas", "ActionDescriptor")},
            "filters": {
                "type": "array",
                "items": _ref("schemas", "FilterDescriptor"),
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
                "anyOf": [_ref("schemas", "WorkflowDescriptor"), {"type": "null"}],
                "description": f"At {SCHEMA_1_3}: the entity's workflow (null without one).",
            },
            "data": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        },
        ["schemaVersion", "targetProfile", "metadata", "fields", "actions", "filters", "data"],
    ),
}

_PARAMETERS: Final[Mapping[str, Any]] = {
    "X-Tenant-ID": {
        "name": "X-Tenant-ID",
        "in": "header",
        "required": True,
        "description": "The active tenant (set by the gateway). Missing, blank or sent more "
        "than once: 400.",
        "schema": {"type": "string", "pattern": "[^ \t]"},
    },
    "X-Actor-Id": {
        "name": "X-Actor-Id",
        "in": "header",
        "required": False,
        "description": "The acting actor; `anon` when absent (with TESSERA_REQUIRE_ACTOR_ID, "
        "an action without one is 403 PolicyDenied). Sent more than once: 400.",
        "schema": {"type": "string"},
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
            f"`_display`, docs/http.md); otherwise {SCHEMA_VERSION}, as in v0.1."
        ),
        "schema": {"type": "string"},
    },
}
