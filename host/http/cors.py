"""ASGI middleware: CORS and security headers on every response, 204 preflight on any path,
request ids and the access log. It wraps the Quart app, so it sees every response the app
sends, errors included.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from host import jsonio
from host.http.envelope import JSON, error_body
from host.logs import request_id_var
from host.ulids import new_ulid

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CORS_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"access-control-allow-origin", b"*"),
    (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
    (b"access-control-allow-headers", b"Content-Type, X-Tenant-ID, X-Actor-Id, X-Actor-Roles"),
    (b"access-control-max-age", b"600"),
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"cache-control", b"no-store"),
    (b"vary", b"X-Tenant-ID, X-Actor-Id, X-Actor-Roles"),
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)
"""Tenant data is private to its identity (no caching, no sniffing, never framed)."""
_POLICY = b"content-security-policy"


def _security_headers(
    sent: Iterable[tuple[bytes, bytes]], base: tuple[tuple[bytes, bytes], ...]
) -> Iterable[tuple[bytes, bytes]]:
    """The security headers ``base``; a response that sets its own Content-Security-Policy
    (the console's HTML pages, which load their stylesheet) keeps it."""
    own = [value for name, value in sent if name.lower() == _POLICY]
    if not own:
        return base
    return [(name, own[0] if name == _POLICY else value) for name, value in base]


_FIXED_HEADERS = CORS_HEADERS + SECURITY_HEADERS
_FIXED_NAMES = frozenset(name for name, _ in _FIXED_HEADERS)
ALLOW_HEADERS_WITH_KEY = b"Content-Type, X-Tenant-ID, X-Actor-Id, X-Actor-Roles, Idempotency-Key"
"""``Access-Control-Allow-Headers`` for a request that sends or asks to send an
``Idempotency-Key``. Every other request gets the spec's exact value: a v0.1 client that
sends nothing new sees the same bytes."""

MAX_REQUEST_ID = 128
_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:\-]{1,%d}" % MAX_REQUEST_ID)

access_logger = logging.getLogger("tessera.access")
logger = logging.getLogger("tessera.http")


def _has_body(scope: Scope) -> bool:
    """Whether the request announces a body (a non-zero length, or chunked)."""
    for key, value in scope.get("headers", ()):
        if key == b"transfer-encoding" or (key == b"content-length" and value.strip() != b"0"):
            return True
    return False


OPTIONAL_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"idempotency-key", b"Idempotency-Key"),
    (b"last-event-id", b"Last-Event-ID"),
)
"""Headers allowed only to a request that sends one (or whose preflight names it):
``Idempotency-Key`` (actions) and ``Last-Event-ID`` (live streams, docs/live.md)."""


def _cors_headers(scope: Scope, *, token_mode: bool = False) -> tuple[tuple[bytes, bytes], ...]:
    """The spec's CORS headers; ``Idempotency-Key`` or ``Last-Event-ID`` joins the allowed
    headers when the request carries it, or its preflight names it in
    ``Access-Control-Request-Headers``; in token mode ``Authorization`` always does."""
    headers = scope.get("headers", ())
    extra = [
        name
        for lower, name in OPTIONAL_HEADERS
        if any(
            key == lower or (key == b"access-control-request-headers" and lower in value.lower())
            for key, value in headers
        )
    ]
    if token_mode:
        extra.append(b"Authorization")
    if not extra:
        return CORS_HEADERS
    allowed = b", ".join((dict(CORS_HEADERS)[b"access-control-allow-headers"], *extra))
    allow = (b"access-control-allow-headers", allowed)
    return tuple(allow if name == allow[0] else (name, v) for name, v in CORS_HEADERS)


TOKEN_SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = tuple(
    (name, value + b", Authorization" if name == b"vary" else value)
    for name, value in SECURITY_HEADERS
)
"""The security headers in token mode: the answer also varies with the token."""


def inbound_request_id(scope: Scope) -> str | None:
    """An ``X-Request-Id`` sent by the gateway, when it is 1 to 128 characters of letters,
    digits and ``._:-`` (anything else is ignored and a new id is made)."""
    for key, value in scope.get("headers", ()):
        if key == b"x-request-id":
            raw = bytes(value).strip()
            return raw.decode("ascii") if _REQUEST_ID.fullmatch(raw) else None
    return None


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return "-"


