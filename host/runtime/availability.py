"""Which actions an actor may run on which rows, and why not (docs/http.md, "Availability").

For each row and each action the answer is what the action itself would answer up to its
workflow gate, computed by the same checks in the same order (:mod:`host.runtime.gate`):
the role check, the subject lookup (an unknown row: 404 ``NotFound``), the custom policies
(asked about every row still allowed at once; a :class:`~plugin_api.BatchPolicy` in one
call), the workflow gate, then the declared rules (plugin API 1.10): the action's
``requires`` and its entity's invariants, by the one evaluator
(:mod:`host.runtime.requirements`). What only running the action tells (its inputs, the
references they name, a refusal its effect raises in undeclared code) is not foreseen: a dry
run tells it, and :meth:`Availability.certain` says when that can happen.

Cost: one statement reading the whole rows; when an action has custom policies, one
transaction (always rolled back) in which they run, with whatever they read themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from host.fieldtypes import coerce_write, now_db
from host.graph.model import CompiledAction, CompiledEntity, Graph
from host.graph.rules import stampable_fields
from host.query.conditions import Condition
from host.query.spec import ID_COLUMN
from host.runtime.actor import Actor
from host.runtime.context import InvocationContext
from host.runtime.data import DataRuntime
from host.runtime.gate import Refusal, policy_refusals, role_refusal, state_refusal
from host.runtime.requirements import refusals
from host.runtime.rollback import rolled_back
from host.runtime.timers import Arming, Schedule, schedule
from host.runtime.writerules import transition_row
from host.storage import Schema, Storage, Tx
from host.storage.store import EntityStore
from plugin_api.definitions import TransitionAction, UpdateAction
from plugin_api.errors import NotFound
from plugin_api.requirements import effect_refusals

__all__ = ["ENABLED", "Availability", "Schedules", "Table", "foreseeable", "verdict"]

Table = dict[str, dict[str, Refusal]]
"""Row id -> action FQN -> its refusal (``None``: enabled)."""
Schedules = dict[str, dict[str, Schedule]]
"""Row id -> enabled transition FQN -> what it would schedule (:func:`schedule`)."""

ENABLED: Final = {"enabled": True}


def verdict(
    refusal: Refusal, certain: bool | None = None, timers: Schedule | None = None
) -> dict[str, Any]:
    """The JSON of one cell: ``{"enabled": true}`` or ``{"enabled": false, "kind", "message"}``;
    with ``certain`` (ViewSchema 1.5.0) a ``certain`` key too: an enabled cell is certain
    when nothing undeclared can still refuse, a refused cell always is. ``timers``: what an
    enabled cell's action would schedule (1.5.0, a transition on an entity with timers)."""
    if refusal is None:
        if certain is None:
            return ENABLED
        enabled: dict[str, Any] = {"enabled": True, "certain": certain}
        return enabled if timers is None else {**enabled, "timers": timers}
    cell = {"enabled": False, "kind": refusal.kind, "message": refusal.message}
    return cell if certain is None else {**cell, "certain": True}


