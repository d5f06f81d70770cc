"""The write planner: the one place a row's write is planned, whoever writes it (issue 38).

Every write of an entity row follows the same rules in the same order: the values given
are coerced and their fields' ownership checked, the new row seeded or the transition
applied (:mod:`host.runtime.writerules`), then, here, the values not yet checked are checked
as references, the row's write is built by the entity store, the entity's invariants and
validators run on the row as it would be, and the write is closed: its ``changes``, its
audit record, the deliveries of its event and the timers it arms or cancels.

:func:`stage` runs the checks and answers the row's write (a :class:`Staged`); :func:`plan`
closes a staged write into a :class:`Plan`: what to write, the audit record and the
deliveries. The planner runs no statement of the plan: the action chain
(:mod:`host.runtime.engine`) hands it to the storage to commit with its answer; a nested
action, the data API (:mod:`host.runtime.data`) and a dry run's rehearsal run it in the
transaction they are in with :func:`close_within` (a rehearsal: the row's write only).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from host.graph.model import CompiledEntity
from host.plugins import PluginInfo
from host.runtime.actor import Actor
from host.runtime.timers import Arming
from host.runtime.writerules import field_changes
from host.storage import Closing, NothingMatched, Statement, StatementFailed, Tx
from host.storage.outbox import Outbox
from host.storage.store import AuditRecord, EntityStore, Written
from host.systemfields import new_ulid

__all__ = [
    "Announce",
    "Incremented",
    "Plan",
    "Rules",
    "Staged",
    "audited",
    "close_within",
    "plan",
    "stage",
]

Announce = Callable[[Outbox, str, str, str, str], Statement | None]
"""``announce(outbox, event id, tenant id, entity, row id)``: the deliveries of a write's
event, if any (:class:`~host.storage.outbox.Outbox`)."""


class Rules(Protocol):
    """What the planner needs of the data runtime (:class:`host.runtime.data.DataRuntime`)."""

    store: EntityStore
    outbox: Outbox | None
    timers: Arming | None

    async def check_references(
        self, tx: Tx, tenant_id: str, entity: CompiledEntity, values: Mapping[str, Any]
    ) -> None:
        """Refuse a reference to a row that does not exist."""
        ...

    async def validate(
        self,
        tx: Tx,
        entity: CompiledEntity,
        *,
        kind: str,
        transition: str | None,
        before: Mapping[str, Any] | None,
        changes: Mapping[str, Any],
        after: Mapping[str, Any],
        actor: Actor,
        cause: str,
        plugin: PluginInfo | None,
    ) -> None:
        """Refuse a write the entity's invariants or validators refuse."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Staged:
    """A write that passed its checks: ``written``, the row's write (not run), ``before``
    the row as read (``None``: a new row) and ``changes`` the values written (database
    values), by ``actor`` on behalf of the action ``cause``."""

    entity: CompiledEntity
    actor: Actor
    cause: str
    before: Mapping[str, Any] | None
    changes: Mapping[str, Any]
    written: Written
    now: str

    @property
    def after(self) -> Mapping[str, Any]:
        """The whole row after the write (database values)."""
        before = self.before
        return self.written.values if before is None else {**before, **self.written.values}


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """A write, planned: the row's ``write``, its ``audit`` statement (or why it could not
    be built), the ``deliveries`` of its event and the ``timers`` it arms or cancels, in the
    order they run; ``record`` is the audit record (``None`` if it could not be built)."""

    write: Statement
    audit: Statement | Exception
    record: AuditRecord | None
    deliveries: Statement | None
    timers: tuple[Statement, ...]

    def statements(self, store: EntityStore) -> tuple[Statement | Exception, ...]:
        """Every statement, the audit record and the deliveries chained where the dialect
        can (:meth:`EntityStore.closing`)."""
        return (*store.closing(self.write, self.audit, self.deliveries), *self.timers)


