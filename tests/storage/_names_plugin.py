"""A plugin whose names the earlier naming of generated objects could not take: a searched
``key`` (its full-text table was named like the index of ``_search_key``), searched fields
named like another's FTS5 shadow tables (``user`` and ``user_data``), reference fields whose
indexes were named alike (``nm.order.line_item``, ``nm.order_line.item``), entities named
like those objects (``ts_nm.project.key``, ``ix_nm.order_line_item``) or like another's
primary key (``nm.order_pkey``), a ``tx_`` domain, and names at the identifier limits
(tables of 50 characters, fields of 63, alike in all but their last characters).
"""

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
    hookimpl,
)

S, REF = FieldType.STRING, FieldType.REFERENCE

PROJECT = "nm.project"
PERSON = "nm.person"
ORDER = "nm.order"
ORDER_LINE = "nm.order_line"
LONG_A = "nm.long_entity_" + "z" * 29 + "_aaaa"
LONG_B = "nm.long_entity_" + "z" * 29 + "_bbbb"
LONG_FIELD = "long_" + "x" * 53 + "_aaaa"
LONG_LINK = "person_" + "r" * 51 + "_link"

SEARCHED: tuple[str, ...] = (
    "key",
    "name",
    "ids",
    "uuid",
    "key_ai",
    "user",
    "user_data",
    "user_idx",
    "user_config",
    "user_docsize",
    "user_content",
    "pkey",
    "ref",
    "fts",
    "trgm",
    "lst_deadbeef",
    "x_1234abcd",
    "search_key",
    "fold_name",
    "removed_x",
    "mid_" + "y" * 49 + "_end",  # 57: its folded copy's column is 63 long
    "mid_" + "y" * 50 + "_end",  # 58: that column's name is shortened
    LONG_FIELD,
    "long_" + "x" * 53 + "_bbbb",
)
"""The searched string fields of ``nm.project`` (all of them nullable)."""
OTHER_TABLES: tuple[str, ...] = (
    "nm.order_pkey",
    "ts_nm.project.key",
    "ix_nm.order_line_item",
    "tx_nm.thing",
)
"""Entities named like the earlier names of objects of the others."""


def _titled(fqn: str, *more: Field) -> Entity:
    return Entity(fqn=fqn, fields=(Field(name="title", type=S, nullable=True), *more))


def _link(name: str) -> Field:
    return Field(name=name, type=REF, target=PERSON, nullable=True)


class NamesPlugin:
    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        project = Entity(
            fqn=PROJECT, fields=tuple(Field(name=n, type=S, nullable=True) for n in SEARCHED)
        )
        long_fields = (Field(name=LONG_FIELD, type=S, nullable=True), _link(LONG_LINK))
        return (
            project,
            Entity(fqn=PERSON, fields=(Field(name="name", type=S),)),
            _titled(ORDER, _link("line_item")),
            _titled(ORDER_LINE, _link("item")),
            _titled(LONG_A, *long_fields),
            _titled(LONG_B, *long_fields),
            *(_titled(fqn) for fqn in OTHER_TABLES),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{PROJECT}.create", entity=PROJECT, inputs=SEARCHED),
            CreateAction(fqn=f"{PERSON}.create", entity=PERSON, inputs=("name",)),
            CreateAction(fqn=f"{ORDER}.create", entity=ORDER, inputs=("title", "line_item")),
            CreateAction(fqn=f"{ORDER_LINE}.create", entity=ORDER_LINE, inputs=("title", "item")),
            *(
                CreateAction(fqn=f"{fqn}.create", entity=fqn, inputs=("title", LONG_FIELD))
                for fqn in (LONG_A, LONG_B)
            ),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        long_listing = ListOptions(
            search=(LONG_FIELD,),
            sortable=(LONG_FIELD, "title"),
            filters=(Filter(field=LONG_LINK),),
        )
        return (
            Projection(
                fqn=f"{PROJECT}.list",
                entity=PROJECT,
                fields=("id", *SEARCHED),
                listing=ListOptions(
                    search=SEARCHED,
                    sortable=("key", "name", "user_data", *SEARCHED[-2:]),
                    indexes=(("key", "name"),),
                ),
            ),
            Projection(
                fqn=f"{ORDER}.list",
                entity=ORDER,
                fields=("id", "title", "line_item"),
                listing=ListOptions(filters=(Filter(field="line_item"),), sortable=("title",)),
            ),
            Projection(
                fqn=f"{ORDER_LINE}.list",
                entity=ORDER_LINE,
                fields=("id", "title", "item"),
                listing=ListOptions(filters=(Filter(field="item"),)),
            ),
            *(
                Projection(
                    fqn=f"{fqn}.list",
                    entity=fqn,
                    fields=("id", "title", LONG_FIELD, LONG_LINK),
                    listing=long_listing,
                )
                for fqn in (LONG_A, LONG_B)
            ),
            *(
                Projection(
                    fqn=f"{fqn}.list",
                    entity=fqn,
                    fields=("id", "title"),
                    listing=ListOptions(sortable=("title",), search=("title",)),
                )
                for fqn in OTHER_TABLES
            ),
        )


NAMES = NamesPlugin()
"""The one instance every test shares (the shared host keys on it)."""
