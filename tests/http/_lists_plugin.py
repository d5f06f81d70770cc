"""An in-test plugin for list tests: entity ``lab.thing`` with a field of every type, a
list projection declaring every filter, sort and search, a twin projection, and one that
declares nothing."""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import (
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    Filter,
    ListOptions,
    Projection,
    UpdateAction,
    hookimpl,
)

THING = "lab.thing"
FIELDS = ("name", "note", "count", "due", "level", "price", "flag")
SORTABLE = (*FIELDS, "created_at", "id")
LISTING = ListOptions(
    filters=(
        *(Filter(field=name) for name in FIELDS),
        Filter(field="created_at"),
        Filter(field="id"),
    ),
    sortable=SORTABLE,
    search=("name", "note"),
    max_page_size=500,
)


class ListsPlugin:
    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=THING,
                fields=(
                    Field(name="name", type=FieldType.STRING),
                    Field(name="note", type=FieldType.STRING, nullable=True),
                    Field(name="count", type=FieldType.INTEGER, nullable=True),
                    Field(name="due", type=FieldType.DATETIME, nullable=True),
                    Field(
                        name="level",
                        type=FieldType.ENUM,
                        options=("low", "mid", "high"),
                        nullable=True,
                    ),
                    Field(name="price", type=FieldType.MONEY, currency="EUR", nullable=True),
                    Field(name="flag", type=FieldType.BOOLEAN, nullable=True),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{THING}.create", entity=THING, inputs=FIELDS),
            UpdateAction(fqn=f"{THING}.edit", entity=THING, patchable=FIELDS),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        shown = ("id", *FIELDS, "created_at")
        return (
            Projection(fqn=f"{THING}.list", entity=THING, fields=shown, listing=LISTING),
            Projection(fqn=f"{THING}.twin", entity=THING, fields=shown, listing=LISTING),
            Projection(fqn=f"{THING}.bare", entity=THING, fields=("id", "name")),
            Projection(
                fqn=f"{THING}.paged",
                entity=THING,
                fields=("id", "name"),
                listing=ListOptions(
                    sortable=("name",), default_sort=("-name",), default_page_size=2
                ),
            ),
        )
