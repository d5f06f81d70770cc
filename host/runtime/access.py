"""Read access control of projections: roles, row scope and read policies (docs/http.md,
"Read access").

:meth:`ReadGate.conditions` decides before anything is read: it refuses a reader without one of
the projection's roles (403 ``PolicyDenied``), runs the projection's read policies, and returns
the typed row conditions the reader's rows must match (the row scope and the policies'
conditions). The storage layer puts them in the same ``WHERE`` as the list's filters, as bound
parameters; nothing of a policy's result is ever SQL text.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from host.graph.listing import listed_type
from host.graph.model import CompiledProjection, Graph
from host.query.params import Condition, fold
from host.query.spec import ListSpec
from host.runtime.actor import Actor
from plugin_api.access import ReadContext, RowCondition
from plugin_api.errors import BadRequest, InternalError, PolicyDenied
from plugin_api.listing import FilterOperator

__all__ = ["ReadGate", "offered_actions"]


def offered_actions(projection: CompiledProjection, actor: Actor) -> frozenset[str]:
    """The FQNs of the projection's actions ``actor`` could invoke by role."""
    return frozenset(
        action.fqn
        for action in projection.actions
        if not action.definition.roles or not actor.roles.isdisjoint(action.definition.roles)
    )


def _operand(spec: ListSpec, name: str, value: object) -> object:
    column = spec.column(name)
    return column.type.operand(column.field, value)


def _typed(spec: ListSpec, condition: RowCondition, policy: str) -> Condition:
    """A policy's row condition as a list :class:`Condition` (values in database form)."""
    where = f"Read policy {policy!r} returned a row condition on {condition.field!r}"
    name = condition.field
    value_type = listed_type(spec.projection.entity, name) if isinstance(name, str) else None
    operator = condition.operator
    if value_type is None:
        raise InternalError(f"{where}, which cannot be filtered on")
    if not isinstance(operator, FilterOperator) or operator.value not in value_type.operators:
        raise InternalError(f"{where} with operator {operator!r}, which does not fit its type")
    column = spec.column(name)
    value = condition.value
    try:
        if operator is FilterOperator.NULL:
            if not isinstance(value, bool):
                raise BadRequest("operator 'null' expects true or false")
            return Condition(column, "null", (value,))
        if operator is FilterOperator.IN:
            values = value if isinstance(value, tuple) else (value,)
            operands = dict.fromkeys(_operand(spec, name, item) for item in values)
            return Condition(column, "in", tuple(operands))
        operand = _operand(spec, name, value)
        if operator is FilterOperator.CONTAINS:
            operand = fold(str(operand))
        return Condition(column, operator.value, (operand,))
    except BadRequest as error:
        raise InternalError(f"{where} whose value does not fit: {error.message}") from None


class ReadGate:
    """Decides who reads which rows of each projection of a graph."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph

    async def conditions(
        self, projection: CompiledProjection, actor: Actor, spec: ListSpec, subject: str | None
    ) -> tuple[Condition, ...]:
        """The row conditions of ``actor``'s read of ``projection`` (empty: every row).

        :raises PolicyDenied: the actor lacks every role the projection requires, or a read
            policy denies.
        """
        access = projection.definition.access
        if access is None:
            return ()
        fqn = projection.fqn
        if access.roles and actor.roles.isdisjoint(access.roles):
            raise PolicyDenied(
                f"Projection '{fqn}' requires one of the roles: {', '.join(access.roles)}"
            )
        found: list[Condition] = []
        scope = access.scope
        if scope is not None and actor.roles.isdisjoint(scope.exempt):
            found.append(Condition(spec.column(scope.field), "eq", (actor.actor_id,)))
        context = ReadContext(
            tenant_id=actor.tenant_id,
            actor_id=actor.actor_id,
            roles=actor.roles,
            projection=projection.definition,
            subject=subject,
        )
        for name in access.policies:
            result = self._graph.read_policies[name].handler(context)
            if inspect.isawaitable(result):
                result = await result
            if result is True:
                continue
            conditions: Sequence[object]
            if isinstance(result, RowCondition):
                conditions = (result,)
            elif isinstance(result, (tuple, list)) and result:
                conditions = result
            else:
                raise PolicyDenied(f"Read policy '{name}' denied projection '{fqn}'")
            for condition in conditions:
                if not isinstance(condition, RowCondition):
                    raise InternalError(f"Read policy {name!r} returned {condition!r}")
                found.append(_typed(spec, condition, name))
        return tuple(found)
