"""Validation of a projection's read access declarations (:class:`plugin_api.ReadAccess`)."""

from __future__ import annotations

from collections.abc import Mapping

from host.graph.checks import Say, check_roles, names_of
from host.graph.model import CompiledEntity
from plugin_api.access import ReadAccess, RowScope
from plugin_api.definitions import FieldType

__all__ = ["check_access"]


def _check_scope(scope: object, entity: CompiledEntity, say: Say) -> None:
    if not isinstance(scope, RowScope):
        say(f"access.scope must be a RowScope or None, got {type(scope).__name__}")
        return
    field = entity.fields.get(scope.field) if isinstance(scope.field, str) else None
    if field is None:
        say(f"access.scope.field {scope.field!r} is not a declared field of {entity.fqn!r}")
    elif field.type is not FieldType.STRING:
        say(f"access.scope.field {scope.field!r} must be a string field (it holds actor ids)")
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
