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
from typing import Final

from host.graph.model import CompiledProjection, Graph
from host.query.conditions import Condition as ListCondition
from host.query.conditions import ConditionError, column_of, from_value
from host.query.spec import ID_COLUMN, ListSpec
from host.runtime.actor import ANONYMOUS, Actor
from plugin_api.access import ReadAccess, ReadContext
from plugin_api.conditions import Condition
from plugin_api.errors import BadRequest, InternalError, PolicyDenied

__all__ = ["ReadGate", "guarded", "offered_actions"]


def guarded(projection: CompiledProjection) -> bool:
    """Whether reads of ``projection`` go through the :class:`ReadGate`: it or its entity
    (the read floor) declares ``access``."""
    return (
        projection.definition.access is not None or projection.entity.definition.access is not None
    )


def offered_actions(projection: CompiledProjection, actor: Actor) -> frozenset[str]:
    """The FQNs of the projection's actions ``actor`` could invoke by role."""
    return frozenset(
        action.fqn
        for action in projection.actions
        if not action.definition.roles or not actor.roles.isdisjoint(action.definition.roles)
    )


NOBODY: Final = ListCondition(ID_COLUMN, "eq", ("",))
"""The row scope of an anonymous reader: no row (no id is empty)."""
IN_MAX_VALUES: Final = 1000
"""The most values a read policy's ``in`` condition may list."""


def _typed(spec: ListSpec, condition: Condition, policy: str) -> ListCondition:
    """A policy's condition in the one condition language (values in database form); a
    condition that cannot be asked is the policy's bug: 500 ``InternalError``."""
    where = f"Read policy {policy!r} returned a row condition on {condition.field!r}"
    try:
        column = column_of(spec.projection.entity, condition.field)
    except ConditionError:
        raise InternalError(f"{where}, which cannot be filtered on") from None
    try:
        return from_value(column, condition.operator, condition.value, in_max=IN_MAX_VALUES)
    except ConditionError:
        raise InternalError(
            f"{where} with operator {condition.operator!r}, which does not fit its type"
        ) from None
    except BadRequest as error:
        raise InternalError(f"{where} whose value does not fit: {error.message}") from None


class ReadGate:
    """Decides who reads which rows of each projection of a graph."""

    def __init__(self, graph: Graph, *, anonymous_shared: bool = False) -> None:
        self._graph = graph
        self._anonymous_shared = anonymous_shared
        """Whether the actor ``anon`` (no ``X-Actor-Id``) is one reader for row scopes (the
        old behaviour) rather than nobody."""

    async def conditions(
        self, projection: CompiledProjection, actor: Actor, spec: ListSpec, subject: str | None
    ) -> tuple[ListCondition, ...]:
        """The row conditions of ``actor``'s read of ``projection`` (empty: every row): those
        of the entity's read floor (``Entity.access``), then the projection's own.

        :raises PolicyDenied: the actor lacks every role the floor or the projection
            requires, or a read policy denies.
        """
        found: list[ListCondition] = []
        for access in (projection.entity.definition.access, projection.definition.access):
            if access is not None:
                found += await self._apply(access, projection, actor, spec, subject)
        return tuple(found)

    async def _apply(
        self,
        access: ReadAccess,
        projection: CompiledProjection,
        actor: Actor,
        spec: ListSpec,
        subject: str | None,
    ) -> list[ListCondition]:
        fqn = projection.fqn
        if access.roles and actor.roles.isdisjoint(access.roles):
            raise PolicyDenied(
                f"Projection '{fqn}' requires one of the roles: {', '.join(access.roles)}"
            )
        found: list[ListCondition] = []
        scope = access.scope
        if scope is not None and actor.roles.isdisjoint(scope.exempt):
            if actor.actor_id == ANONYMOUS and not self._anonymous_shared:
                found.append(NOBODY)  # a caller without X-Actor-Id owns no row
            else:
                found.append(ListCondition(spec.column(scope.field), "eq", (actor.actor_id,)))
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
            if isinstance(result, Condition):
                conditions = (result,)
            elif isinstance(result, (tuple, list)) and result:
                conditions = result
            else:
                raise PolicyDenied(f"Read policy '{name}' denied projection '{fqn}'")
            for condition in conditions:
                if not isinstance(condition, Condition):
                    raise InternalError(f"Read policy {name!r} returned {condition!r}")
                found.append(_typed(spec, condition, name))
        return found
