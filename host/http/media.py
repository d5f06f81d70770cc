"""The JSON media type rule for action bodies (spec 2.1; the CSRF protection of part 8).

A browser sends a cross-site form or a "simple" ``fetch`` without asking the server first only
with ``application/x-www-form-urlencoded``, ``multipart/form-data`` or ``text/plain``; requiring
a JSON media type therefore keeps cookie-authenticated cross-site requests from running actions.
"""

from __future__ import annotations

from collections.abc import Sequence

from host.http.envelope import JSON
from plugin_api.errors import BadRequest, UnsupportedMediaType


def is_json_media_type(value: str) -> bool:
    """``application/json`` or ``application/<subtype>+json``, any case, any parameters."""
    media_type = value.split(";", 1)[0].strip(" \t").lower()
    kind, slash, subtype = media_type.partition("/")
    if kind != "application" or not slash:
        return False
    return subtype == "json" or (subtype.endswith("+json") and len(subtype) > len("+json"))


def require_json(values: Sequence[str]) -> None:
    """Refuse a request whose ``Content-Type`` is missing or blank (400), sent twice (400) or
    not a JSON media type (415)."""
    if len(values) > 1:
        raise BadRequest("Header Content-Type was sent more than once")
    value = values[0].strip() if values else ""
    if not value:
        raise BadRequest(f"Missing required header Content-Type ({JSON})")
    if not is_json_media_type(value):
        raise UnsupportedMediaType(
            f"Content-Type {value[:100]!r} is not a JSON media type; send {JSON}"
        )