class CorsMiddleware:
    """Adds the spec's CORS headers, the security headers and an ``X-Request-Id`` to every
    HTTP response."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        access_log: bool = True,
        token_mode: bool = False,
        draining: Callable[[], bool] = lambda: False,
    ) -> None:
        self._app = app
        self._token_mode = token_mode
        self._security = TOKEN_SECURITY_HEADERS if token_mode else SECURITY_HEADERS
        self._access_log = access_log
        self._draining = draining

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        request_id = inbound_request_id(scope) or new_ulid()
        request_id_var.set(request_id)
        started = time.perf_counter()
        status = 0
        response_started = False
        response_complete = False
        client_gone = False
        sent_bytes = 0
        received_bytes = 0
        id_header = (b"x-request-id", request_id.encode())
        cors_headers = _cors_headers(scope, token_mode=self._token_mode)
        security_headers = self._security
        body_read = not _has_body(scope)

        async def receive_tracking() -> Message:
            nonlocal body_read, client_gone, received_bytes
            message = await receive()
            received_bytes += len(message.get("body", b""))
            if message["type"] == "http.disconnect":
                client_gone = True
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_read = True
            return message

        async def send_with_cors(message: Message) -> None:
            nonlocal status, response_started, response_complete, sent_bytes
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                sent = list(message.get("headers", ()))
                headers = [(k, v) for k, v in sent if k.lower() not in _FIXED_NAMES]
                security = _security_headers(sent, security_headers)
                message["headers"] = [*headers, *cors_headers, *security, id_header]
                if not body_read or (
                    scope.get("http_version", "1.1")[0] == "1" and self._draining()
                ):
                    # Answered before the body was read (404, 405, 413, ...), or while the
                    # worker stops (host.http.draining): the server will not reuse the
                    # connection, so say so rather than drop it under the next request.
                    message["headers"].append((b"connection", b"close"))
            elif message["type"] == "http.response.body":
                sent_bytes += len(message.get("body", b""))
                response_complete = not message.get("more_body", False)
            await send(message)

        try:
            if scope["method"] == "OPTIONS":
                await send_with_cors({"type": "http.response.start", "status": 204, "headers": []})
                await send_with_cors(
                    {"type": "http.response.body", "body": b"", "more_body": False}
                )
            else:
                await self._app(scope, receive_tracking, send_with_cors)
        except Exception:
            if response_started:
                # Too late for an error response: the body is left incomplete, and the
                # server closes the connection without ending it, so the client's HTTP
                # library reports a broken response instead of reading a short 200.
                logger.exception(
                    "response cut off after %d bytes (request id %s): the handler failed "
                    "while sending the body; the connection is closed without its end",
                    sent_bytes,
                    request_id,
                )
                return
            logger.exception("unhandled error (request id %s)", request_id)
            body = jsonio.dumps(
                error_body("InternalError", f"Internal error (request id {request_id})")
            )
            await send_with_cors(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [(b"content-type", JSON.encode())],
                }
            )
            await send_with_cors({"type": "http.response.body", "body": body, "more_body": False})
        else:
            if response_started and not response_complete and not client_gone:
                # The app returned before the end of the body: Quart's response timeout
                # (TESSERA_RESPONSE_TIMEOUT_S) gave up on a client that does not read.
                logger.warning(
                    "response cut off after %d bytes and %.1fs (request id %s): not sent "
                    "within the response timeout, the client does not read; the connection "
                    "is closed without the end of the body",
                    sent_bytes,
                    time.perf_counter() - started,
                    request_id,
                )
        finally:
            if self._access_log:
                incomplete = response_started and not response_complete
                fields = {
                    "request_id": request_id,
                    "method": scope.get("method"),
                    "path": scope.get("path"),
                    "status": status,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    "tenant": _header(scope, b"x-tenant-id"),
                    "actor": _header(scope, b"x-actor-id"),
                    "request_bytes": received_bytes,
                    "response_bytes": sent_bytes,
                    "incomplete": incomplete,
                }
                access_logger.info(
                    "%(method)s %(path)s tenant=%(tenant)s actor=%(actor)s status=%(status)d"
                    "%(outcome)s in=%(request_bytes)d out=%(response_bytes)d "
                    "id=%(request_id)s %(duration_ms).1fms",
                    {**fields, "outcome": " incomplete" if incomplete else ""},
                    extra=fields,
                )
