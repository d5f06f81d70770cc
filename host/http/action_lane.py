"""The action lane: ``POST <prefix>/actions/<fqn>`` answered straight from ASGI.

Every action is a write, and a write is the request this service serves most. Quart serves
one with two tasks (the body's receiver and the handler), a request object and context, a
routing match, its request signals, a task for the body's ``wait_for`` and another for the
answer's (on Python 3.10 and 3.11): about 0.2 ms of CPU per request on the benchmark machine,
a sixth of a create (docs/benchmarks.md, "The action lane"). The lane reads the body itself
and answers with the same endpoint (:data:`~host.http.routes.ACTION`), the same error
answers (:mod:`host.http.failures`) and the same headers, so the bytes are Quart's.

It takes only the plain request: ``POST``, the exact path, no query string, no root path,
HTTP/1.1 or later, and no ``Content-Length`` over the body limit. Everything else (a dry run,
``acceptSchemaVersions``, a body announced too large, HTTP/1.0) goes to Quart, whose route
answers it as before. It sits inside the CORS middleware, so the request id, the CORS and
security headers, draining and the access log are the same for both.

One difference, for the better: Quart cancels a request's handler when its client
disconnects, even after the unit of work has committed (the unit itself is detached and
finishes either way); the lane no longer reads after the body, so it finishes the request,
counts its outcome and tells the live streams of the commit, and its answer goes nowhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

from quart import Quart, Response
from quart.utils import encode_headers
from werkzeug.datastructures import Headers
from werkzeug.exceptions import RequestEntityTooLarge, RequestTimeout

from host.http.cors import ASGIApp, Receive, Scope, Send
from host.http.failures import failure_response
from host.http.routes import ACTION
from host.http.site import Site

__all__ = ["ActionLane"]

_T = TypeVar("_T")

if sys.version_info >= (3, 11):

    async def _within(seconds: float | None, work: Coroutine[Any, Any, _T]) -> _T:
        """``await work``, cancelled after ``seconds`` (``TimeoutError``): no task of its
        own, where ``asyncio.wait_for`` makes one on Python 3.11."""
        async with asyncio.timeout(seconds):
            return await work

else:  # pragma: no cover - Python 3.10 has no asyncio.timeout

    async def _within(seconds: float | None, work: Coroutine[Any, Any, _T]) -> _T:
        return await asyncio.wait_for(work, seconds)


class _Disconnected(Exception):
    """The client went away before its body had arrived."""


class ActionLane:
    """ASGI: the plain action request answered here, every other request by ``inner`` (the
    Quart app's ASGI callable)."""

    def __init__(self, inner: ASGIApp, app: Quart, site: Site) -> None:
        self.inner = inner
        self.app = app
        self.site = site
        self.path_start = site.prefix + "/actions/"

    def _fqn(self, scope: Scope) -> str | None:
        """The action named by a request the lane takes, else ``None``."""
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["query_string"]
            or scope.get("root_path")
            or scope["http_version"] < "1.1"
        ):
            return None
        path: str = scope["path"]
        if not path.startswith(self.path_start):
            return None
        fqn = path[len(self.path_start) :]
        if not fqn or "/" in fqn:
            return None
        limit = self.app.config["MAX_CONTENT_LENGTH"]
        for name, value in scope["headers"]:
            if name == b"content-length" and (not value.isdigit() or int(value) > limit):
                return None  # Quart refuses it unread (413), as before
        return fqn

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        fqn = self._fqn(scope)
        if fqn is None:
            await self.inner(scope, receive, send)
            return
        try:
            raw = await self._body(receive)
            response = await ACTION.answer(self.site, fqn, raw, self._headers(scope))
        except _Disconnected:
            return  # nothing to answer, as with Quart
        except Exception as error:
            response = await failure_response(error)
        # Quart's response timeout: a client that does not read is given up on (the CORS
        # layer logs it).
        with contextlib.suppress(asyncio.TimeoutError):
            await _within(self.app.config["RESPONSE_TIMEOUT"], self._send(send, response))

    async def _body(self, receive: Receive) -> bytes:
        """The whole body, refused as Quart refuses it: over the limit (413), or not
        arrived within ``BODY_TIMEOUT`` (408)."""
        try:
            return await _within(self.app.config["BODY_TIMEOUT"], self._receive_body(receive))
        except asyncio.TimeoutError as exc:
            raise RequestTimeout() from exc

    async def _receive_body(self, receive: Receive) -> bytes:
        limit = self.app.config["MAX_CONTENT_LENGTH"]
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected()
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise RequestEntityTooLarge()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    @staticmethod
    def _headers(scope: Scope) -> Headers:
        """The request's headers as Quart's request holds them (``Remote-Addr`` first, each
        name title-cased)."""
        headers = Headers()
        headers["Remote-Addr"] = (scope.get("client") or ["<local>"])[0]
        for name, value in scope["headers"]:
            headers.add(name.decode("latin1").title(), value.decode("latin1"))
        return headers

    @staticmethod
    async def _send(send: Send, response: Response) -> None:
        """``response`` as Quart sends it (the body in one message: the same bytes)."""
        body = await response.get_data(as_text=False)
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": encode_headers(response.headers),
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})
