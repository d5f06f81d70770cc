"""The live hub of one process: a single poller reads the new audit records of every tenant
with open streams once per interval (or at once when woken) and fans them out to the
streams in process (docs/live.md).

Visibility is decided per *cohort*: the streams of one tenant watching one projection under
the same row conditions (the reader's row scope and read policies' conditions). A batch asks
each cohort whose entity it touches which of the batch's row ids it may read, in one
statement through the projection's own read (:class:`ProjectionReads`), whatever the number
of streams in it. A reader is never told of a row its projection would not show it (as the
row is when the batch is read).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from host.live.feed import ORIGIN, AuditFeed, Change
from host.live.messages import Message
from host.live.visibility import Visible, visible_ids
from host.live.watch import Watch
from host.storage.auditlog import Position
from host.storage.reads import ProjectionReads

__all__ = ["Backlog", "Hub", "Message", "Subscription", "Watch"]

logger = logging.getLogger("tessera.live")

MAX_TRACKED: Final = 2000
"""Rows a tracking stream remembers per watched projection (those it named when it opened,
then those it was told of): past it, a row told of is not added (docs/live.md)."""
READ_BATCH: Final = 500
"""Records read per statement (and ids asked per visibility statement)."""
WAKE_GAP_S: Final = 0.01
"""A wake-up waits at least this long before it reads, so a burst of commits is read at once."""
GAP_PER_STREAM_S: Final = 0.0001
"""... and this long per open stream (at most the poll interval): handing a batch to a stream
costs about this much whatever the batch holds, so reading less often when many streams are
open keeps the fan-out's share of the worker bounded (bench/live.py: 1,000 streams)."""


@dataclass(eq=False, slots=True)
class Subscription:
    """One open stream: what it watches, and what waits to be sent to it."""

    tenant: str
    watches: tuple[Watch, ...]
    position: Position = ORIGIN
    """The last record this stream has passed (sent, or not for it)."""
    pending: deque[tuple[list[Message], Position]] = field(default_factory=deque)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    passed: Position = ORIGIN
    """The last record of a batch with nothing for this stream (taken into
    :attr:`position` by the next :meth:`take`)."""
    ended: str | None = None
    """Why the hub ended the stream (``None`` while open)."""
    shown: dict[str, set[str]] | None = None
    """A tracking stream's rows per watched projection (those the reader read when it
    opened, then those it was told of): a change that takes one out of the projection is
    told as ``left``. ``None``: a stream that does not track (no ``left`` messages)."""

    def push(self, messages: list[Message], last: Position, limit: int) -> None:
        if not messages:  # nothing for it: its position moves on without waking it
            self.passed = max(self.passed, last)
            return
        if len(self.pending) >= limit:
            self.end("behind")  # a client that does not read: it reloads when it comes back
            return
        self.pending.append((messages, last))
        self.ready.set()

    def end(self, reason: str) -> None:
        if self.ended is None:
            self.ended = reason
        self.ready.set()

    def take(self) -> list[Message]:
        """The messages waiting, past :attr:`position` (which moves to the last record)."""
        taken: list[Message] = []
        while self.pending:
            messages, last = self.pending.popleft()
            taken.extend(m for m in messages if m.change.position > self.position)
            self.position = max(self.position, last)
        self.position = max(self.position, self.passed)
        self.ready.clear()
        return taken


@dataclass(frozen=True, slots=True)
class Backlog:
    """What a resuming stream missed: its messages, or ``reset`` when it must reload."""

    messages: list[Message]
    reset: str | None


