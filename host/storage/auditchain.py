"""Tamper evidence for the audit log: each tenant's records chained by hash, sealed in the
background, with signed checkpoints kept outside the database (docs/history.md, "Tamper
evidence").

* **Chain.** Record *n* of a tenant (in the commit-safe order of :mod:`host.storage.auditlog`)
  has the hash ``sha256(hash(n-1) + "\\n" + canonical JSON of its stored columns)``; the first
  one chains from :data:`GENESIS`. ``seq`` and ``xact`` are positions, not content: they are
  not hashed (a moved record is found by its id).
* **Seals.** :class:`Sealer` appends ``(tenant, n, record id, position, hash)`` rows to
  ``tessera_audit_seals`` in short transactions of its own, reading only records below the
  horizon (never a transaction still open). Actions never wait for it on PostgreSQL; on
  SQLite a seal batch takes the database's one write lock for the time of one batch.
* **Checkpoints.** After a round, one signed line ``{tenant, count, head, at, signature}``
  (HMAC-SHA256 with the operator's key) per tenant that advanced is appended to the file
  the operator names.
* **Verify.** :func:`verify` recomputes a tenant's chain from the stored records and finds the
  first record that differs from its seal or from a checkpoint.
* **Prune.** :func:`prune` removes a tenant's records up to a checkpoint older than the
  retention, keeping that checkpoint's hash as the anchor the chain restarts from.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.schema import CreateTable

from host.config import Settings
from host.fieldtypes import DATETIME_TEXT_LENGTH, ULID_LENGTH, format_datetime, now_db
from host.storage.auditfiles import audit_files
from host.storage.auditlog import STORED, AuditLog, Position
from host.storage.database import Storage, Tx
from host.storage.dialects import Dialect
from host.storage.schema import Schema

__all__ = [
    "GENESIS",
    "Checkpoint",
    "Finding",
    "Sealer",
    "checkpoint_key",
    "configured_checkpoints",
    "create_chain_tables",
    "prune",
    "read_checkpoints",
    "record_hash",
    "seal_forever",
    "sealer_of",
    "verify",
]

logger = logging.getLogger("tessera.audit")

GENESIS: Final = "0" * 64
"""The hash the first record of a tenant chains from."""
SEALS_TABLE: Final = "tessera_audit_seals"
ANCHORS_TABLE: Final = "tessera_audit_anchors"
SEAL_LOCK_KEY: Final = 0x7E55A17  # PostgreSQL advisory lock: one sealer at a time
BATCH: Final = 500
"""Records sealed per transaction."""
_HASHED: Final = tuple(name for name in STORED if name not in ("xact", "seq"))
_ADDED_LATER: Final = frozenset({"via"})
"""Columns hashed only when set, so that records sealed before they existed still verify."""

_metadata = sa.MetaData()
seals_table: Final = sa.Table(
    SEALS_TABLE,
    _metadata,
    sa.Column("tenant_id", sa.Text, primary_key=True),
    sa.Column("n", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("record_id", sa.String(ULID_LENGTH), nullable=False),
    sa.Column("xact", sa.BigInteger, nullable=False),
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
)
anchors_table: Final = sa.Table(
    ANCHORS_TABLE,
    _metadata,
    sa.Column("tenant_id", sa.Text, primary_key=True),
    sa.Column("n", sa.BigInteger, nullable=False),
    sa.Column("record_id", sa.String(ULID_LENGTH), nullable=False),
    sa.Column("xact", sa.BigInteger, nullable=False),
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    sa.Column("pruned_at", sa.String(DATETIME_TEXT_LENGTH), nullable=False),
)


async def create_chain_tables(tx: Tx) -> None:
    """Create the seal and anchor tables if missing."""
    for table in (seals_table, anchors_table):
        await tx.execute(CreateTable(table, if_not_exists=True))


def record_hash(previous: str, stored: Sequence[Any]) -> str:
    """The chain hash of a record (``stored``: its :data:`STORED` columns) after
    ``previous``."""
    content = dict(zip(STORED, stored, strict=True))
    canonical = json.dumps(
        {
            name: content[name]
            for name in _HASHED
            if content[name] is not None or name not in _ADDED_LATER
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(f"{previous}\n{canonical}".encode()).hexdigest()


# -- checkpoints -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A signed statement: ``tenant``'s chain had ``count`` records ending in ``head``."""

    tenant: str
    count: int
    head: str
    at: str = ""

    def _message(self) -> bytes:
        body = {"tenant": self.tenant, "count": self.count, "head": self.head}
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    def signature(self, key: bytes) -> str:
        return hmac.new(key, self._message(), hashlib.sha256).hexdigest()

    def line(self, key: bytes) -> str:
        """The checkpoint as one JSON line, signed with ``key``."""
        body = {
            "tenant": self.tenant,
            "count": self.count,
            "head": self.head,
            "at": self.at,
            "signature": self.signature(key),
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n"


class CheckpointError(ValueError):
    """A checkpoint line that does not parse or whose signature does not match."""


def read_checkpoints(path: Path, key: bytes) -> list[Checkpoint]:
    """Every checkpoint of the file, each signature checked.

    :raises CheckpointError: naming the first bad line.
    """
    found: list[Checkpoint] = []
    with path.open(encoding="utf-8") as lines:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                body = json.loads(text)
                checkpoint = Checkpoint(
                    str(body["tenant"]), int(body["count"]), str(body["head"]), str(body["at"])
                )
                signature = str(body["signature"])
            except (ValueError, KeyError, TypeError) as exc:
                raise CheckpointError(f"{path}:{number}: not a checkpoint ({exc})") from None
            if not hmac.compare_digest(signature, checkpoint.signature(key)):
                raise CheckpointError(f"{path}:{number}: the signature does not match the key")
            found.append(checkpoint)
    return found


def append_checkpoints(path: Path, key: bytes, checkpoints: Iterable[Checkpoint]) -> None:
    """Append signed lines (flushed and synced before returning)."""
    text = "".join(checkpoint.line(key) for checkpoint in checkpoints)
    if not text:
        return
    with path.open("a", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())


async def post_checkpoints(url: str, key: bytes, checkpoints: Iterable[Checkpoint]) -> None:
    """POST each signed checkpoint to ``url`` (a JSON object; a failure is logged: the next
    round's checkpoint covers the same records and more)."""
    import httpx  # only where checkpoints are posted: the CLI starts without it

    async with httpx.AsyncClient(timeout=10.0) as client:
        for checkpoint in checkpoints:
            try:
                response = await client.post(
                    url,
                    content=checkpoint.line(key).encode(),
                    headers={"Content-Type": "application/json"},
                )
                response.raise_for_status()
            except httpx.HTTPError as exc:
                logger.error("audit checkpoint of %s not posted: %s", checkpoint.tenant, exc)


# -- seals ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Head:
    """Where a tenant's chain ends: ``n`` records, the last at ``position`` with ``hash``."""

    n: int
    position: Position | None
    hash: str


_EMPTY: Final = Head(0, None, GENESIS)


class _Statements:
    def __init__(self, dialect: Dialect, audit_table: str) -> None:
        q = dialect.quote
        m = dialect.placeholders(6)
        seals, anchors, audit = q(SEALS_TABLE), q(ANCHORS_TABLE), q(audit_table)
        self.last_seal = (
            f"SELECT n, xact, seq, hash FROM {seals} WHERE tenant_id = {m[0]} "
            "ORDER BY n DESC LIMIT 1"
        )
        self.anchor = (
            f"SELECT n, xact, seq, hash, record_id FROM {anchors} WHERE tenant_id = {m[0]}"
        )
        self.seal = (
            f"INSERT INTO {seals} (tenant_id, n, record_id, xact, seq, hash) "
            f"VALUES ({', '.join(m)})"
        )
        self.seals_after = (
            f"SELECT n, record_id, hash FROM {seals} WHERE tenant_id = {m[0]} AND n > {m[1]} "
            f"ORDER BY n LIMIT {m[2]}"
        )
        self.seal_at = (
            f"SELECT record_id, xact, seq, hash FROM {seals} "
            f"WHERE tenant_id = {m[0]} AND n = {m[1]}"
        )
        self.tenants = f"SELECT DISTINCT tenant_id FROM {audit}"
        # The anchor's own record stays: SQLite would hand its rowid (``seq``) out again if
        # the newest record went, and later records must come after the anchor.
        before = f"tenant_id = {m[0]} AND (xact, seq) < ({m[1]}, {m[2]})"
        self.count_records = f"SELECT COUNT(*) FROM {audit} WHERE {before}"
        self.delete_records = f"DELETE FROM {audit} WHERE {before}"
        self.delete_seals = f"DELETE FROM {seals} WHERE tenant_id = {m[0]} AND n < {m[1]}"
        self.delete_anchor = f"DELETE FROM {anchors} WHERE tenant_id = {m[0]}"
        self.anchor_insert = (
            f"INSERT INTO {anchors} (tenant_id, n, record_id, xact, seq, hash, pruned_at) "
            f"VALUES ({', '.join(dialect.placeholders(7))})"
        )
        self.lock = dialect.exclusive_lock(SEAL_LOCK_KEY)


async def _head(runner: Any, statements: _Statements, tenant: str) -> Head:
    rows = await runner.rows(statements.last_seal, (tenant,))
    if not rows:
        rows = await runner.rows(statements.anchor, (tenant,))
    if not rows:
        return _EMPTY
    n, xact, seq, hash_ = rows[0][:4]
    return Head(int(n), Position(int(xact), int(seq)), str(hash_))


class Sealer:
    """Chains and seals the audit records of every tenant; writes checkpoints."""

    def __init__(
        self,
        storage: Storage,
        schema: Schema,
        *,
        checkpoints: Path | None = None,
        url: str = "",
        key: bytes = b"",
    ) -> None:
        self._storage = storage
        self._url = url
        self._log = AuditLog(storage, schema)
        self._sql = _Statements(storage.dialect, schema.audit.name)
        self._checkpoints = checkpoints
        self._key = key

    async def prepare(self) -> None:
        await self._storage.transaction(create_chain_tables)

    async def tenants(self) -> list[str]:
        return sorted(str(row[0]) for row in await self._storage.rows(self._sql.tenants))

    async def seal_tenant(self, tenant: str, horizon: int) -> Head | None:
        """Seal the tenant's records below ``horizon``; its new head if it advanced."""
        advanced: Head | None = None
        while True:
            head, sealed = await self._storage.transaction(
                lambda tx: self._seal_batch(tx, tenant, horizon)
            )
            if sealed:
                advanced = head
            if sealed < BATCH:
                return advanced

    async def _seal_batch(self, tx: Tx, tenant: str, horizon: int) -> tuple[Head, int]:
        if self._sql.lock is not None:
            await tx.rows(self._sql.lock)
        head = await _head(tx, self._sql, tenant)
        stored = await self._log.stored_after(tx, tenant, head.position, horizon, BATCH)
        statements = []
        n, previous = head.n, head.hash
        position = head.position
        for row in stored:
            n += 1
            previous = record_hash(previous, row)
            position = Position(int(row[0]), int(row[1]))
            statements.append((self._sql.seal, (tenant, n, row[2], row[0], row[1], previous)))
        if statements:
            await tx.batch(statements)
        return Head(n, position, previous), len(statements)

    async def seal_all(self) -> list[Checkpoint]:
        """One round: seal every tenant's final records; write (and return) the checkpoints
        of the tenants that advanced."""
        horizon = await self._log.horizon()
        at = now_db()
        made = []
        for tenant in await self.tenants():
            head = await self.seal_tenant(tenant, horizon)
            if head is not None:
                made.append(Checkpoint(tenant, head.n, head.hash, at))
        if self._checkpoints is not None and self._key:
            append_checkpoints(self._checkpoints, self._key, made)
        if self._url and self._key:
            await post_checkpoints(self._url, self._key, made)
        return made


# -- verification ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """The outcome of verifying one tenant: ``ok``, how many records were checked, and the
    first difference (``record``: the id it names, ``n``: its number in the chain)."""

    tenant: str
    ok: bool
    checked: int
    message: str
    n: int | None = None
    record: str | None = None
    unsealed: int = 0
    """Records after the last seal (never counted as verified)."""
    late: bool = False
    """Whether one of them is older than the sealing interval (then ``ok`` is false)."""

    @property
    def verdict(self) -> str:
        """``ok``, ``UNSEALED`` (records left unsealed too long) or ``DIFFERS``."""
        return "ok" if self.ok else "UNSEALED" if self.late else "DIFFERS"

    def as_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "ok": self.ok,
            "checked": self.checked,
            "message": self.message,
            "n": self.n,
            "record": self.record,
            "unsealed": self.unsealed,
        }


async def _pages(
    read: Callable[[Any], Any], key: Callable[[Sequence[Any]], Any]
) -> AsyncIterator[Sequence[Any]]:
    after: Any = None
    while True:
        rows = await read(after)
        for row in rows:
            yield row
        if len(rows) < BATCH:
            return
        after = key(rows[-1])


async def verify(
    storage: Storage,
    schema: Schema,
    tenant: str,
    checkpoints: Sequence[Checkpoint] = (),
    *,
    interval: float = 0.0,
) -> Finding:
    """Recompute ``tenant``'s chain from its stored records and compare it with the seals
    and the ``checkpoints`` (of any tenant; this one's are used); the first difference is
    named. Records after the last seal are counted, never verified: one written more than
    ``interval`` seconds (the sealing interval; 0: sealing is off) ago fails the tenant.
    Reads a bounded number of records at a time."""
    sql = _Statements(storage.dialect, schema.audit.name)
    log = AuditLog(storage, schema)
    horizon = await log.horizon()
    anchor_rows = await storage.rows(sql.anchor, (tenant,))
    start = _EMPTY
    if anchor_rows:
        n, xact, seq, hash_, _record = anchor_rows[0]
        start = Head(int(n), Position(int(xact), int(seq)), str(hash_))
    marks = {c.count: c for c in checkpoints if c.tenant == tenant}
    if start.n in marks and marks[start.n].head != start.hash:
        return Finding(tenant, False, 0, f"the anchor at #{start.n} differs from its checkpoint")
    last_mark = max((c for c in marks if c > start.n), default=start.n)

    records = _pages(
        lambda after: log.stored_after(storage, tenant, after or start.position, horizon, BATCH),
        lambda row: Position(int(row[0]), int(row[1])),
    )
    seals = _pages(
        lambda after: storage.rows(sql.seals_after, (tenant, after or start.n, BATCH)),
        lambda row: int(row[0]),
    )
    n, previous = start.n, start.hash
    unsealed: Sequence[Any] | None = None
    pending_seal: Sequence[Any] | None = await anext(seals, None)
    async for row in records:
        n += 1
        record_id = str(row[2])
        previous = record_hash(previous, row)
        seal = pending_seal
        if seal is None:
            if n <= last_mark:
                return Finding(
                    tenant,
                    False,
                    n - 1,
                    f"record {record_id} (#{n}) was never sealed",
                    n,
                    record_id,
                )
            n -= 1
            unsealed = row  # the records after the last seal: nothing to compare
            break
        pending_seal = await anext(seals, None)
        if int(seal[0]) != n:
            return Finding(
                tenant,
                False,
                n - 1,
                f"records #{n} to #{int(seal[0]) - 1} were removed with their seals",
                n,
            )
        if str(seal[1]) != record_id:
            following = None if pending_seal is None else str(pending_seal[1])
            if following == record_id:
                message = f"record {seal[1]} (#{n}) was removed"
                named = str(seal[1])
            else:
                message = f"record {record_id} at #{n} was not sealed there (sealed: {seal[1]})"
                named = record_id
            return Finding(tenant, False, n - 1, message, n, named)
        if str(seal[2]) != previous:
            return Finding(
                tenant,
                False,
                n - 1,
                f"record {record_id} (#{n}) changed after sealing",
                n,
                record_id,
            )
        mark = marks.get(n)
        if mark is not None and mark.head != previous:
            return Finding(
                tenant,
                False,
                n - 1,
                f"the chain at #{n} differs from its signed checkpoint (records and seals "
                "both rewritten at or before it)",
                n,
                record_id,
            )
    else:
        if pending_seal is not None:
            return Finding(
                tenant,
                False,
                n,
                f"record {pending_seal[1]} (#{pending_seal[0]}) was removed",
                int(pending_seal[0]),
                str(pending_seal[1]),
            )
    if n < last_mark:
        return Finding(tenant, False, n, f"records #{n + 1} to #{last_mark} were removed", n + 1)
    verified = f"{n - start.n} records verified up to #{n}"
    if unsealed is None:
        return Finding(tenant, True, n - start.n, verified)
    return await _unsealed(tenant, n - start.n, n + 1, verified, unsealed, records, interval)


_WRITTEN: Final = STORED.index("created_at")


async def _unsealed(
    tenant: str,
    checked: int,
    n: int,
    verified: str,
    first: Sequence[Any],
    rest: AsyncIterator[Sequence[Any]],
    interval: float,
) -> Finding:
    """The finding of a tenant whose newest records (``first`` and ``rest``) are not sealed:
    ok while every one of them is younger than the sealing ``interval``; ``n``: the number
    of ``first`` in the chain."""
    count, oldest = 1, str(first[_WRITTEN])
    async for row in rest:
        count += 1
        oldest = min(oldest, str(row[_WRITTEN]))
    due = format_datetime(datetime.now(timezone.utc) - timedelta(seconds=interval))
    if oldest >= due and interval > 0:
        return Finding(
            tenant, True, checked, f"{verified}; {count} newer not sealed yet", unsealed=count
        )
    return Finding(
        tenant,
        False,
        checked,
        f"{verified}; {count} not sealed, the oldest written at {oldest} "
        f"(sealing interval {interval:g} s): unverified",
        n,
        str(first[2]),
        unsealed=count,
        late=True,
    )


# -- retention ----------------------------------------------------------------------------------


async def prune(
    storage: Storage,
    schema: Schema,
    tenant: str,
    before: str,
    checkpoints: Sequence[Checkpoint],
    progress: Callable[[str], None] = lambda _line: None,
) -> int:
    """Remove ``tenant``'s records before the last checkpoint whose record was written
    before ``before`` (database datetime text) and precedes every event still waiting for
    delivery; that record stays, and its seal becomes the anchor the chain continues from.
    Returns how many records went.

    Only sealed, checkpointed records go, so :func:`verify` still holds afterwards."""
    sql = _Statements(storage.dialect, schema.audit.name)
    counts = sorted((c.count for c in checkpoints if c.tenant == tenant), reverse=True)
    audit = storage.dialect.quote(schema.audit.name)
    mark = storage.dialect.placeholders(1)[0]
    created = f"SELECT created_at FROM {audit} WHERE id = {mark}"
    # An event still waiting for delivery needs its record (the dispatcher reads it).
    deliveries = storage.dialect.quote(schema.deliveries.name)
    waiting = await storage.rows(
        f"SELECT a.xact, a.seq FROM {deliveries} d JOIN {audit} a ON a.id = d.event_id "
        f"WHERE d.tenant_id = {mark} ORDER BY a.xact, a.seq LIMIT 1",
        (tenant,),
    )
    keep = Position(int(waiting[0][0]), int(waiting[0][1])) if waiting else None
    for count in counts:
        seal = await storage.rows(sql.seal_at, (tenant, count))
        if not seal:
            continue
        record_id, xact, seq, hash_ = seal[0]
        if keep is not None and Position(int(xact), int(seq)) >= keep:
            continue
        written = await storage.rows(created, (record_id,))
        if written and str(written[0][0]) < before:
            break
    else:
        progress(f"{tenant}: nothing to prune")
        return 0

    async def cut(tx: Tx) -> int:
        if sql.lock is not None:
            await tx.rows(sql.lock)
        ((removed,),) = await tx.rows(sql.count_records, (tenant, xact, seq))
        await tx.batch(
            [
                (sql.delete_anchor, (tenant,)),
                (sql.anchor_insert, (tenant, count, record_id, xact, seq, hash_, now_db())),
                (sql.delete_records, (tenant, xact, seq)),
                (sql.delete_seals, (tenant, count)),
            ]
        )
        return int(removed)

    removed = await storage.transaction(cut)
    progress(
        f"{tenant}: {removed} records before #{count} removed; the chain continues from #{count}"
    )
    return removed


# -- configuration and the background task ---------------------------------------------------


def checkpoint_key(settings: Settings) -> bytes:
    """The checkpoints' signing key (``TESSERA_AUDIT_KEY_FILE`` or the default beside the
    data, :mod:`host.storage.auditfiles`; empty when there is none).

    :raises StartupError: a named key file cannot be read or is empty.
    """
    return audit_files(settings).read_key()


def configured_checkpoints(settings: Settings, given: Path | None = None) -> list[Checkpoint]:
    """The checkpoints of ``given`` (a file the operator names; it must exist) or of the
    settings' checkpoint file (none while it does not exist yet).

    :raises CheckpointError: a line does not parse or is not signed with the key.
    """
    files = audit_files(settings)
    path = given or files.checkpoints
    if path is None or (given is None and not path.exists()):
        return []
    return read_checkpoints(path, files.read_key())


def sealer_of(storage: Storage, schema: Schema, settings: Settings) -> Sealer:
    """The sealer the settings describe (checkpoints written only with a file and a key; a
    default key is made if missing)."""
    files = audit_files(settings)
    key = files.read_key(create=files.checkpoints is not None)
    return Sealer(
        storage, schema, checkpoints=files.checkpoints, url=settings.audit_checkpoint_url, key=key
    )


async def seal_forever(sealer: Sealer, interval: float) -> None:
    """Seal a round every ``interval`` seconds, the first one ``interval`` after the start,
    until cancelled; a failed round is logged and the next one tries again."""
    while True:
        await asyncio.sleep(interval)
        try:
            made = await sealer.seal_all()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("audit sealing round failed")
        else:
            for checkpoint in made:
                logger.info(
                    "audit sealed: tenant %s at #%d",
                    checkpoint.tenant,
                    checkpoint.count,
                    extra={"event": "audit_sealed", "tenant": checkpoint.tenant},
                )
