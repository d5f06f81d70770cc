"""Which actions an actor may run on which rows, and why not (docs/http.md, "Availability").

For each row and each action the answer is what the action itself would answer up to its
workflow gate, computed by the same checks in the same order (:mod:`host.runtime.gate`):
the role check, the subject lookup (an unknown row: 404 ``NotFound``), the custom policies
(asked about every row still allowed at once; a :class:`~plugin_api.BatchPolicy` in one
call), the workflow gate. What only running the action tells (its inputs, the references
they name, a refusal its effect raises) is not foreseen: a dry run tells it.

Cost: one statement reading the whole rows; when an action has custom policies, one
transaction (always rolled back) in which they run, with whatever they read themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from host.fieldtypes import coerce_write
from host.graph.model import CompiledAction, CompiledEntity, Graph
from host.query.conditions import Condition
from host.query.spec import ID_COLUMN
from host.runtime.actor import Actor
from host.runtime.context import InvocationContext
from host.runtime.data import DataRuntime
from host.runtime.gate import Refusal, policy_refusals, role_refusal, state_refusal
from host.runtime.rollback import rolled_back
from host.storage import Schema, Storage, Tx
from host.storage.store import EntityStore
from plugin_api.errors import NotFound

__all__ = ["ENABLED", "Availability", "Table", "verdict"]

Table = dict[str, dict[str, Refusal]]
"""Row id -> action FQN -> its refusal (``None``: enabled)."""

ENABLED: Final = {"enabled": True}


def verdict(refusal: Refusal) -> dict[str, Any]:
    """The JSON of one cell: ``{"enabled": true}`` or ``{"enabled": false, "kind", "message"}``."""
    if refusal is None:
        return ENABLED
    return {"enabled": False, "kind": refusal.kind, "message": refusal.message}


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
        ids = list(dict.fromkeys(ids))
        if not actions or not ids:
            return {row_id: {} for row_id in ids}
        entity = actions[0].entity
        assert all(a.entity is entity and a.kind != "create" for a in actions)
        store = self._store
        render = store.renderer(entity.fqn)
        by_role = {a.fqn: role_refusal(a, actor) for a in actions}
        asked = [a for a in actions if by_role[a.fqn] is None and a.definition.policies]
        state = entity.workflow.state_field if entity.workflow is not None else None
        rows = None if asked else _states(entity, state, ids, shown)
        positional: dict[str, Sequence[Any]] = {}
        if rows is None:
            found = await store.find(
                self._storage,
                entity.fqn,
                actor.tenant_id,
                (Condition(ID_COLUMN, "in", tuple(ids)),),
                limit=len(ids),
            )
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
        return table


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