class Hub:
    """The poller and the open streams of one process."""

    def __init__(
        self,
        feed: AuditFeed,
        reads: ProjectionReads,
        *,
        poll_s: float,
        max_streams: int,
        resume_max: int,
        draining: Callable[[], bool] = lambda: False,
        on_streams: Callable[[int], None] | None = None,
        queue_limit: int = 1000,
    ) -> None:
        self._feed = feed
        self._reads = reads
        self._poll_s = poll_s
        self.max_streams = max_streams
        self._resume_max = resume_max
        self._draining = draining
        self._on_streams = on_streams
        self._queue_limit = queue_limit
        self._streams: dict[str, set[Subscription]] = {}
        self._cursors: dict[str, Position] = {}
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.closing = False
        self._soon = False

    # -- streams ---------------------------------------------------------------------------

    @property
    def open_streams(self) -> int:
        return sum(len(streams) for streams in self._streams.values())

    def full(self) -> bool:
        return self.open_streams >= self.max_streams

    async def subscribe(
        self,
        tenant: str,
        watches: tuple[Watch, ...],
        shown: dict[str, set[str]] | None = None,
    ) -> Subscription:
        """Register a stream; it hears of every record after the tenant's current tail.
        ``shown``: the rows it tracks per watched projection (see :attr:`Subscription.shown`)."""
        async with self._lock:  # never between a poll's read and its fan-out
            if tenant not in self._cursors:
                horizon = await self._feed.horizon()
                self._cursors[tenant] = await self._feed.tail(tenant, horizon)
            subscription = Subscription(tenant, watches, self._cursors[tenant], shown=shown)
            self._streams.setdefault(tenant, set()).add(subscription)
        self._count()
        self._ensure_running()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        streams = self._streams.get(subscription.tenant)
        if streams is None or subscription not in streams:
            return
        streams.discard(subscription)
        if not streams:
            del self._streams[subscription.tenant]
            self._cursors.pop(subscription.tenant, None)
        self._count()

    async def backlog(self, subscription: Subscription, since: Position) -> Backlog:
        """The messages a stream resuming after ``since`` missed; a reset when ``since`` is
        not one of the tenant's records (too old and pruned, or from another database) or
        more than the resume limit of records followed it. Call before the first
        :meth:`Subscription.take`: what the poller queued meanwhile repeats none of it."""
        tenant = subscription.tenant
        if not await self._feed.holds(tenant, since):
            return Backlog([], "unknown")
        horizon = await self._feed.horizon()
        messages: list[Message] = []
        position = since
        read = 0
        while True:
            limit = min(READ_BATCH, self._resume_max + 1 - read)
            changes = await self._feed.after(tenant, position, horizon, limit)
            read += len(changes)
            if read > self._resume_max:
                return Backlog([], "too-old")
            if not changes:
                break
            visible = await self._visible_ids(tenant, [subscription], changes)
            messages.extend(_told(subscription, changes, visible))
            position = changes[-1].position
            if len(changes) < limit:
                break
        # Every record up to here is final and read: the queue's records at or before it
        # are skipped by take(), the later ones sent.
        subscription.position = position
        return Backlog(messages, None)

    # -- the poller ------------------------------------------------------------------------

    def wake(self) -> None:
        """Read at once (a change committed in this process, or a NOTIFY)."""
        self._wake.set()

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while not self.closing:
            if self._draining():
                self.close("shutdown")
                return
            self._soon = False
            if self._streams:
                try:
                    await self.poll()
                except Exception:
                    logger.exception("live changes: reading the audit log failed; retrying")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(
                    self._wake.wait(), self._gap() if self._soon else self._poll_s
                )
                await asyncio.sleep(self._gap())
            self._wake.clear()

    def _gap(self) -> float:
        return min(self._poll_s, max(WAKE_GAP_S, GAP_PER_STREAM_S * self.open_streams))

    async def poll(self) -> int:
        """Read every tenant's new records once and fan them out; returns how many."""
        async with self._lock:
            tenants = list(self._streams)
            if not tenants:
                return 0
            horizon = await self._feed.horizon()
            count = 0
            for tenant in tenants:
                cursor = self._cursors.get(tenant)
                if cursor is None:  # its last stream left during this poll
                    continue
                while True:
                    changes = await self._feed.after(tenant, cursor, horizon, READ_BATCH)
                    if not changes:
                        break
                    count += len(changes)
                    cursor = changes[-1].position
                    await self._fan_out(tenant, changes)
                    if len(changes) < READ_BATCH:
                        break
                if tenant in self._streams:  # its last stream may have left meanwhile
                    self._cursors[tenant] = cursor
                if await self._feed.unsettled(tenant, horizon):
                    self._soon = True  # read again after the gap, not the poll interval
            return count

    async def _fan_out(self, tenant: str, changes: list[Change]) -> None:
        streams = list(self._streams.get(tenant, ()))
        last = changes[-1].position
        visible = await self._visible_ids(tenant, streams, changes)
        shared: dict[tuple[tuple[object, ...], ...], list[Message]] = {}
        for subscription in streams:  # streams watching alike share one list of messages
            if subscription.shown is not None:  # a tracking stream: messages of its own
                subscription.push(_told(subscription, changes, visible), last, self._queue_limit)
                continue
            key = tuple(watch.key for watch in subscription.watches)
            messages = shared.get(key)
            if messages is None:
                messages = shared[key] = _messages(subscription.watches, changes, visible)
            subscription.push(messages, last, self._queue_limit)

    async def _visible_ids(
        self, tenant: str, streams: Iterable[Subscription], changes: list[Change]
    ) -> Visible:
        watches = (watch for subscription in streams for watch in subscription.watches)
        return await visible_ids(self._reads, tenant, watches, changes)

    # -- stopping --------------------------------------------------------------------------

    def close(self, reason: str) -> None:
        """End every stream (they finish their responses) and refuse new ones."""
        self.closing = True
        for streams in self._streams.values():
            for subscription in streams:
                subscription.end(reason)

    async def stop(self) -> None:
        self.close("shutdown")
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _count(self) -> None:
        if self._on_streams is not None:
            self._on_streams(self.open_streams)


def _shows(watch: Watch, change: Change, visible: Visible) -> bool:
    if watch.entity != change.entity:
        return False
    ids = visible.get(watch.key, frozenset())
    return ids is None or change.id in ids


def _told(subscription: Subscription, changes: list[Change], visible: Visible) -> list[Message]:
    """What ``subscription`` is told of ``changes``: without tracking, as every stream
    watching alike; with it, also a ``left`` message when a row it tracks is no longer in a
    watched projection (and the rows told of are tracked from then on)."""
    shown = subscription.shown
    if shown is None:
        return _messages(subscription.watches, changes, visible)
    messages: list[Message] = []
    for change in changes:
        showing: list[str] = []
        left: list[str] = []
        for watch in subscription.watches:
            if watch.entity != change.entity:
                continue
            fqn = watch.projection.fqn
            rows = shown.setdefault(fqn, set())
            if _shows(watch, change, visible):
                showing.append(fqn)
                if len(rows) < MAX_TRACKED:
                    rows.add(change.id)
            elif change.id in rows:
                left.append(fqn)
                rows.discard(change.id)
        if showing:
            messages.append(Message.of(change, tuple(showing)))
        if left:
            messages.append(Message.left(change, tuple(left)))
    return messages


def _messages(
    watches: tuple[Watch, ...],
    changes: list[Change],
    visible: Visible,
) -> list[Message]:
    if all(visible.get(watch.key, frozenset()) == frozenset() for watch in watches):
        return []  # not one row for these watches (a per-user scope that heard nothing)
    messages: list[Message] = []
    for change in changes:
        shown = tuple(w.projection.fqn for w in watches if _shows(w, change, visible))
        if shown:
            messages.append(Message.of(change, shown))
    return messages
