"""Rendering database rows of an entity into the read shapes of spec 2.6."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Final

from host.fieldtypes import Renderer, ValueType, of
from host.graph.follow import follow
from host.graph.model import CompiledEntity
from host.systemfields import SYSTEM
from plugin_api.definitions import Field

__all__ = ["Renderer", "RowRenderer", "all_columns", "field_renderer"]

_AS_STORED: Final = frozenset({str, type(None)})
"""Types a text column's value is rendered as, unchanged."""


def _typed(entity: CompiledEntity, name: str) -> tuple[ValueType, Field]:
    """The value type of column ``name`` and its field (a system column's stand-in; a
    followed column's type and field are its target's)."""
    followed = follow(entity, name)
    if followed is not None:
        return _typed(followed[1], followed[2])
    system = SYSTEM.get(name)
    if system is not None:
        return system.type, system.field
    field = entity.fields[name]
    return of(field), field


def field_renderer(entity: CompiledEntity, name: str) -> Renderer:
    """The function turning the stored value of column ``name`` into its read shape."""
    value_type, field = _typed(entity, name)
    return value_type.renderer(field)


def _is_text(entity: CompiledEntity, name: str) -> bool:
    """Whether column ``name`` renders as text: a ``str`` (or null) is shown as stored."""
    return _typed(entity, name)[0].as_stored


def _getter(indexes: Sequence[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    if len(indexes) == 1:
        (index,) = indexes
        return lambda row: (row[index],)
    return itemgetter(*indexes)


class RowRenderer:
    """Renders rows of one entity restricted to (and ordered as) a list of columns.

    A row is the driver's positional row (values in ``columns`` order). Text columns holding
    text, the common case, are copied as they are; only the other columns (datetimes,
    money, booleans, integers) go through a renderer."""

    __slots__ = ("_converted", "_text", "_text_at", "columns", "renderers")

    def __init__(self, entity: CompiledEntity, columns: Sequence[str]) -> None:
        self.columns: tuple[str, ...] = tuple(columns)
        self.renderers: Mapping[str, Renderer] = {
            name: field_renderer(entity, name) for name in self.columns
        }
        text = [i for i, name in enumerate(self.columns) if _is_text(entity, name)]
        self._text_at = tuple((i, self.columns[i]) for i in text)
        self._text = _getter(text) if text else None
        self._converted = tuple(
            (name, i, self.renderers[name]) for i, name in enumerate(self.columns) if i not in text
        )

    def __call__(self, row: Sequence[Any]) -> dict[str, Any]:
        return self.many((row,))[0]

    def many(self, rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
        """Render every row (one call per list: the per-row work is all inline)."""
        columns, text, converted = self.columns, self._text, self._converted
        as_stored = _AS_STORED.issuperset
        items: list[dict[str, Any]] = []
        append = items.append
        for row in rows:
            item = dict(zip(columns, row, strict=False))  # the row has exactly these columns
            if text is not None and not as_stored(map(type, text(row))):
                for i, name in self._text_at:
                    item[name] = self.renderers[name](row[i])
            for name, i, fn in converted:
                item[name] = fn(row[i])
            append(item)
        return items


def all_columns(entity: CompiledEntity) -> tuple[str, ...]:
    """Every column of an entity: system fields first, then declared fields in order."""
    return (*SYSTEM, *entity.fields)
