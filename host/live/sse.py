"""The server-sent events of a live stream (docs/live.md, "Messages"): ``change`` messages,
``reset``, ``end``, heartbeats as comments, and the stream itself as bytes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Final

from host.fieldtypes import parse_datetime
from host.live.hub import Hub, Subscription
from host.live.messages import Message, event
from host.storage.auditlog import Position

__all__ = ["CONTENT_TYPE", "RETRY_MS", "parse_event_id", "stream"]

CONTENT_TYPE: Final = "text/event-stream; charset=utf-8"
RETRY_MS: Final = 2000
"""How long a browser's ``EventSource`` waits before it reconnects."""


def parse_event_id(text: str) -> Position | None:
    """The position a ``Last-Event-ID`` names, or ``None`` if it names none."""
    try:
        return Position.parse(text.strip())
    except ValueError:
        return None


def _lag_s(at: str) -> float | None:
    try:
        written = parse_datetime(at)
    except (TypeError, ValueError):
        return None
    return None if written is None else max(0.0, time.time() - written.timestamp())


async def stream(
    hub: Hub,
    subscription: Subscription,
    *,
    resume: str | None,
    heartbeat_s: float,
    on_sent: Callable[[int, list[float]], None] | None = None,
) -> AsyncIterator[bytes]:
    """The body of one stream: the backlog of a resumed stream (or a reset), then each
    change as the poller finds it, a heartbeat comment when idle, until the hub or the
    client ends it. The subscription is given back to the hub however it ends."""
    try:
        yield f"retry: {RETRY_MS}\n: live\n\n".encode()
        if resume is not None:
            since = parse_event_id(resume)
            backlog = await hub.backlog(subscription, since) if since is not None else None
            if backlog is None or backlog.reset is not None:
                reason = "invalid" if backlog is None else backlog.reset
                yield event("reset", subscription.position, {"reason": reason})
            elif backlog.messages:
                yield _sent(backlog.messages, on_sent)
        told = subscription.position
        while True:
            idle = False
            try:
                await asyncio.wait_for(subscription.ready.wait(), heartbeat_s)
            except asyncio.TimeoutError:
                idle = True
            messages = subscription.take()
            if messages:
                yield _sent(messages, on_sent)
                told = messages[-1].change.position
            if subscription.ended is not None:
                yield event("end", subscription.position, {"reason": subscription.ended})
                return
            if idle:
                # A comment keeps proxies from closing the connection, and an id with no
                # data moves the client's Last-Event-ID past records not for it.
                moved = subscription.position != told
                told = subscription.position
                yield f": heartbeat\nid: {told}\n\n".encode() if moved else b": heartbeat\n\n"
    finally:
        hub.unsubscribe(subscription)


def _sent(messages: list[Message], on_sent: Callable[[int, list[float]], None] | None) -> bytes:
    if on_sent is not None and messages:
        lags = [lag for m in messages if (lag := _lag_s(m.change.at)) is not None]
        on_sent(len(messages), lags)
    return b"".join(message.sse for message in messages)
