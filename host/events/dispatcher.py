"""The dispatcher: a background task in every host process that delivers events.

Loop: while fewer than ``TESSERA_EVENTS_CONCURRENCY`` deliveries are in flight, take due
deliveries under a lease (:mod:`host.storage.deliveries`) and start one task per delivery; wait for
one to finish or for the poll interval. Each delivery runs its subscriber (or POSTs its
webhook) under the subscriber's timeout, then deletes the delivery row if the lease is still
its own, or counts a failed attempt (``failed`` with exponential backoff and jitter, ``dead``
after ``TESSERA_EVENTS_MAX_ATTEMPTS``). A transactional subscriber runs inside the unit of work
that deletes the row: its writes and the delivery mark commit together, or not at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Final

import httpx

from host.config import Settings
from host.events import webhooks
from host.runtime.actor import Actor
from host.runtime.data import ActionData, DataRuntime
from host.storage import Closing, NothingMatched, Tx
from host.storage.deliveries import Delivery, DeliveryStore
from host.storage.outbox import now_ms
from host.systemfields import new_ulid
from host.webhook_settings import Webhook
from plugin_api.data import DataAccess
from plugin_api.errors import TesseraError
from plugin_api.events import Event, Subscriber

__all__ = ["Dispatcher", "Outcome", "Target"]

logger = logging.getLogger("tessera.events")

Target = Subscriber | Webhook
Outcome = Callable[[str, str, float], None]
"""Called with (subscriber, ``delivered`` / ``failed`` / ``dead``, seconds since the event)."""

STOP_GRACE_S: Final = 2.0
_EXPECTED: Final = (webhooks.WebhookFailed, TimeoutError, asyncio.TimeoutError, httpx.HTTPError)
"""Failures logged without a traceback."""


def _expected(exc: Exception) -> bool:
    """Whether ``exc`` is a failure logged in one line: a webhook's, a timeout, or a refusal
    of the closed taxonomy (a 4xx kind: the subscriber or its write was refused, as an action
    would be; its kind and message say why). Anything else is logged with its traceback."""
    return isinstance(exc, _EXPECTED) or (isinstance(exc, TesseraError) and exc.status < 500)


@dataclass(frozen=True, slots=True)
class _Context:
    """:class:`plugin_api.events.EventContext` of one delivery."""

    event: Event
    attempt: int
    _data: ActionData | None = None

    @property
    def data(self) -> DataAccess:
        if self._data is None:
            raise RuntimeError("ctx.data is only given to a transactional subscriber")
        return self._data


def _lease_lost(delivery: Delivery) -> None:
    logger.warning(
        "event %s for %s finished after its lease had passed: another process delivers it "
        "again (a transactional subscriber's writes were rolled back)",
        delivery.event.id,
        delivery.subscriber,
    )


def backoff_ms(failures: int, base_s: float, cap_s: float) -> int:
    """Delay before the next attempt after ``failures`` failed ones: ``base * 2**(n-1)``
    capped at ``cap``, times a random factor in [0.5, 1) (jitter spreads retries out)."""
    delay = min(cap_s, base_s * 2 ** min(failures - 1, 62))
    return int(delay * random.uniform(0.5, 1.0) * 1000)


class Dispatcher:
    """Delivers the events of the subscribers and webhooks this process knows."""

    def __init__(
        self,
        store: DeliveryStore,
        targets: Mapping[str, Target],
        settings: Settings,
        data: DataRuntime,
        on_outcome: Outcome | None = None,
    ) -> None:
        self._store = store
        self._targets = dict(targets)
        self._names: Sequence[str] = tuple(sorted(targets))
        self._settings = settings
        self._data = data
        self._on_outcome = on_outcome
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{new_ulid()}"
        self._lease_ms = int(settings.events_lease_s * 1000)
        self._inflight: set[asyncio.Task[None]] = set()
        self._client = httpx.AsyncClient(follow_redirects=False)
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._completed: list[Delivery] = []

    def start(self) -> None:
        """Start the loop (nothing to do when no subscriber or webhook is known)."""
        if self._names and self._task is None:
            self._task = asyncio.ensure_future(self._loop())

    async def stop(self) -> None:
        """Take nothing more, give deliveries in flight a moment, cancel the rest (their
        leases expire and another process delivers them again)."""
        self._stopping.set()
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=STOP_GRACE_S)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for task in list(self._inflight):
            task.cancel()
        if self._inflight:
            await asyncio.wait(set(self._inflight))
        await self._flush()
        await self._client.aclose()

    async def _loop(self) -> None:
        poll = self._settings.events_poll_s
        busy = False
        while not self._stopping.is_set():
            await self._flush()
            room = self._settings.events_concurrency - len(self._inflight)
            taken: list[Delivery] = []
            if room > 0:
                try:
                    # When idle, a cheap read first: no write transaction for nothing.
                    if busy or await self._store.any_due(self._names):
                        taken = await self._store.take(
                            self._names, room, self.owner, self._lease_ms
                        )
                except Exception:
                    logger.exception("taking due event deliveries failed; trying again")
            busy = bool(taken)
            for delivery in taken:
                task = asyncio.ensure_future(self._deliver(delivery))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)
            # Let the batch finish (or the poll interval pass), so that its marks go in one
            # statement and the next batch is taken in one transaction: under load, few
            # write transactions per delivery. A slow handler delays the others by at most
            # one poll interval.
            if self._inflight:
                await asyncio.wait(set(self._inflight), timeout=poll)
            elif not busy:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), poll)
        if self._inflight:
            await asyncio.wait(set(self._inflight))
        await self._flush()

    async def _flush(self) -> None:
        """Delete the rows of the deliveries made since the last flush, in one statement
        (a process killed before this delivers them again: at least once)."""
        if not self._completed:
            return
        completed, self._completed = self._completed, []
        try:
            kept = await self._store.finish_all(completed, self.owner)
        except Exception:
            logger.exception("marking %d events delivered failed", len(completed))
            return
        for delivery in completed:
            if delivery.seq not in kept:
                _lease_lost(delivery)
            self._report(delivery, "delivered" if delivery.seq in kept else "lease_lost")

    async def _deliver(self, delivery: Delivery) -> None:
        target = self._targets[delivery.subscriber]
        attempt = delivery.attempts + 1
        try:
            if isinstance(target, Webhook):
                await asyncio.wait_for(
                    webhooks.post(self._client, target, delivery.event, attempt), target.timeout_s
                )
                kept = await self._store.finish(self._store.done(delivery, self.owner))
            elif target.transactional:
                kept = await self._transactional(target, delivery, attempt)
            else:
                await asyncio.wait_for(
                    target.handler(_Context(delivery.event, attempt)), target.timeout_s
                )
                kept = await self._store.finish(self._store.done(delivery, self.owner))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._failed(delivery, attempt, exc)
            return
        if not kept:
            logger.warning(
                "event %s for %s finished after its lease had passed: another process "
                "delivers it again (a transactional subscriber's writes were rolled back)",
                delivery.event.id,
                delivery.subscriber,
            )
        self._report(delivery, "delivered" if kept else "lease_lost")

    async def _transactional(self, target: Subscriber, delivery: Delivery, attempt: int) -> bool:
        event = delivery.event
        actor = Actor(tenant_id=event.tenant_id, actor_id=target.name, roles=frozenset())

        async def work(tx: Tx) -> Closing[None]:
            plugin = self._data.graph.subscribers[target.name].plugin
            data = ActionData(self._data, tx, event.action, actor, None, plugin=plugin)
            data.writable = True
            await asyncio.wait_for(target.handler(_Context(event, attempt, data)), target.timeout_s)
            return Closing(None, (self._store.done(delivery, self.owner),), guarded=True)

        try:
            await self._store.storage.unit_of_work(work)
        except NothingMatched:
            # The lease passed and another process took the event: the writes are undone
            # here, and that other delivery makes them.
            return False
        return True

    async def _failed(self, delivery: Delivery, attempt: int, exc: Exception) -> None:
        settings = self._settings
        dead = attempt >= settings.events_max_attempts
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        retry_at = now_ms() + backoff_ms(
            attempt, settings.events_backoff_s, settings.events_backoff_max_s
        )
        log = logger.error if dead else logger.warning
        log(
            "event %s for %s: attempt %d failed: %s%s",
            delivery.event.id,
            delivery.subscriber,
            attempt,
            error,
            " (dead)" if dead else "",
            exc_info=not _expected(exc),
        )
        try:
            await self._store.fail(delivery, self.owner, error, dead=dead, retry_at=retry_at)
        except Exception:
            logger.exception("recording the failed delivery of %s failed", delivery.event.id)
        self._report(delivery, "dead" if dead else "failed")

    def _report(self, delivery: Delivery, outcome: str) -> None:
        if self._on_outcome is None:
            return
        try:
            occurred = datetime.strptime(delivery.event.occurred_at, "%Y-%m-%dT%H:%M:%S.%fZ")
        except ValueError:
            lag = 0.0
        else:
            lag = max(0.0, time.time() - occurred.replace(tzinfo=timezone.utc).timestamp())
        self._on_outcome(delivery.subscriber, outcome, lag)
