"""The plugins' migration declarations (``tessera_migrations``), checked against the installed
graph when it is compiled: an entity, field, option or type the graph does not have is an
error naming the plugin; a plugin declares migrations only for its own entities; two
declarations about the same thing are an error naming both plugins. What passes is indexed
as :class:`~host.graph.migrations.Migrations` for the schema evolution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from host.graph.migrations import Conversion, Migrations
from host.graph.model import CompiledEntity
from host.plugins import PluginInfo
from plugin_api.definitions import FieldType
from plugin_api.migrations import (
    ConvertField,
    MapOptions,
    MapStates,
    Migration,
    RenameEntity,
    RenameField,
)

__all__ = ["compile_migrations"]

Say = Callable[[str], None]


class _Builder:
    def __init__(self, entities: Mapping[str, CompiledEntity], errors: list[str]) -> None:
        self.entities = entities
        self.errors = errors
        self.plugin = PluginInfo(name="")
        self.conversions: dict[tuple[str, str, str, str], Conversion] = {}
        self.entity_renames: dict[str, str] = {}
        self.field_renames: dict[tuple[str, str], str] = {}
        self.option_maps: dict[tuple[str, str], Mapping[str, str | None]] = {}
        self.owners: dict[tuple[str, ...], PluginInfo] = {}

    def say(self, subject: str) -> Say:
        return lambda message: self.errors.append(
            f"{self.plugin.describe()}: migration {subject}: {message}"
        )

    def claim(self, key: tuple[str, ...], say: Say) -> bool:
        owner = self.owners.get(key)
        if owner is not None:
            say(f"declared twice (also by {owner.describe()})")
            return False
        self.owners[key] = self.plugin
        return True

    def entity(self, fqn: object, say: Say) -> CompiledEntity | None:
        entity = self.entities.get(fqn) if isinstance(fqn, str) else None
        if entity is None:
            say(f"entity {fqn!r} is not installed")
            return None
        if entity.plugin.name != self.plugin.name:
            say(f"entity {fqn!r} belongs to {entity.plugin.describe()}")
            return None
        return entity

    def add(self, plugin: PluginInfo, item: Migration) -> None:
        self.plugin = plugin
        if isinstance(item, ConvertField):
            self.convert(item)
        elif isinstance(item, RenameField):
            self.rename_field(item)
        elif isinstance(item, RenameEntity):
            say = self.say(f"RenameEntity {item.old!r} -> {item.new!r}")
            if self.entity(item.new, say) is None:
                return
            if item.old in self.entities or not isinstance(item.old, str):
                say(f"the old name {item.old!r} is still an installed entity")
            elif self.claim(("entity", item.old), say):
                self.entity_renames[item.old] = item.new
        else:
            self.map_options(item)

    def convert(self, item: ConvertField) -> None:
        say = self.say(f"ConvertField {item.entity}.{item.field}")
        entity = self.entity(item.entity, say)
        if entity is None:
            return
        target = entity.fields.get(item.field)
        if target is None:
            say(f"no installed field {item.field!r}")
            return
        if not isinstance(item.from_type, FieldType) or not isinstance(item.to_type, FieldType):
            say("from_type and to_type must be field types")
            return
        if item.to_type is not target.type:
            say(f"to_type is {item.to_type.value} but the field is {target.type.value}")
            return
        if item.from_type is item.to_type:
            say("from_type and to_type are the same")
            return
        if (item.mapping is None) == (item.function is None):
            say("give exactly one of mapping and function")
            return
        if item.function is not None and not callable(item.function):
            say("function is not callable")
            return
        key = (item.entity, item.field, item.from_type.value, item.to_type.value)
        if self.claim(("convert", *key), say):
            self.conversions[key] = Conversion(declaration=item, plugin=self.plugin)

    def rename_field(self, item: RenameField) -> None:
        say = self.say(f"RenameField {item.entity}.{item.old} -> {item.new!r}")
        entity = self.entity(item.entity, say)
        if entity is None:
            return
        if item.new not in entity.fields:
            say(f"no installed field {item.new!r}")
        elif not isinstance(item.old, str) or item.old in entity.fields:
            say(f"the old name {item.old!r} is still an installed field")
        elif self.claim(("field", item.entity, item.old), say):
            self.field_renames[(item.entity, item.old)] = item.new

    def map_options(self, item: MapOptions | MapStates) -> None:
        kind = type(item).__name__
        suffix = f".{item.field}" if isinstance(item, MapOptions) else ""
        say = self.say(f"{kind} {item.entity}{suffix}")
        entity = self.entity(item.entity, say)
        if entity is None:
            return
        if isinstance(item, MapStates):
            if entity.workflow is None:
                say("the entity has no workflow")
                return
            name = entity.workflow.state_field
        else:
            name = item.field
        target = entity.fields.get(name)
        if target is None or target.type is not FieldType.ENUM:
            say(f"no installed enum field {name!r}")
            return
        ok = True
        for old, new in item.mapping.items():
            if old in target.options:
                say(f"{old!r} is still an option")
                ok = False
            elif not (new in target.options or (new is None and target.nullable)):
                say(f"maps {old!r} to {new!r}, which is not an option of the field")
                ok = False
        if ok and self.claim(("options", item.entity, name), say):
            self.option_maps[(item.entity, name)] = MappingProxyType(dict(item.mapping))


def compile_migrations(
    declared: Iterable[tuple[PluginInfo, Migration]],
    entities: Mapping[str, CompiledEntity],
    errors: list[str],
) -> Migrations:
    """Check every declaration against the installed ``entities``; problems go to ``errors``."""
    builder = _Builder(entities, errors)
    for plugin, item in declared:
        builder.add(plugin, item)
    return Migrations(
        conversions=MappingProxyType(builder.conversions),
        entity_renames=MappingProxyType(builder.entity_renames),
        field_renames=MappingProxyType(builder.field_renames),
        option_maps=MappingProxyType(builder.option_maps),
    )