async def stage(
    rules: Rules,
    tx: Tx,
    entity: CompiledEntity,
    actor: Actor,
    *,
    before: Mapping[str, Any] | None,
    changes: Mapping[str, Any],
    now: str,
    cause: str,
    plugin: PluginInfo | None,
    transition: str | None = None,
    checked: Mapping[str, Any] | None = None,
) -> Staged:
    """Check and build the write of ``changes`` (database values) to the row ``before``
    (its database values as read, ``None`` for a new row): the references among the values
    not in ``checked`` (checked already, with these values), the row's write, then the
    entity's invariants and validators on the row as it would be (``plugin``: who writes).
    Raises the refusal of the first rule the write breaks."""
    done = checked or {}
    unchecked = {k: v for k, v in changes.items() if k not in done or done[k] != v}
    await rules.check_references(tx, actor.tenant_id, entity, unchecked)
    store, tenant = rules.store, actor.tenant_id
    if before is None:
        written = store.insert(entity.fqn, tenant, changes, now)
    else:
        written = store.update(
            entity.fqn, tenant, before["id"], before["_version"], changes, now, before
        )
    staged = Staged(
        entity=entity,
        actor=actor,
        cause=cause,
        before=before,
        changes=changes,
        written=written,
        now=now,
    )
    kind = "create" if before is None else "update" if transition is None else "transition"
    await rules.validate(
        tx,
        entity,
        kind=kind,
        transition=transition,
        before=before,
        changes=changes,
        after=staged.after,
        actor=actor,
        cause=cause,
        plugin=plugin,
    )
    return staged


def plan(
    rules: Rules,
    staged: Staged,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    *,
    announce: Announce | None,
    rehearsal: bool = False,
) -> Plan:
    """Close ``staged``: its ``changes`` (:func:`field_changes`), its audit record (with
    ``inputs`` and ``outputs`` in read shape), the deliveries ``announce`` answers and the
    timers it arms or cancels (:class:`Arming`); a ``rehearsal`` (a dry run) has neither.
    An audit record that cannot be built is planned as its exception, in its place."""
    written, entity = staged.written, staged.entity
    event_id = new_ulid()
    record: AuditRecord | None
    audit: Statement | Exception
    try:
        made = field_changes(
            rules.store.renderer(entity.fqn), staged.before, staged.changes, written.version
        )
    except Exception as exc:
        record, audit = None, exc
    else:
        record, audit = audited(rules.store, staged, written.id, inputs, outputs, made, event_id)
    outbox = rules.outbox
    deliveries = None
    if announce is not None and outbox is not None and not rehearsal:
        deliveries = announce(outbox, event_id, staged.actor.tenant_id, entity.fqn, written.id)
    timers: tuple[Statement, ...] = ()
    if rules.timers is not None and not rehearsal:
        timers = rules.timers.armed(
            entity, staged.actor, written.id, staged.before, written, staged.now
        )
    return Plan(write=written.statement, audit=audit, record=record, deliveries=deliveries,
                timers=timers)  # fmt: skip


def audited(
    store: EntityStore,
    write: Staged | Incremented,
    row_id: str,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    made: Mapping[str, Any],
    event_id: str | None = None,
) -> tuple[AuditRecord | None, Statement | Exception]:
    """The audit record of a write of row ``row_id`` and its ``INSERT``, or the exception
    that kept it from being built (``made``: the write's changes, :func:`field_changes`)."""
    actor = write.actor
    try:
        record = AuditRecord(
            event_id=event_id or new_ulid(),
            tenant_id=actor.tenant_id,
            actor_id=actor.actor_id,
            roles=actor.roles,
            action=write.cause,
            entity=write.entity.fqn,
            subject_id=row_id,
            inputs=inputs,
            outputs=outputs,
            at=write.now,
            version=made["_version"][1],
            changes=made,
            via=actor.via,
        )
        return record, store.audit(record)
    except Exception as exc:
        return None, exc


@dataclass(frozen=True, kw_only=True, slots=True)
class Incremented:
    """An increment of a counter field the store ran (plugin API 1.8; it is one unguarded
    statement, run at once): by ``actor`` on behalf of the action ``cause``."""

    entity: CompiledEntity
    actor: Actor
    cause: str
    now: str


async def close_within(tx: Tx, closing: Closing[Any], *, rehearsal: bool) -> None:
    """Run the statements a write ends with (a :class:`Plan`'s, as a ``closing``) inside
    the caller's transaction: the row's write (guarded: it must return a row), then the
    rest (a ``rehearsal``, a dry run: none, but a statement that could not be built still
    fails there). A nested action (``ctx.data.run``), a data-API write and a dry run's own
    unit of work close this way; an action the client asked for hands its closing to the
    storage to commit with.

    :raises NothingMatched: the guarded write matched no row.
    :raises StatementFailed: naming the statement's index in ``closing``.
    """
    write, *rest = closing.statements
    (rows,) = await tx.batch((write,))
    if closing.guarded and not rows:
        raise NothingMatched()
    steps = [step for step in rest if not rehearsal or isinstance(step, Exception)]
    if not steps:
        return
    try:
        await tx.batch(steps[:1] if rehearsal else steps)
    except StatementFailed as exc:
        raise StatementFailed(exc.index + 1, exc.error) from exc.error
