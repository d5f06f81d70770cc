"""What a list projection lets a client filter, sort and search (ViewSchema 1.1.0).

A :class:`~plugin_api.definitions.Projection` may carry a :class:`ListOptions`::

    Projection(
        fqn="helpdesk.ticket.queue",
        entity="helpdesk.ticket",
        fields=("id", "title", "priority", "state", "created_at"),
        listing=ListOptions(
            filters=(Filter(field="state"), Filter(field="title", operators=("contains",))),
            sortable=("created_at", "priority"),
            default_sort=("-created_at",),
            search=("title",),
            default_page_size=50,
        ),
    )

The host validates the declarations when it compiles the graph (unknown field, an operator
that does not fit the field's type, a sort on an unsortable field, page sizes out of range)
and reports every problem with the plugin named. The declarations are part of the graph hash,
and the host creates the indexes that serve them (docs/http.md, "Lists").
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Final

from plugin_api._base import _as_tuples
from plugin_api.conditions import Operator

__all__ = [
    "MAX_PAGE_SIZE",
    "Filter",
    "FilterOperator",
    "ListOptions",
    "Operator",
]

MAX_PAGE_SIZE: Final = 1000
"""The default (and largest allowed) maximum page size of a projection."""


FilterOperator = Operator
"""Deprecated name of :class:`plugin_api.conditions.Operator` (the same enum)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Filter:
    """A field a client may filter a list on.

    :param field: a declared field of the projection's entity, or the system field ``id``,
        ``created_at`` or ``updated_at``.
    :param operators: the operators allowed (names or :class:`Operator` members);
        ``None`` (the default) allows every operator that fits the field's type.
    :param label: explicit label for renderers; without one, the field's label.
    """

    field: str
    operators: tuple[Operator | str, ...] | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        # Like every definition: a list becomes a tuple, an operator name its member (what
        # is not an operator is left for the graph compiler to report).
        _as_tuples(self, "operators")
        if isinstance(self.operators, tuple):
            members: list[Operator | str] = []
            for op in self.operators:
                with contextlib.suppress(ValueError, TypeError):
                    op = Operator(op)
                members.append(op)
            object.__setattr__(self, "operators", tuple(members))


@dataclass(frozen=True, kw_only=True, slots=True)
class ListOptions:
    """Filtering, sorting, search and paging of a list projection.

    :param filters: the filterable fields, in the order renderers show them.
    :param sortable: fields a client may sort on (``sort=f1,-f2``); ``id`` always breaks ties.
    :param default_sort: sort keys used when a request sends no ``sort`` (``-`` for
        descending), each naming a sortable field; empty means ``id`` order.
    :param search: string fields the ``q`` parameter searches (case-insensitive substring).
    :param default_page_size: page size of a ViewSchema 1.1.0 request that sends no
        ``pageSize``; ``None``: such a request gets every row.
    :param max_page_size: the largest ``pageSize`` accepted (1 to :data:`MAX_PAGE_SIZE`).
    :param indexes: composite indexes for frequent combinations, each naming two or more
        filterable or sortable fields: equality filters first, then a sort field. Every
        filterable and sortable field gets an index of its own anyway; ``("state",
        "created_at")`` also makes ``filter.state=open&sort=-created_at`` one index range.
    """

    filters: tuple[Filter, ...] = ()
    sortable: tuple[str, ...] = ()
    default_sort: tuple[str, ...] = ()
    search: tuple[str, ...] = ()
    default_page_size: int | None = None
    max_page_size: int = MAX_PAGE_SIZE
    indexes: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        _as_tuples(self, "filters", "sortable", "default_sort", "search", "indexes")
        if isinstance(self.indexes, tuple):
            indexes = tuple(tuple(i) if isinstance(i, list) else i for i in self.indexes)
            object.__setattr__(self, "indexes", indexes)
