"""Arming and cancelling timers in the transaction of the write that causes it (issue 41;
docs/timers.md).

Given a row before and after a write, :meth:`Arming.statements` answers the statements to add
to the write's transaction: one cancel of the row's pending timers that no longer apply (the
state it left, a field value that changed), then one arm per timer that now applies. A write
that touches neither the state nor a timed field adds nothing, nor does an entity without
timers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from host.fieldtypes import format_datetime, parse_datetime, render_datetime
from host.graph.model import CompiledEntity, Graph
from host.graph.timerdefs import CompiledTimer
from host.runtime.actor import Actor
from host.storage.dialects import Dialect
from host.storage.store import Written
from host.storage.timers import ROW_COLUMNS, TimerStatements
from host.storage.tx import Statement, Tx
from host.systemfields import new_ulid
from plugin_api.timers import FieldTimer, StateTimer

__all__ = ["Arming", "Plan", "Schedule", "arm_within", "schedule", "scheduled"]

Plan = tuple[list[str], list[tuple[CompiledTimer, str, str]]]
"""What a write does to a row's timers: those it cancels (by name), those it arms (timer,
key, due time)."""
Schedule = dict[str, list[dict[str, Any]]]
"""The JSON of a :data:`Plan` (ViewSchema 1.5.0): ``{"arm": [...], "cancel": [...]}``."""


def _later(now: str, after: timedelta) -> str:
    parsed = parse_datetime(now)
    assert parsed is not None
    return format_datetime(parsed + after)


class Arming:
    """The timer statements of writes, for one graph."""

    def __init__(self, graph: Graph, dialect: Dialect) -> None:
        self._by_entity = graph.timers.by_entity
        self.sql = TimerStatements(dialect)

    def timed(self, entity: CompiledEntity) -> bool:
        """Whether some timer is declared on ``entity``."""
        return entity.fqn in self._by_entity

    def armed(
        self,
        entity: CompiledEntity,
        actor: Actor,
        subject: str,
        before: Mapping[str, Any] | None,
        written: Written,
        now: str,
    ) -> tuple[Statement, ...]:
        """:meth:`statements` of a row's write (``before``: the row read, ``None`` for a
        create)."""
        if not self.timed(entity):
            return ()
        after = written.values if before is None else {**before, **written.values}
        return self.statements(
            entity, actor.tenant_id, subject, before, after, written.version, now
        )

    def statements(
        self,
        entity: CompiledEntity,
        tenant: str,
        subject: str,
        before: Mapping[str, Any] | None,
        after: Mapping[str, Any],
        version: str,
        now: str,
    ) -> tuple[Statement, ...]:
        """What the write of ``subject`` (``before``: ``None`` for a create; database
        values) adds to its transaction."""
        cancel, arm = self.plan(entity, before, after, version, now)
        statements: list[Statement] = []
        if cancel:
            statements.append(self.sql.cancel(tenant, entity.fqn, subject, cancel, now))
        for timer, key, due in arm:
            statements.append(
                self.sql.arm(
                    tenant, new_ulid(), timer.name, entity.fqn, subject, timer.action, key, due, now
                )
            )
        return tuple(statements)

    def plan(
        self,
        entity: CompiledEntity,
        before: Mapping[str, Any] | None,
        after: Mapping[str, Any],
        version: str,
        now: str,
    ) -> Plan:
        """Which of the row's timers a write cancels (by name) and which it arms (timer,
        key, due time), database values."""
        timers = self._by_entity.get(entity.fqn)
        if not timers:
            return [], []
        workflow = entity.workflow
        state_field = workflow.state_field if workflow is not None else None
        old_state = before.get(state_field) if before is not None and state_field else None
        new_state = after.get(state_field) if state_field else None
        cancel: list[str] = []
        arm: list[tuple[CompiledTimer, str, str]] = []
        for timer in timers:
            definition = timer.definition
            if isinstance(definition, StateTimer):
                if before is not None and old_state == new_state:
                    continue
                if before is not None and old_state == definition.state:
                    cancel.append(timer.name)
                if new_state == definition.state:
                    arm.append((timer, version, _later(now, definition.after)))
            elif isinstance(definition, FieldTimer):
                value = after.get(definition.field)
                states = definition.states
                inside = not states or new_state in states
                was_inside = before is not None and (not states or old_state in states)
                changed = before is None or before.get(definition.field) != value
                held = before is not None and before.get(definition.field) is not None
                if was_inside and held and (changed or not inside):  # a null value arms none
                    cancel.append(timer.name)
                if inside and value is not None and value > now and (changed or not was_inside):
                    arm.append((timer, value, value))
        return cancel, arm


async def arm_within(
    arming: Arming | None,
    tx: Tx,
    entity: CompiledEntity,
    actor: Actor,
    before: Mapping[str, Any] | None,
    written: Written,
    now: str,
    *,
    rehearsal: bool,
) -> None:
    """Run the timer statements of a data-API write in its transaction (none in a dry run)."""
    if arming is None or rehearsal:
        return
    for statement in arming.armed(entity, actor, written.id, before, written, now):
        await tx.rows(*statement)


async def scheduled(
    arming: Arming,
    tx: Tx,
    entity: CompiledEntity,
    tenant: str,
    before: Mapping[str, Any] | None,
    written: Written,
    now: str,
) -> Schedule:
    """What a dry run's write would schedule (ViewSchema 1.5.0, docs/timers.md): the timers
    it would ``arm`` and the pending ones it would ``cancel``, each ``{"timer", "action",
    "dueAt"}`` earliest first. ``before``: the row read (``None`` for a create); the pending
    timers are read in ``tx`` (only when the write cancels some)."""
    after = written.values if before is None else {**before, **written.values}
    plan = arming.plan(entity, before, after, written.version, now)
    pending: Sequence[Sequence[Any]] = ()
    if plan[0]:
        pending = await tx.rows(*arming.sql.of_subject(tenant, entity.fqn, written.id))
    return schedule(plan, pending)


def schedule(plan: Plan, pending: Sequence[Sequence[Any]]) -> Schedule:
    """The JSON of a :meth:`Arming.plan`: the timers it arms, earliest first, and those of
    the row's ``pending`` timers (rows of :meth:`TimerStatements.of_subject`) it cancels,
    each ``{"timer", "action", "dueAt"}``."""
    cancel, arm = plan
    armed = [
        _described(timer.name, timer.action, due)
        for timer, _key, due in sorted(arm, key=lambda item: item[2])
    ]
    columns = ("tenant_id", *ROW_COLUMNS)
    timer_at, action_at, due_at = (columns.index(c) for c in ("timer", "action", "due_at"))
    cancelled = [
        _described(row[timer_at], row[action_at], row[due_at])
        for row in pending
        if row[timer_at] in cancel
    ]
    return {"arm": armed, "cancel": cancelled}


def _described(timer: str, action: str, due: str) -> dict[str, Any]:
    return {"timer": timer, "action": action, "dueAt": render_datetime(due)}
