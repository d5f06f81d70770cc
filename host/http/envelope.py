"""The one JSON error envelope and the JSON response helper."""

from __future__ import annotations

from typing import Any

from host import jsonio
from plugin_api.errors import TesseraError

JSON = "application/json"


def error_body(kind: str, message: str) -> dict[str, Any]:
    """``{"ok": false, "error": {"kind": ..., "message": ...}}`` (spec 2.10)."""
    return {"ok": False, "error": {"kind": kind, "message": message}}


def error_bytes(error: TesseraError) -> bytes:
    """The serialised envelope of an error of the taxonomy."""
    return jsonio.dumps(error_body(error.kind, error.message))
