"""Validation of read access declarations (:class:`plugin_api.ReadAccess`) of projections and
of entities (a read floor), and the warning when the projections of one entity disagree."""

from __future__ import annotations

from collections.abc import Mapping

from host.graph.checks import Say, check_roles, duplicates, names_of
from host.graph.follow import follow
from host.graph.model import CompiledEntity, CompiledProjection
from plugin_api.access import ReadAccess, RowScope
from plugin_api.definitions import Field, FieldType

__all__ = ["check_access", "read_floor_warnings", "scope_field"]


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
    entities: Mapping[str, CompiledEntity], projections: Mapping[str, CompiledProjection]
) -> tuple[str, ...]:
    """One warning per entity without a read floor whose projections disagree: one restricts
    its readers (``access``) while another does not, so the restriction protects nothing
    (the other shows the same rows to anyone)."""
    warnings = []
    for fqn, entity in entities.items():
        if entity.definition.access is not None:
            continue
        own = [p for p in projections.values() if p.entity.fqn == fqn]
        restricted = sorted(p.fqn for p in own if p.definition.access is not None)
        open_ = sorted(p.fqn for p in own if p.definition.access is None)
        if restricted and open_:
            warnings.append(
                f"{entity.plugin.describe()}: entity {fqn!r}: projection(s) "
                f"{', '.join(map(repr, restricted))} restrict their readers but "
                f"{', '.join(map(repr, open_))} show the same rows without a restriction; "
                "declare the restriction on the entity (Entity(access=ReadAccess(...))) so "
                "every projection inherits it, or on each projection"
            )
    return tuple(warnings)
