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
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Final

from host.graph.follow import follow
from host.graph.model import CompiledEntity, CompiledProjection, Graph
from host.query.conditions import (
    AnyOf,
    Clause,
    ConditionError,
    Floor,
    column_of,
    from_value,
    matching,
)
from host.query.conditions import Condition as ListCondition
from host.query.spec import ID_COLUMN, Column, ListSpec
from host.runtime.actor import ANONYMOUS, Actor
from plugin_api.access import ReadAccess, ReadContext
from plugin_api.conditions import AnyOf as PublicAnyOf
from plugin_api.conditions import Condition
from plugin_api.definitions import Projection
from plugin_api.errors import BadRequest, InternalError, PolicyDenied

__all__ = ["ReadGate", "guarded", "hops", "needs_gate", "offered_actions"]


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


logger = logging.getLogger("tessera.access")

NOBODY: Final = ListCondition(ID_COLUMN, "eq", ("",))
"""The row scope of an anonymous reader: no row (no id is empty)."""
IN_MAX_VALUES: Final = 1000
"""The most values a read policy's ``in`` condition may list."""

Resolve = Callable[[object], Column]
"""The column a name of a scope or a condition means (raises :class:`ConditionError`)."""


def hops(projection: CompiledProjection) -> frozenset[str]:
    """The reference fields a read of ``projection`` may follow whatever the reader: its
    followed fields, the references whose target names a display field, its row scopes'
    followed fields (a read policy may add others)."""
    entity = projection.entity
    names = [*projection.definition.fields]
    for access in (entity.definition.access, projection.definition.access):
        if access is not None and access.scope is not None:
            names += access.scope.names
    found = {name.partition(".")[0] for name in names if follow(entity, name) is not None}
    found |= {
        name
        for name in projection.definition.fields
        if name in entity.targets and entity.targets[name].definition.display is not None
    }
    return frozenset(found)


def _floored(entity: CompiledEntity, via: Iterable[str]) -> list[str]:
    return sorted(name for name in via if entity.targets[name].definition.access is not None)


def needs_gate(projection: CompiledProjection) -> bool:
    """Whether a read of ``projection`` asks the :class:`ReadGate`: it is :func:`guarded`,
    or it follows a reference to an entity with a read floor."""
    return guarded(projection) or bool(_floored(projection.entity, hops(projection)))


def _typed(resolve: Resolve, condition: Condition, policy: str) -> ListCondition:
    """A policy's condition in the one condition language (values in database form); a
    condition that cannot be asked is the policy's bug: 500 ``InternalError``."""
    where = f"Read policy {policy!r} returned a row condition on {condition.field!r}"
    try:
        column = resolve(condition.field)
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


def _clause(resolve: Resolve, item: object, policy: str) -> ListCondition | AnyOf:
    if isinstance(item, Condition):
        return _typed(resolve, item, policy)
    if isinstance(item, PublicAnyOf):
        alternatives = item.conditions if isinstance(item.conditions, tuple) else ()
        if alternatives and all(isinstance(c, Condition) for c in alternatives):
            return AnyOf(tuple(_typed(resolve, c, policy) for c in alternatives))
    raise InternalError(f"Read policy {policy!r} returned {item!r}")


def _own_columns(entity: CompiledEntity) -> Resolve:
    """Columns of ``entity``'s own table only (a floor applied through a reference follows
    no further reference)."""

    def resolve(name: object) -> Column:
        if follow(entity, str(name)) is not None:
            raise ConditionError(f"{name!r} follows a reference a second time")
        return column_of(entity, name)

    return resolve


