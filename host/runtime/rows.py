"""Rendering database rows of an entity into the read shapes of spec 2.6."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from host.graph.model import CompiledEntity
from host.values import render, render_system
from plugin_api.definitions import SYSTEM_FIELDS

Renderer = Callable[[Any], Any]


def field_renderer(entity: CompiledEntity, name: str) -> Renderer:
    """The function turning the stored value of column ``name`` into its read shape."""
    if name in SYSTEM_FIELDS:
        return lambda value: render_system(name, value)
    field = entity.fields[name]
    field_type, currency = field.type.value, field.currency
    return lambda value: render(field_type, value, currency)


class RowRenderer:
    """Renders rows of one entity restricted to (and ordered as) a list of columns."""

    __slots__ = ("_pairs", "columns")

    def __init__(self, entity: CompiledEntity, columns: Sequence[str]) -> None:
        self.columns: tuple[str, ...] = tuple(columns)
        self._pairs = tuple((name, field_renderer(entity, name)) for name in self.columns)

    def __call__(self, row: Mapping[str, Any]) -> dict[str, Any]:
        return {name: fn(row[name]) for name, fn in self._pairs}


def all_columns(entity: CompiledEntity) -> tuple[str, ...]:
    """Every column of an entity: system fields first, then declared fields in order."""
    return (*SYSTEM_FIELDS, *entity.fields)
