"""The one JSON error envelope and the JSON response helpers."""

from __future__ import annotations

from typing import Any

from quart import Response

from host import jsonio
from plugin_api.errors import TesseraError

__all__ = ["JSON", "error_body", "error_bytes", "error_response", "json_response"]

JSON = "application/json"


def error_body(kind: str, message: str) -> dict[str, Any]:
    """``{"ok": false, "error": {"kind": ..., "message": ...}}`` (spec 2.10)."""
    return {"ok": False, "error": {"kind": kind, "message": message}}


def error_bytes(error: TesseraError) -> bytes:
    """The serialised envelope of an error of the taxonomy."""
    return jsonio.dumps(error_body(error.kind, error.message))


def json_response(payload: object, status: int = 200) -> Response:
    """``payload`` as a JSON response."""
    return Response(jsonio.dumps(payload), status=status, content_type=JSON)


def error_response(error: TesseraError) -> Response:
    """The envelope of ``error`` with its status."""
    return Response(error_bytes(error), status=error.status, content_type=JSON)
