"""Which rows of a batch each cohort of streams may read (docs/live.md, "Who is told what").

A cohort is the streams of one tenant watching one projection under the same row conditions
(:attr:`Watch.key`). The ids a batch touched are asked through the projection's own read
(:meth:`ProjectionReads.page`, the list's ``WHERE`` with the reader's conditions), one
statement per cohort; a projection without row conditions needs none. Cohorts that differ
only by their row scope's owner (``RowScope``: "the rows whose ``requester`` is me", the
common case, one cohort per user) are asked together: one statement for the rows whose
owner is any of theirs, each row then given to the cohort of its owner.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from host.graph.model import CompiledProjection
from host.live.feed import Change
from host.live.watch import Watch
from host.query.conditions import Clause, Condition
from host.query.params import plain_query
from host.query.spec import ID_COLUMN
from host.storage.reads import ProjectionReads

__all__ = ["Visible", "readable_ids", "visible_ids"]

CHUNK: Final = 400
"""Ids (and owners) asked per statement: with both, under SQLite's 999 parameters."""

Visible = dict[tuple[object, ...], frozenset[str] | None]
"""Per cohort key: the ids it may read (``None``: every id)."""


def _owner(watch: Watch) -> str | None:
    """The owner of a row-scoped cohort whose projection shows the scope's field (its
    condition is the first, ``field = actor``), else ``None``."""
    access = watch.projection.definition.access
    if access is None or access.scope is None or not watch.scope:
        return None
    first = watch.scope[0]
    field = access.scope.field
    if (
        not isinstance(first, Condition)
        or first.column.name != field
        or first.operator != "eq"
        or len(first.values) != 1
    ):
        return None
    if field not in watch.projection.definition.fields:
        return None
    return str(first.values[0])


async def visible_ids(
    reads: ProjectionReads, tenant: str, watches: Iterable[Watch], changes: list[Change]
) -> Visible:
    """For each cohort of ``watches`` whose entity ``changes`` touch: the ids it may read."""
    touched: dict[str, set[str]] = {}
    for change in changes:
        touched.setdefault(change.entity, set()).add(change.id)
    cohorts: dict[tuple[object, ...], Watch] = {}
    for watch in watches:
        if watch.entity in touched:
            cohorts.setdefault(watch.key, watch)
    visible: Visible = {}
    owned: dict[tuple[object, ...], dict[str, tuple[object, ...]]] = {}
    for key, watch in cohorts.items():
        ids = sorted(touched[watch.entity])
        owner = _owner(watch)
        if not watch.scope:
            visible[key] = None
        elif owner is None:
            rows = await _rows(reads, tenant, watch.projection, watch.scope, ids)
            visible[key] = frozenset(str(row["id"]) for row in rows)
        else:  # grouped by everything but the owner
            group = (watch.projection.fqn, Watch(watch.projection, watch.scope[1:]).key)
            owned.setdefault(group, {})[owner] = key
    for owners in owned.values():
        first = cohorts[next(iter(owners.values()))]
        found = {owner: set[str]() for owner in owners}
        head = first.scope[0]
        assert isinstance(head, Condition)  # _owner checked it
        field = head.column
        names = sorted(owners)
        for start in range(0, len(names), CHUNK):
            by_owner = Condition(field, "in", tuple(names[start : start + CHUNK]))
            scope = (by_owner, *first.scope[1:])
            ids = sorted(touched[first.entity])
            for row in await _rows(reads, tenant, first.projection, scope, ids):
                found.setdefault(str(row[field.name]), set()).add(str(row["id"]))
        for owner, key in owners.items():
            visible[key] = frozenset(found[owner])
    return visible


async def readable_ids(
    reads: ProjectionReads, tenant: str, watch: Watch, ids: Iterable[str]
) -> set[str]:
    """Those of ``ids`` that ``watch``'s projection shows its reader now (filters, row scope
    and read policies' conditions): the rows a tracking stream may be told have left."""
    rows = await _rows(reads, tenant, watch.projection, watch.scope, sorted(set(ids)))
    return {str(row["id"]) for row in rows}


async def _rows(
    reads: ProjectionReads,
    tenant: str,
    projection: CompiledProjection,
    scope: tuple[Clause, ...],
    ids: list[str],
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for start in range(0, len(ids), CHUNK):
        chunk = tuple(ids[start : start + CHUNK])
        query = plain_query(scope, conditions=(Condition(ID_COLUMN, "in", chunk),))
        page, _ = await reads.page(projection, tenant, query, len(chunk))
        rows.extend(page)
    return rows