class Availability:
    """Answers availability tables for the actions of one graph."""

    def __init__(
        self,
        graph: Graph,
        storage: Storage,
        schema: Schema,
        store: EntityStore,
        data: DataRuntime,
    ) -> None:
        self._graph = graph
        self._storage = storage
        self._schema = schema
        self._store = store
        self._data = data

    async def table(
        self,
        actions: Sequence[CompiledAction],
        actor: Actor,
        ids: Sequence[str],
        shown: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Table:
        """Every ``ids`` row's refusal by each of ``actions`` (subject actions of one entity).

        ``shown``: the rows as just read (read shape, by id), e.g. a page of a projection.
        When no custom policy is to be asked and they hold the workflow's state field, the
        gate is asked about their state and nothing more is read.
        """
        table, _rows = await self._judged(actions, actor, ids, shown)
        return table

    async def foreseen(
        self, actions: Sequence[CompiledAction], actor: Actor, ids: Sequence[str]
    ) -> tuple[Table, Schedules]:
        """:meth:`table` (rows read), and what each enabled transition would schedule on its
        row if run now (ViewSchema 1.5.0, docs/timers.md): only for an entity with timers.
        Cost beyond :meth:`table`: one read of a row's pending timers when one of its
        transitions would cancel some; none for an entity without timers."""
        table, rows = await self._judged(actions, actor, ids, None)
        arming = self._data.timers
        transitions = [a for a in actions if a.kind == "transition"]
        if arming is None or not transitions or not arming.timed(transitions[0].entity):
            return table, {}
        now = now_db()
        schedules: Schedules = {}
        for row_id, cells in table.items():
            enabled = [a for a in transitions if cells[a.fqn] is None]
            if enabled:
                schedules[row_id] = await self._scheduled(
                    arming, enabled, actor, row_id, rows[row_id], now
                )
        return table, schedules

    async def _scheduled(
        self,
        arming: Arming,
        transitions: Sequence[CompiledAction],
        actor: Actor,
        row_id: str,
        row: Mapping[str, Any],
        now: str,
    ) -> dict[str, Schedule]:
        """What each of ``transitions`` would arm and cancel on ``row`` (database values)
        without inputs: the row it would write is its target state and stamps."""
        plans = {
            a.fqn: arming.plan(a.entity, row, _foreseen(a, row, actor, now), "", now)
            for a in transitions
        }
        pending: Sequence[Sequence[Any]] = ()
        if any(cancel for cancel, _arm in plans.values()):
            entity = transitions[0].entity.fqn
            pending = await self._storage.rows(
                *arming.sql.of_subject(actor.tenant_id, entity, row_id)
            )
        return {fqn: schedule(plan, pending) for fqn, plan in plans.items()}

    async def _judged(
        self,
        actions: Sequence[CompiledAction],
        actor: Actor,
        ids: Sequence[str],
        shown: Mapping[str, Mapping[str, Any]] | None,
    ) -> tuple[Table, Mapping[str, Mapping[str, Any]]]:
        """:meth:`table`, and the rows it read (database values, by id; with ``shown``
        maybe only their state)."""
        ids = list(dict.fromkeys(ids))
        if not actions or not ids:
            return {row_id: {} for row_id in ids}, {}
        entity = actions[0].entity
        assert all(a.entity is entity and a.kind != "create" for a in actions)
        store = self._store
        render = store.renderer(entity.fqn)
        by_role = {a.fqn: role_refusal(a, actor) for a in actions}
        asked = [a for a in actions if by_role[a.fqn] is None and a.definition.policies]
        ruled = [a for a in actions if by_role[a.fqn] is None and self._ruled(a)]
        state = entity.workflow.state_field if entity.workflow is not None else None
        rows = None if asked or ruled else _states(entity, state, ids, shown)
        positional: dict[str, Sequence[Any]] = {}
        if rows is None:
            found = await self._found(entity, actor, ids)
            at = render.columns.index("id")
            positional = {str(row[at]): row for row in found}
            rows = {k: dict(zip(render.columns, row, strict=True)) for k, row in positional.items()}
        table: Table = {}
        for row_id in ids:
            missing = NotFound(f"No {entity.fqn} with id '{row_id}' in this tenant")
            table[row_id] = {
                a.fqn: None if row_id in rows else by_role[a.fqn] or missing for a in actions
            }
        present = [row_id for row_id in ids if row_id in rows]
        by_policy: dict[str, list[Refusal]] = {}
        if asked and present:
            rendered = render.many(positional[row_id] for row_id in present)
            subjects = dict(zip(present, rendered, strict=True))

            async def ask(tx: Tx) -> None:
                for action in asked:
                    contexts = [
                        InvocationContext(
                            action=action,
                            actor=actor,
                            subject=subjects[row_id],
                            inputs={},
                            tx=tx,
                            storage=self._storage,
                            schema=self._schema,
                            data=self._data.bind(tx, action, actor, row_id),
                        )
                        for row_id in present
                    ]
                    by_policy[action.fqn] = await policy_refusals(self._graph, action, contexts)

            await rolled_back(self._storage, ask)
        for action in actions:
            refused = by_role[action.fqn]
            policies = by_policy.get(action.fqn)
            gate: dict[object, Refusal] = {}  # the workflow gate's answer, by state
            for index, row_id in enumerate(present):
                refusal = refused
                if refusal is None and policies is not None:
                    refusal = policies[index]
                if refusal is None:
                    row = rows[row_id]
                    key = row[state] if state is not None else None
                    if key not in gate:
                        gate[key] = state_refusal(action, row)
                    refusal = gate[key]
                table[row_id][action.fqn] = refusal
        for action in ruled:
            waiting = [row_id for row_id in present if table[row_id][action.fqn] is None]
            ruling = await self._rules(action, actor, [rows[row_id] for row_id in waiting])
            for row_id, refusal in zip(waiting, ruling, strict=True):
                table[row_id][action.fqn] = refusal
        return table, rows

    def _ruled(self, action: CompiledAction) -> bool:
        """Whether ``action`` has declared rules to foresee (its own, its entity's)."""
        return bool(self._data.requires[action.fqn] or self._data.invariants[action.entity.fqn])

    async def _rules(
        self, action: CompiledAction, actor: Actor, rows: Sequence[Mapping[str, Any]]
    ) -> list[Refusal]:
        """Each row's refusal by the action's declared conditions (on the row as it stands)
        and its entity's invariants (on the row a transition would write: its target state
        and stamps; inputs and effects unknown), by the one evaluator
        (:mod:`host.runtime.requirements`)."""
        if not rows:
            return []
        entity = action.entity
        read = self._data.reader(self._storage)
        found: list[Refusal] = list(
            await refusals(entity, self._data.requires[action.fqn], rows, actor, read)
        )
        invariants = self._data.invariants[entity.fqn]
        waiting = [i for i, refusal in enumerate(found) if refusal is None]
        if invariants and waiting:
            now = now_db()
            foreseen = [_foreseen(action, rows[i], actor, now) for i in waiting]
            later = await refusals(entity, invariants, foreseen, actor, read)
            for i, refusal in zip(waiting, later, strict=True):
                found[i] = refusal
        return found

    def certain(self, action: CompiledAction) -> bool:
        """Whether an enabled answer for ``action`` is certain: nothing but what
        availability checks can refuse it (ViewSchema 1.5.0 ``certain``). Not when its
        effect may refuse in code nothing declared (no :func:`plugin_api.refuses`, or one
        naming errors), its entity has validators, or its declared rules depend on what
        only the request tells (its inputs, or fields its inputs or effect may write)."""
        return foreseeable(self._graph, action, self._data)

    async def _found(
        self, entity: CompiledEntity, actor: Actor, ids: Sequence[str]
    ) -> Sequence[Sequence[Any]]:
        """The rows ``ids`` the questions are about: those of the tenant that the entity's
        read floor admits for ``actor`` (:meth:`Authorities.subject_scope`); any other is
        "not there" (404 ``NotFound``), whether it exists or not."""
        scope = await self._data.authorities.subject_scope(entity, actor)
        if scope is None:
            return ()
        by_id = (Condition(ID_COLUMN, "in", tuple(ids)),)
        return await self._store.find(
            self._storage, entity.fqn, actor.tenant_id, by_id, len(ids), scope
        )


def _foreseen(
    action: CompiledAction, row: Mapping[str, Any], actor: Actor, now: str
) -> Mapping[str, Any]:
    """The row ``action`` would write from ``row`` at ``now`` without inputs or effect: a
    transition's target state and stamps; any other action's row as it stands."""
    transition = action.transition
    if action.kind != "transition" or transition is None:
        return row
    after = dict(row)
    transition_row(
        action.entity, transition, {}, lambda k, v, _: after.__setitem__(k, v), actor, now
    )
    return after


def foreseeable(graph: Graph, action: CompiledAction, data: DataRuntime) -> bool:
    """See :meth:`Availability.certain`."""
    effect = action.definition.effect
    if effect is not None and effect_refusals(graph.effects[effect].handler) != ():
        return False
    entity = action.entity
    if entity.definition.validators:
        return False
    requires, invariants = data.requires[action.fqn], data.invariants[entity.fqn]
    if any(r.uses_inputs for r in (*requires, *invariants)):
        return False
    if not invariants:
        return True
    read = frozenset(name for r in invariants for name in r.reads)
    return effect is None and read.isdisjoint(_written_by_inputs(action))


def _written_by_inputs(action: CompiledAction) -> tuple[str, ...]:
    definition = action.definition
    if isinstance(definition, UpdateAction):
        return definition.patchable
    if isinstance(definition, TransitionAction):
        return stampable_fields(action)
    return ()


def _states(
    entity: CompiledEntity,
    state: str | None,
    ids: Sequence[str],
    shown: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, dict[str, Any]] | None:
    """What the workflow gate reads of each row (its state, as a database value), taken from
    the rows ``shown``; ``None`` when they do not all hold it."""
    if shown is None or not all(row_id in shown for row_id in ids):
        return None
    if state is None:
        return {row_id: {} for row_id in ids}
    if not all(state in shown[row_id] for row_id in ids):
        return None
    field = entity.fields[state]
    try:
        return {row_id: {state: coerce_write(field, shown[row_id][state])} for row_id in ids}
    except Exception:  # a value the field's type no longer accepts: read the rows instead
        return None
