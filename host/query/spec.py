"""A projection's list declarations, resolved against its entity once at startup."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as attribute
from types import MappingProxyType
from typing import Final

from host.fieldtypes import IDENTITY, ValueType
from host.graph.follow import follow
from host.graph.listing import listed_type, operator_names
from host.graph.model import CompiledEntity, CompiledProjection
from host.systemfields import SYSTEM
from plugin_api.definitions import Field, FieldType
from plugin_api.listing import MAX_PAGE_SIZE, ListOptions

__all__ = [
    "ID_COLUMN",
    "Column",
    "FilterSpec",
    "ListSpec",
    "SortKey",
    "entity_column",
    "list_spec",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Column:
    """A column a list may be filtered or sorted on."""

    name: str
    type: ValueType
    """How its values are parsed, compared and sorted (:mod:`host.fieldtypes`)."""
    field: Field
    """The declared field; a stand-in of the right type for ``id``/``created_at``/``updated_at``
    (used to parse filter values as action inputs are parsed)."""
    nullable: bool
    """Whether the column may hold null (every declared field column may)."""
    via: str | None = None
    """The reference field followed to reach the column (``project`` of ``project.key``);
    ``None``: a column of the entity's own table."""
    target: CompiledEntity | None = attribute(default=None, compare=False)
    """The entity ``via`` points at."""

    @property
    def source(self) -> str:
        """The column's name in its own table (``key`` of ``project.key``)."""
        return self.name if self.via is None else self.name.partition(".")[2]


FACET_TYPES: Final = frozenset({FieldType.ENUM, FieldType.BOOLEAN, FieldType.REFERENCE})
"""The field types a list can count rows by value of (``facet``)."""

DATE_BUCKETS: Final = {"year": 4, "month": 7, "day": 10}
"""The buckets a list can count rows of a datetime field by (``facet=<field>.<bucket>``, UTC),
each with the length of the prefix of the canonical datetime text that names it."""

ID_COLUMN: Final = Column(name="id", type=IDENTITY, field=IDENTITY.stand_in("id"), nullable=False)
"""The system field ``id``, the final key of every sort."""


@dataclass(frozen=True, slots=True)
class Facet:
    """What ``facet=`` counts rows by: the values of a column, or the buckets (``year``,
    ``month``, ``day``) of a datetime column."""

    column: Column
    bucket: str | None = None

    @property
    def name(self) -> str:
        """As written in the ``facet`` parameter and keyed in ``data.facets``: ``state``,
        ``created_at.month``."""
        return self.column.name if self.bucket is None else f"{self.column.name}.{self.bucket}"


@dataclass(frozen=True, kw_only=True, slots=True)
class FilterSpec:
    column: Column
    operators: tuple[str, ...]
    label: str | None


@dataclass(frozen=True, slots=True)
class SortKey:
    """One key of a sort: a column, descending or not."""

    column: Column
    descending: bool

    @property
    def text(self) -> str:
        """As written in the ``sort`` parameter: ``-created_at``."""
        return f"-{self.column.name}" if self.descending else self.column.name


@dataclass(frozen=True, kw_only=True, slots=True)
class ListSpec:
    """What a list render of one projection accepts."""

    projection: CompiledProjection
    filters: Mapping[str, FilterSpec]
    """Declared filters by field name, in declaration order."""
    sortable: Mapping[str, Column]
    default_sort: tuple[SortKey, ...]
    search: tuple[Column, ...]
    default_page_size: int | None
    max_page_size: int
    declared: bool
    """Whether the projection declares any list options (``listing`` is not None)."""
    indexes: tuple[tuple[Column, ...], ...] = ()
    """Declared composite indexes."""

    @property
    def facetable(self) -> Mapping[str, Facet]:
        """What ``facet`` may name: filters with ``eq`` on an enum, boolean or reference field
        (few values, each a filter a client can apply next), and the year, month and day
        buckets of every filtered datetime field (each a ``gte``/``lt`` range)."""
        facets: dict[str, Facet] = {}
        for name, declared in self.filters.items():
            field_type = declared.column.field.type
            if field_type is FieldType.DATETIME:
                for bucket in DATE_BUCKETS:
                    facet = Facet(declared.column, bucket)
                    facets[facet.name] = facet
            elif "eq" in declared.operators and name not in SYSTEM and field_type in FACET_TYPES:
                facets[name] = Facet(declared.column)
        return facets

    @property
    def fqn(self) -> str:
        return self.projection.fqn

    def column(self, name: str) -> Column:
        """Any filterable, sortable or searched column (or ``id``) by name."""
        if name in self.sortable:
            return self.sortable[name]
        if name in self.filters:
            return self.filters[name].column
        return _column(self.projection, name)


def entity_column(entity: CompiledEntity, name: str) -> Column | None:
    """The column ``name`` of ``entity`` as lists and conditions see it; ``None`` when it
    cannot be filtered or sorted on (``tenant_id``, ``_version``, unknown names). A followed
    name (``project.key``) is the target's column, reached through the reference."""
    followed = follow(entity, name)
    if followed is not None:
        reference, target, source = followed
        inner = entity_column(target, source) if "." not in source else None
        if inner is None:
            return None
        return Column(
            name=name,
            type=inner.type,
            field=inner.field,
            nullable=True,
            via=reference,
            target=target,
        )
    value_type = listed_type(entity, name)
    if value_type is None:
        return None
    if name in entity.fields:
        return Column(name=name, type=value_type, field=entity.fields[name], nullable=True)
    return Column(name=name, type=value_type, field=value_type.stand_in(name), nullable=False)


def _column(projection: CompiledProjection, name: str) -> Column:
    column = entity_column(projection.entity, name)
    assert column is not None, name  # the compiler checked every declared name
    return column


def list_spec(projection: CompiledProjection) -> ListSpec:
    """Resolve ``projection``'s (validated) list declarations, without the filters and
    search of its withheld fields (:attr:`CompiledProjection.withheld`)."""
    listing = projection.definition.listing
    options = listing if listing is not None else ListOptions()
    withheld = projection.withheld
    filters = {
        declared.field: FilterSpec(
            column=(column := _column(projection, declared.field)),
            operators=operator_names(declared, column.type),
            label=declared.label,
        )
        for declared in options.filters
        if declared.field not in withheld
    }
    sortable = {name: _column(projection, name) for name in options.sortable}
    default_sort = tuple(
        SortKey(sortable[key.removeprefix("-")], key.startswith("-"))
        for key in options.default_sort
    )
    return ListSpec(
        projection=projection,
        filters=MappingProxyType(filters),
        sortable=MappingProxyType(sortable),
        default_sort=default_sort,
        search=tuple(_column(projection, name) for name in options.search if name not in withheld),
        default_page_size=options.default_page_size,
        max_page_size=min(options.max_page_size, MAX_PAGE_SIZE),
        declared=listing is not None,
        indexes=tuple(
            tuple(_column(projection, name) for name in index) for index in options.indexes
        ),
    )
