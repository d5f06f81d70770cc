"""The OpenAPI description of live changes (docs/live.md): ``GET /changes``, a
``text/event-stream`` whose events (``change``, ``reset``, ``end``) are described one by one,
each ``data`` as JSON (``contentMediaType``/``contentSchema``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from host.http.jsonschema import Schema, object_schema
from host.http.openapi_parts import (
    IDENTITY_HEADERS,
    error_kinds,
    error_responses,
    ref,
    response_headers,
)
from host.live.sse import RETRY_MS
from plugin_api import errors as e

__all__ = ["LIVE_SCHEMAS", "changes_operation"]

POSITION: Final = "^-?[0-9]+\\.-?[0-9]+$"
"""An audit position as sent in ``id`` (``<xact>.<seq>``, opaque to clients)."""


def _event(name: str, data: Schema, description: str) -> Schema:
    """One server-sent event: its ``event`` name, its ``id`` and its ``data`` as JSON."""
    schema = object_schema(
        {
            "event": {"const": name},
            "id": {"type": "string", "pattern": POSITION},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": data,
            },
        },
        ["event", "id", "data"],
        closed=False,
    )
    schema["description"] = description
    return schema


_ROW_WRITE: Final = object_schema(
    {
        "entity": {"type": "string"},
        "id": {"type": "string"},
        "version": {"type": ["string", "null"]},
        "action": {"type": "string"},
        "projections": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    ["entity", "id", "version", "action", "projections"],
)

LIVE_SCHEMAS: Final[dict[str, Schema]] = {
    "ChangeEvent": _event(
        "change",
        _ROW_WRITE,
        "One committed write of a row a watched projection shows to this reader (nothing of "
        "the row: read it through the projection). `version` is its `_version` after the "
        "write; `projections` the watched ones that show it.",
    ),
    "LeftEvent": _event(
        "left",
        _ROW_WRITE,
        "Only on a tracking stream (`shown` sent): a write took a row the reader could read "
        "in a watched projection (named in `shown`, or told of by a `change`) out of it (its "
        "filters, the reader's row scope or read policies); `projections` the watched ones it "
        "left. Nothing of the row: the reader may no longer read it.",
    ),
    "ResetEvent": _event(
        "reset",
        object_schema({"reason": {"enum": ["invalid", "unknown", "too-old"]}}, ["reason"]),
        "Reload everything shown, then go on with this stream: the Last-Event-ID was not a "
        "position (`invalid`), not one of the tenant's records (`unknown`), or too many "
        "records followed it (`too-old`, TESSERA_LIVE_RESUME_MAX).",
    ),
    "EndEvent": _event(
        "end",
        object_schema({"reason": {"enum": ["shutdown", "behind"]}}, ["reason"]),
        "The server ended the stream (the worker stops, or the client read too slowly); "
        "reconnect with the last id, nothing is missed.",
    ),
}


def changes_operation(
    projections: Sequence[str], max_projections: int, max_shown: int
) -> dict[str, Any]:
    """``GET /changes``."""
    stream = {
        "description": "The stream, open as long as the client stays: first "
        f"`retry: {RETRY_MS}` and a comment, then the events; a comment `: heartbeat` "
        "after TESSERA_LIVE_HEARTBEAT_S of silence (with an `id:` line when records not for "
        "this reader went by).",
        "headers": {
            **response_headers(),
            "X-Accel-Buffering": {
                "description": "`no`: a proxy passes each event at once",
                "schema": {"const": "no"},
            },
        },
        "content": {
            "text/event-stream": {
                "schema": {
                    "oneOf": [ref("schemas", name) for name in LIVE_SCHEMAS],
                    "description": "One event (the data of each as JSON).",
                }
            }
        },
    }
    kinds = error_kinds(
        e.BadRequest, e.PolicyDenied, e.ProjectionNotFound, e.InternalError, e.ServiceUnavailable
    )
    return {
        "operationId": "changes",
        "summary": "Live changes of the rows of the watched projections (server-sent events)",
        "description": f"Watches 1 to {max_projections} projections (`projection` repeated; "
        "a repeated name counts once) for the tenant, under each projection's read access "
        "(checked at open: 403 as a list read) and the reader's row scope. Each event's "
        "`id` is the record's audit position: reconnecting with `Last-Event-ID` receives "
        "every missed change in commit order, or `reset`. Past TESSERA_LIVE_MAX_STREAMS "
        "streams on a worker, or while it stops: 503 ServiceUnavailable (docs/live.md). "
        "`filter.<field>[.<op>]` parameters, as the watched projections' lists take them "
        "(`GET /projections/{fqn}`), narrow what is told to the rows they match; `shown` "
        "makes the stream tell `left` when a row leaves a watched projection.",
        "tags": ["live"],
        "parameters": [
            *(ref("parameters", name) for name in IDENTITY_HEADERS),
            {
                "name": "projection",
                "in": "query",
                "required": True,
                "style": "form",
                "explode": True,
                "description": "A projection to watch (repeatable). Unknown: 404 "
                "ProjectionNotFound; none, or more than the cap: 400.",
                "schema": {
                    "type": "array",
                    "items": {"enum": list(projections)} if projections else {"type": "string"},
                    "minItems": 1,
                    "maxItems": max_projections,
                },
            },
            {
                "name": "shown",
                "in": "query",
                "required": False,
                "style": "form",
                "explode": True,
                "description": "The ids of the rows the client shows (repeatable; sent once, "
                "even empty, it asks for `left` events). Rows the reader cannot read in a "
                "watched projection when the stream opens are ignored; more than "
                f"{max_shown}: 400.",
                "schema": {"type": "array", "items": {"type": "string"}, "maxItems": max_shown},
            },
            ref("parameters", "Last-Event-ID"),
        ],
        "responses": {"200": stream, **error_responses(kinds)},
    }
