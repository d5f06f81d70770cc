"""Hypercorn, hardened for the service port.

Hypercorn 0.17/0.18 answers ``Upgrade: h2c`` with ``101 Switching Protocols`` and takes a
``PRI * HTTP/2.0`` preface as HTTP/2 on any cleartext port (a gateway that forwards ``Upgrade``
then carries an HTTP/2 connection it cannot see into), upgrades ``Upgrade: websocket``, names
itself in a ``Server`` header, and sends ``100 Continue`` as soon as a request asks for it,
before the application has seen the request. It has settings for the banner and for ALPN only,
so :func:`harden_hypercorn` also puts a subclass of its HTTP/1.1 protocol in place:

* an ``Upgrade`` header is never honoured: the request is served as the HTTP/1.1 request it is;
* the HTTP/2 preface is answered ``505 HTTP Version Not Supported`` and the connection closed,
  unless HTTP/2 is on (``TESSERA_HTTP2``), which also offers ``h2`` over TLS (ALPN);
* a request announcing ``Expect: 100-continue`` with a ``Content-Length`` over the body limit
  gets no ``100 Continue``: the application answers 413 at once and the body is never sent.

It also writes the head of an answer of known length (a ``Content-Length``) together with its
body, in one system call where Hypercorn makes two (docs/benchmarks.md, "The action lane").

It runs in every Hypercorn worker, when ``host.asgi`` is imported, so ``tessera serve`` and
``hypercorn host.asgi:app`` are both covered.
"""

from __future__ import annotations

from typing import ClassVar

import h11
import hypercorn.config
import hypercorn.protocol
from hypercorn.events import Closed, RawData
from hypercorn.protocol.events import Event as StreamEvent
from hypercorn.protocol.events import StreamClosed
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.typing import H11SendableEvent

from host.config import Settings

__all__ = ["GuardedH11Protocol", "harden_hypercorn"]

PRIOR_KNOWLEDGE_METHOD = b"PRI"


def _is_http2_preface(request: h11.Request) -> bool:
    return (
        request.method == PRIOR_KNOWLEDGE_METHOD
        and request.target == b"*"
        and request.http_version == b"2.0"
    )


def _without_upgrade(request: h11.Request) -> h11.Request:
    """``request`` minus its ``Upgrade`` header (the same object when it has none)."""
    if not any(name == b"upgrade" for name, _ in request.headers):  # names are lower-case
        return request
    kept = [
        (name, value) for name, value in request.headers.raw_items() if name.lower() != b"upgrade"
    ]
    return h11.Request(
        method=request.method,
        target=request.target,
        headers=kept,
        http_version=request.http_version,
    )


def _has_length(response: h11.Response) -> bool:
    return any(name == b"content-length" for name, _ in response.headers)


def _declared_length(request: h11.Request) -> int:
    """The request's ``Content-Length`` (h11 has checked there is at most one), else 0."""
    for name, value in request.headers:
        if name == b"content-length" and value.isdigit():
            return int(value)
    return 0


class GuardedH11Protocol(H11Protocol):
    """Hypercorn's HTTP/1.1 protocol without ``Upgrade``, without HTTP/2 unless configured,
    and without ``100 Continue`` for a body that is announced too large."""

    http2: ClassVar[bool] = False
    max_body_bytes: ClassVar[int] = Settings().max_body_bytes
    _refused: bool = False
    _held: bytes = b""
    """The head of a response of known length, not yet written: it goes out with the body."""

    async def _check_protocol(self, event: h11.Request) -> None:
        if _is_http2_preface(event) and not self.http2:
            self._refused = True
            await self._send_error_response(505)
            await self.send(Closed())
            return
        connection = self.connection
        if isinstance(connection, h11.Connection) and _declared_length(event) > self.max_body_bytes:
            # The application refuses this body unread (413): do not invite it.
            connection.client_is_waiting_for_100_continue = False
        await super()._check_protocol(_without_upgrade(event))

    async def _create_stream(self, request: h11.Request) -> None:
        if self._refused:
            return
        await super()._create_stream(_without_upgrade(request))

    async def stream_send(self, event: StreamEvent) -> None:
        if isinstance(event, StreamClosed) and self._held:  # an answer cut off after its head
            held, self._held = self._held, b""
            await self.send(RawData(data=held))
        await super().stream_send(event)

    async def _send_h11_event(self, event: H11SendableEvent) -> None:
        """Hypercorn's, but the head of a response with a ``Content-Length`` is written with
        the first bytes after it (its body, or its end), in one write instead of three: the
        same bytes, one system call and two awaits fewer per answer."""
        try:
            data = self.connection.send(event) or b""
        except h11.LocalProtocolError:
            if self.connection.their_state != h11.ERROR:
                raise
            return
        if isinstance(event, h11.Response) and _has_length(event):
            self._held += data
            return
        if self._held:
            data, self._held = self._held + data, b""
        if data:
            await self.send(RawData(data=data))


def harden_hypercorn(settings: Settings) -> None:
    """Configure Hypercorn in this process as the module docstring says. Settings made
    explicitly in a Hypercorn configuration file (``include_server_header``,
    ``alpn_protocols``) still win over these defaults."""
    GuardedH11Protocol.http2 = settings.http2
    GuardedH11Protocol.max_body_bytes = settings.max_body_bytes
    hypercorn.protocol.H11Protocol = GuardedH11Protocol  # type: ignore[attr-defined]
    hypercorn.config.Config.include_server_header = False
    hypercorn.config.Config.alpn_protocols = ["h2", "http/1.1"] if settings.http2 else ["http/1.1"]
