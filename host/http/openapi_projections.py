"""The OpenAPI description of projections: the query parameters of a render (list
parameters, filters typed as their fields), a row's schema, the ViewSchema in list and
detail shape, and the operations ``GET /projections/<fqn>`` and ``GET
/projections/<fqn>/history``.

A projection's query parameters come from :func:`projection_parameters` alone, so adding a
parameter to list projections is one change there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from host.fieldtypes import DECIMAL_PATTERN, INT64_MAX, INT64_MIN, MONEY_TEXT_MAX_LENGTH
from host.graph.follow import follow
from host.graph.model import CompiledEntity, CompiledProjection
from host.http.jsonschema import Schema, column_schema, nullable, object_schema
from host.http.labels import labelled_summary
from host.http.openapi_availability import with_availability
from host.http.openapi_parts import (
    IDENTITY_HEADERS,
    OPERATOR_TEXT,
    error_kinds,
    error_responses,
    json_answer,
    query_parameter,
    ref,
)
from host.query.params import IN_MAX_VALUES, SCHEMA_1_4
from host.query.spec import Column, list_spec
from host.storage.reads import DISPLAY_KEY, displays
from host.systemfields import SYSTEM
from plugin_api import errors as e
from plugin_api.access import ReadAccess
from plugin_api.errors import BadRequest, InternalError

__all__ = [
    "filter_value_schema",
    "projection_operation",
    "projection_parameters",
    "row_schema",
    "view_schema",
]


def projection_parameters(projection: CompiledProjection) -> list[dict[str, Any]]:
    """The query parameters of a projection's GET (spec part 4 and the list parameters of
    docs/http.md "Lists"), in a stable order."""
    spec = list_spec(projection)
    parameters: list[dict[str, Any]] = [
        ref("parameters", "subject"),
        ref("parameters", "locale"),
        ref("parameters", "renderer"),
        ref("parameters", "acceptSchemaVersions"),
        query_parameter(
            "pageSize",
            f"List renders: rows per page, 1 to {spec.max_page_size}; with it the list is a "
            "page whose `pagination.nextCursor` leads to the next one. Out of range: 400.",
            {"type": "integer", "minimum": 1, "maximum": spec.max_page_size},
        ),
        query_parameter(
            "cursor",
            "List renders: the `pagination.nextCursor` of the previous page, sent with the "
            "same filters, sort and q. Altered or from another request: 400.",
            {"type": "string"},
        ),
        query_parameter(
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
            query_parameter(
                "sort",
                f"List renders: comma-separated sort keys over {keys}, `-` for descending; "
                "`id` is always the final tie-breaker. Anything else: 400.",
                {"type": "string"},
            )
        )
    if spec.search:
        fields = ", ".join(column.name for column in spec.search)
        parameters.append(
            query_parameter(
                "q",
                f"List renders: Unicode case-insensitive substring over {fields} (NFKC + "
                "case folding of both sides, served by a trigram index; docs/lists-search.md).",
                {"type": "string"},
            )
        )
    parameters.append(
        query_parameter(
            "count",
            "List renders: `true` adds `data.count` = `{value, exact}`, the rows matching the "
            "filters, search and row scope; beyond TESSERA_LIST_COUNT_LIMIT rows `value` is a "
            "lower bound and `exact` false.",
            {"type": "string", "enum": ["true", "false"]},
        )
    )
    if spec.facetable:
        parameters.append(
            query_parameter(
                "facet",
                "List renders (repeatable): adds `data.facets.<facet>` = `{exact, values: "
                "[{value, count}]}`, the matching rows per value (`<field>`) or per UTC year, "
                "month or day (`<datetime field>.year|month|day`, each value the bucket's "
                "first instant), bounded as `count`.",
                {"type": "string", "enum": list(spec.facetable)},
            )
        )
    parameters.append(
        query_parameter(
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
                query_parameter(
                    f"filter.{name}.{operator}",
                    f"List renders: rows whose {name} {OPERATOR_TEXT[operator]} (written as "
                    "in action inputs). A value that does not fit the field: 400.",
                    filter_value_schema(declared.column, operator),
                )
            )
        if "eq" in declared.operators:
            parameters.append(
                query_parameter(
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
                    "pagination": ref("schemas", "Pagination"),
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
            ref("schemas", "ViewSchema"),
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
    ok = json_answer(
        "The ViewSchema: the list shape without `subject`, the detail shape with it "
        "(`item` is null for an unknown subject); with `format`, the list as a file.",
        view_schema(projection, ref("schemas", f"{projection.fqn}.Row")),
    )
    ok["content"]["text/csv"] = {"schema": {"type": "string"}}
    ok["content"]["application/x-ndjson"] = {"schema": {"type": "string"}}
    responses = {"200": ok}
    floor, access = projection.entity.definition.access, projection.definition.access
    if access is None and floor is None:
        responses.update(error_responses(error_kinds(BadRequest, InternalError)))
        description = f"Rows of {entity} of the tenant. No policy applies to projections."
        identity = [ref("parameters", "X-Tenant-ID")]
    else:
        errors = error_kinds(BadRequest, InternalError, e.PolicyDenied)
        responses.update(error_responses(errors))
        rules = " ".join(_access_text(a) for a in (floor, access) if a is not None)
        description = f"Rows of {entity} of the tenant the reader may see. " + rules
        identity = [ref("parameters", name) for name in IDENTITY_HEADERS]
    return {
        "operationId": f"render.{projection.fqn}",
        "summary": labelled_summary(projection.definition, projection.entity.definition, "render"),
        "description": description,
        "tags": [entity],
        "parameters": [*identity, *projection_parameters(projection)],
        "responses": responses,
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