class ReadGate:
    """Decides who reads which rows of each projection of a graph."""

    def __init__(self, graph: Graph, *, anonymous_shared: bool = False) -> None:
        self._graph = graph
        self._anonymous_shared = anonymous_shared
        """Whether the actor ``anon`` (no ``X-Actor-Id``) is one reader for row scopes (the
        old behaviour) rather than nobody."""

    async def conditions(
        self, projection: CompiledProjection, actor: Actor, spec: ListSpec, subject: str | None
    ) -> tuple[Clause, ...]:
        """The row conditions of ``actor``'s read of ``projection`` (empty: every row): those
        of the entity's read floor (``Entity.access``), then the projection's own, then a
        :class:`~host.query.conditions.Floor` per followed reference whose entity has a read
        floor (what ``actor`` reads through it).

        :raises PolicyDenied: the actor lacks every role the floor or the projection
            requires, or a read policy denies.
        """
        found: list[Clause] = []
        context = ReadContext(
            tenant_id=actor.tenant_id,
            actor_id=actor.actor_id,
            roles=actor.roles,
            projection=projection.definition,
            subject=subject,
        )
        resolve: Resolve = lambda name: column_of(projection.entity, name)  # noqa: E731
        for access in (projection.entity.definition.access, projection.definition.access):
            if access is not None:
                found += await self._apply(access, projection.fqn, actor, context, resolve)
        return await self._with_floors(projection.entity, found, hops(projection), actor, context)

    async def entity_conditions(self, entity: CompiledEntity, actor: Actor) -> tuple[Clause, ...]:
        """The row conditions of ``actor``'s read of ``entity`` outside any projection (the
        data API of a plugin that neither owns the entity nor declares a system read, plugin
        API 1.9): its read floor, with the floors of the references it follows. A read
        policy sees a stand-in projection named after the entity (fields ``id``).

        :raises PolicyDenied: the floor's roles or a read policy deny.
        """
        access = entity.definition.access
        if access is None:
            return ()
        context = ReadContext(
            tenant_id=actor.tenant_id,
            actor_id=actor.actor_id,
            roles=actor.roles,
            projection=Projection(fqn=entity.fqn, entity=entity.fqn, fields=("id",)),
            subject=None,
        )
        resolve: Resolve = lambda name: column_of(entity, name)  # noqa: E731
        found = await self._apply(access, entity.fqn, actor, context, resolve)
        return await self._with_floors(entity, found, frozenset(), actor, context)

    async def _with_floors(
        self,
        entity: CompiledEntity,
        found: list[Clause],
        via: frozenset[str],
        actor: Actor,
        context: ReadContext,
    ) -> tuple[Clause, ...]:
        """``found``, then a :class:`Floor` per reference followed (``via`` and those the
        conditions follow) whose entity has a read floor."""
        followed = set(via)
        for clause in matching(tuple(found)):
            alternatives = clause.alternatives if isinstance(clause, AnyOf) else (clause,)
            followed.update(c.column.via for c in alternatives if c.column.via is not None)
        for name in _floored(entity, followed):
            found.append(await self._floor(entity.targets[name], name, actor, context))
        return tuple(found)

    async def _floor(
        self, target: CompiledEntity, via: str, actor: Actor, context: ReadContext
    ) -> Floor:
        """What ``actor`` reads of ``target`` through the reference ``via``: its read floor
        applied to the target's rows, or nothing when the floor denies."""
        access = target.definition.access
        assert access is not None
        followed = replace(context, subject=None, followed=via)
        try:
            clauses = await self._apply(access, target.fqn, actor, followed, _own_columns(target))
        except PolicyDenied:
            return Floor(via, denied=True)
        except InternalError as error:  # a floor that cannot apply through a reference
            logger.warning("read floor of %s through %r: %s", target.fqn, via, error.message)
            return Floor(via, denied=True)
        return Floor(via, tuple(c for c in clauses if not isinstance(c, Floor)))

    async def _apply(
        self,
        access: ReadAccess,
        fqn: str,
        actor: Actor,
        context: ReadContext,
        resolve: Resolve,
    ) -> list[Clause]:
        if access.roles and actor.roles.isdisjoint(access.roles):
            raise PolicyDenied(
                f"Projection '{fqn}' requires one of the roles: {', '.join(access.roles)}"
            )
        found: list[Clause] = []
        scope = access.scope
        if scope is not None and actor.roles.isdisjoint(scope.exempt):
            if actor.actor_id == ANONYMOUS and not self._anonymous_shared:
                found.append(NOBODY)  # a caller without X-Actor-Id owns no row
            else:
                try:
                    owned = [
                        ListCondition(resolve(name), "eq", (actor.actor_id,))
                        for name in scope.names
                    ]
                except ConditionError as error:
                    raise InternalError(f"Row scope of {fqn!r}: {error}") from None
                found.append(owned[0] if len(owned) == 1 else AnyOf(tuple(owned)))
        for name in access.policies:
            result = self._graph.read_policies[name].handler(context)
            if inspect.isawaitable(result):
                result = await result
            if result is True:
                continue
            conditions: Sequence[object]
            if isinstance(result, (Condition, PublicAnyOf)):
                conditions = (result,)
            elif isinstance(result, (tuple, list)) and result:
                conditions = result
            else:
                raise PolicyDenied(
                    f"Read policy '{name}' denied projection '{context.projection.fqn}'"
                )
            found += [_clause(resolve, condition, name) for condition in conditions]
        return found
