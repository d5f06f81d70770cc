"""Validation of read access declarations (:class:`plugin_api.ReadAccess`) of projections and
of entities (a read floor), the warning when the projections of one entity disagree, and an
empty ``ReadAccess()`` as the declaration of a projection open on purpose (plugin API 1.11)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Final, TypeVar

from host.graph.checks import Say, check_roles, duplicates, names_of
from host.graph.follow import follow
from host.graph.model import CompiledEntity, CompiledProjection
from plugin_api.access import ReadAccess, RowScope
from plugin_api.definitions import Entity, Field, FieldType, Projection

__all__ = ["OPEN_ACCESS_FROM", "check_access", "is_open", "opened", "read_floor_warnings",
           "scope_field"]  # fmt: skip

OPEN_ACCESS_FROM: Final = "1.11"
"""Plugins requiring this plugin API or later declare a projection (or an entity) open on
purpose with an empty ``ReadAccess()``: it reads as without ``access`` (no gate, no read
floor), and the projection counts as open by declaration in :func:`read_floor_warnings`.
For an older plugin an empty ``ReadAccess()`` stays a guarded read (docs/compatibility.md)."""

D = TypeVar("D", Entity, Projection)


def is_open(access: object) -> bool:
    """Whether ``access`` is an empty ``ReadAccess()``: no role, no row scope, no policy."""
    return (
        isinstance(access, ReadAccess)
        and not access.roles
        and access.scope is None
        and not access.policies
    )


def opened(definition: D, modern: bool) -> D:
    """``definition`` as compiled: without its ``access`` when it is an empty ``ReadAccess()``
    and its plugin requires :data:`OPEN_ACCESS_FROM` (``modern``)."""
    if modern and is_open(definition.access):
        return dataclasses.replace(definition, access=None)
    return definition


def scope_field(entity: CompiledEntity, name: object) -> Field | None:
    """The declared field a row scope (or a condition) names: a field of ``entity``, or a
    field of the entity one of its references points at (``project.owner``)."""
    if not isinstance(name, str):
        return None
    followed = follow(entity, name)
    if followed is not None:
        return followed[1].fields.get(followed[2])
    return entity.fields.get(name)


def _check_scope(scope: object, entity: CompiledEntity, say: Say) -> None:
    if not isinstance(scope, RowScope):
        say(f"access.scope must be a RowScope or None, got {type(scope).__name__}")
        return
    if scope.fields is not None and scope.field is not None:
        say("access.scope gives both field and fields; give one")
    names = scope.names if isinstance(scope.fields, (tuple, type(None))) else ()
    if not names:
        say("access.scope names no field (give field, or fields with one or more names)")
    for name in names:
        field = scope_field(entity, name)
        if field is None:
            say(
                f"access.scope field {name!r} is not a declared field of {entity.fqn!r} nor a "
                "field of an entity one of its references points at"
            )
        elif field.type is not FieldType.STRING:
            say(f"access.scope field {name!r} must be a string field (it holds actor ids)")
    for name in duplicates(names):
        say(f"access.scope names {name!r} twice")
    check_roles(scope.exempt, say)


def check_access(
    access: object, entity: CompiledEntity, read_policies: Mapping[str, object], say: Say
) -> None:
    """Report every problem of a projection's ``access`` declarations."""
    if access is None:
        return
    if not isinstance(access, ReadAccess):
        say(f"access must be a ReadAccess or None, got {type(access).__name__}")
        return
    check_roles(access.roles, say)
    if access.scope is not None:
        _check_scope(access.scope, entity, say)
    for name in names_of(access.policies, "access.policies", say):
        if name not in read_policies:
            say(f"uses read policy {name!r}, which no installed plugin implements")


def read_floor_warnings(
    entities: Mapping[str, CompiledEntity],
    projections: Mapping[str, CompiledProjection],
    declared_open: Collection[str] = (),
) -> tuple[str, ...]:
    """One warning per entity without a read floor whose projections disagree: one restricts
    its readers (``access``) while another does not, so the restriction protects nothing
    (the other shows the same rows to anyone). A projection of ``declared_open`` (an empty
    ``ReadAccess()`` of a plugin requiring :data:`OPEN_ACCESS_FROM`) is open on purpose: the
    restriction beside it is a view of the rows, not a protection, and is not warned of."""
    warnings = []
    for fqn, entity in entities.items():
        if entity.definition.access is not None:
            continue
        own = [p for p in projections.values() if p.entity.fqn == fqn]
        restricted = sorted(p.fqn for p in own if p.definition.access is not None)
        open_ = sorted(
            p.fqn for p in own if p.definition.access is None and p.fqn not in declared_open
        )
        if restricted and open_:
            warnings.append(
                f"{entity.plugin.describe()}: entity {fqn!r}: projection(s) "
                f"{', '.join(map(repr, restricted))} restrict their readers but "
                f"{', '.join(map(repr, open_))} show the same rows without a restriction; "
                "declare the restriction on the entity (Entity(access=ReadAccess(...))) so "
                "every projection inherits it, or on each projection; or, requiring plugin "
                f"API {OPEN_ACCESS_FROM}, declare the open ones open on purpose "
                "(access=ReadAccess())"
            )
    return tuple(warnings)
