"""The plugins' migration declarations (``tessera_migrations``), indexed for the schema
evolution: what a :class:`~host.graph.model.Graph` holds once
:mod:`host.graph.migration_checks` has checked them. They stay out of the graph's canonical
form and hash.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from host.plugins import PluginInfo
from plugin_api.migrations import ConvertField

__all__ = ["Conversion", "Migrations"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Conversion:
    """A :class:`~plugin_api.ConvertField` and the plugin that declared it."""

    declaration: ConvertField
    plugin: PluginInfo

    def describe(self) -> str:
        how = "mapping" if self.declaration.mapping is not None else "function"
        return f"{how} of {self.plugin.describe()}"


def _empty() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True, slots=True)
class Migrations:
    """Every declaration of the installed plugins, by what it is about."""

    conversions: Mapping[tuple[str, str, str, str], Conversion] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """(entity, field, from type, to type) -> conversion."""
    entity_renames: Mapping[str, str] = field(default_factory=_empty)
    """Old entity FQN -> newer FQN."""
    field_renames: Mapping[tuple[str, str], str] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """(installed entity FQN, old field name) -> newer field name."""
    option_maps: Mapping[tuple[str, str], Mapping[str, str | None]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """(entity, field) -> removed option -> installed option (``MapStates`` included)."""

    def conversion(self, entity: str, name: str, old: str, new: str) -> Conversion | None:
        return self.conversions.get((entity, name, old, new))

    def renamed_entity(self, old: str, installed: Iterable[str]) -> str | None:
        """The installed FQN ``old`` was renamed to (following chains), or ``None``."""
        return _follow(old, self.entity_renames.get, set(installed))

    def renamed_field(self, entity: str, old: str, installed: Iterable[str]) -> str | None:
        """The installed field ``old`` of ``entity`` was renamed to, or ``None``."""
        return _follow(old, lambda name: self.field_renames.get((entity, name)), set(installed))


def _follow(name: str, step: Callable[[str], str | None], installed: set[str]) -> str | None:
    seen = {name}
    current = step(name)
    while current is not None and current not in seen:
        if current in installed:
            return current
        seen.add(current)
        current = step(current)
    return None
