"""Idempotent actions: an ``Idempotency-Key`` request header makes a retried action safe.

The first successful answer to a key is stored with the key **in the action's own
transaction** (one more statement after the row and its audit record), so a crash keeps
both or neither. A later request with the same key, from the same tenant and actor, within
the retention window:

* with the same action and body: gets the stored answer, byte for byte, and nothing runs;
* with another action or body: 422 ``IdempotencyKeyReused``, and nothing runs.

Only successes are stored: a refused action changed nothing, so its retry simply runs again.
Concurrent duplicates give one effect: they all miss the look-up and run, but the key's
primary key lets only one transaction commit; the others fail on it (or lose the optimistic
lock of an update to the first), roll back entirely, and answer the stored response.

Expired keys are ignored by the look-up, deleted one by one when reused, and purged in the
background in small batches, each its own short transaction, so expiry never holds the write
lock for long.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa

from host import jsonio
from host.fieldtypes import format_datetime, now_db
from host.graph.model import CompiledAction
from host.runtime.actor import ANONYMOUS, Actor
from host.runtime.engine import ActionRuntime, Outputs
from host.storage import Schema, Statement, StatementFailed, Storage, Tx, sql
from plugin_api.errors import BadRequest, IdempotencyKeyReused, InternalError, TesseraError

__all__ = [
    "HEADER",
    "MAX_KEY_LENGTH",
    "IdempotencyStore",
    "fingerprint",
    "parse_key",
    "run_once",
]

logger = logging.getLogger("tessera.idempotency")

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
PURGE_BATCH = 500
_COLUMNS = ("tenant_id", "actor_id", "key", "fingerprint", "response", "created_at")


def parse_key(values: Sequence[str]) -> str | None:
    """The ``Idempotency-Key`` sent (``None`` when absent): 1 to 255 visible ASCII
    characters, sent once (or repeated with the same value)."""
    if not values:
        return None
    if len(set(values)) > 1:
        raise BadRequest(f"Header {HEADER} was sent more than once with different values")
    key = values[0]
    if not 0 < len(key) <= MAX_KEY_LENGTH or not all("!" <= c <= "~" for c in key):
        raise BadRequest(
            f"Header {HEADER} must be 1 to {MAX_KEY_LENGTH} visible ASCII characters "
            "(a UUID or ULID is a good key)"
        )
    return key


def keyed(actor: Actor, anonymous_shared: bool) -> bool:
    """Whether ``actor``'s keys are stored and replayed: not for a caller without
    ``X-Actor-Id`` (the actor ``anon``, anyone), unless ``TESSERA_ANONYMOUS_SHARED``."""
    return anonymous_shared or actor.actor_id != ANONYMOUS


def fingerprint(fqn: str, body: Mapping[str, Any]) -> str:
    """What "the same request" means: the action and the body, keys in any order."""
    canonical = json.dumps(
        [fqn, body], sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str
    )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def success_body(outputs: Outputs) -> bytes:
    """The body of a successful action's answer (what is stored and replayed)."""
    return jsonio.dumps({"ok": True, "outputs": outputs})


@dataclass(frozen=True, slots=True)
class Stored:
    fingerprint: str
    response: bytes


class IdempotencyStore:
    """The ``tessera_idempotency`` table of one storage."""

    def __init__(self, storage: Storage, schema: Schema, retention_s: int) -> None:
        self._storage = storage
        self._table = schema.idempotency
        self._retention = timedelta(seconds=retention_s)
        self._insert = sql.insert(storage.dialect, self._table.name, _COLUMNS)

    def cutoff(self, now: datetime | None = None) -> str:
        """Keys created before this time have expired."""
        return format_datetime((now or datetime.now(timezone.utc)) - self._retention)

    def _where(self, actor: Actor, key: str) -> sa.ColumnElement[bool]:
        t = self._table.c
        return sa.and_(t.tenant_id == actor.tenant_id, t.actor_id == actor.actor_id, t.key == key)

    async def lookup(self, actor: Actor, key: str) -> Stored | None:
        """The live record of ``key``; an expired one is deleted and ``None`` returned."""
        t = self._table
        row = await self._storage.fetch_one(
            sa.select(t.c.fingerprint, t.c.response, t.c.created_at).where(self._where(actor, key))
        )
        if row is None:
            return None
        cutoff = self.cutoff()
        if row["created_at"] >= cutoff:
            return Stored(row["fingerprint"], str(row["response"]).encode())

        async def drop(tx: Tx) -> None:
            await tx.execute(t.delete().where(self._where(actor, key), t.c.created_at < cutoff))

        await self._storage.transaction(drop)
        return None

    def record(self, actor: Actor, key: str, print_: str) -> Callable[[Outputs], Statement]:
        """The statement that stores the answer built from an action's outputs."""

        def statement(outputs: Outputs) -> Statement:
            response = success_body(outputs).decode()
            values = (actor.tenant_id, actor.actor_id, key, print_, response, now_db())
            return self._insert, values

        return statement

    async def purge(self, now: datetime | None = None, batch: int = PURGE_BATCH) -> int:
        """Delete expired keys, ``batch`` per transaction; the number deleted."""
        t = self._table
        cutoff = self.cutoff(now)
        pk = sa.tuple_(t.c.tenant_id, t.c.actor_id, t.c.key)
        expired = sa.select(t.c.tenant_id, t.c.actor_id, t.c.key).where(t.c.created_at < cutoff)
        statement = t.delete().where(pk.in_(expired.limit(batch))).returning(t.c.key)
        total = 0
        while True:

            async def one_batch(tx: Tx) -> int:
                return len(await tx.fetch_all(statement))

            deleted = await self._storage.transaction(one_batch)
            total += deleted
            if deleted < batch:
                return total
            await asyncio.sleep(0)  # let writers in between batches

    async def purge_forever(self, interval_s: float) -> None:
        """:meth:`purge` every ``interval_s`` seconds, the first time one interval after
        startup (a failure is logged, not fatal)."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                deleted = await self.purge()
                if deleted:
                    logger.info("purged %d expired idempotency keys", deleted)
            except Exception:
                logger.warning("idempotency key purge failed", exc_info=True)


async def run_once(
    store: IdempotencyStore,
    runtime: ActionRuntime,
    action: CompiledAction,
    actor: Actor,
    subject_id: str | None,
    inputs: Mapping[str, Any],
    key: str,
    print_: str,
) -> tuple[bytes, bool]:
    """Run ``action`` at most once for ``key``: (the answer's body, whether it is a replay).

    :raises IdempotencyKeyReused: the key is stored for another request.
    """
    stored = await store.lookup(actor, key)
    if stored is None:
        try:
            outputs = await runtime.run(
                action, actor, subject_id, inputs, record=store.record(actor, key, print_)
            )
            return success_body(outputs), False
        except (TesseraError, StatementFailed) as exc:
            # A concurrent duplicate may have committed first: this one then failed on the
            # key (or lost the update's optimistic lock to it) and was rolled back.
            stored = await store.lookup(actor, key)
            if stored is None:
                if isinstance(exc, StatementFailed):
                    raise InternalError() from exc
                raise
    if stored.fingerprint != print_:
        raise IdempotencyKeyReused(
            f"{HEADER} '{key}' was already used with another action or body; "
            "use a new key for a new request"
        )
    return stored.response, True
