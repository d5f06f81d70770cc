"""The longest text a field covered by a list index may hold, the same on every backend.

A B-tree index entry has a size limit (PostgreSQL: 2,704 bytes; SQLite has none), so a field a
list projection filters or sorts on (:mod:`host.storage.indexes`) holds at most
:data:`INDEX_TEXT_BUDGET` bytes of UTF-8 text, shared between the ``string`` fields of one
index. A longer value is a 400 ``BadRequest`` naming the field and the limit, on SQLite as on
PostgreSQL (docs/http.md, "Long values in listed fields"); a plugin upgrade that adds an index
over stored longer values is refused at start and by ``tessera check`` alike
(docs/schema-evolution.md). Other types are bounded by their own validation (integers,
datetimes, money amounts of at most 64 characters, enum ranks, reference ids).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

from host.graph.model import Graph
from host.query.spec import Column, entity_column, list_spec
from plugin_api.errors import BadRequest

__all__ = [
    "INDEX_TEXT_BUDGET",
    "IndexGroup",
    "check_text_limits",
    "index_groups",
    "indexed_text_limits",
]

INDEX_TEXT_BUDGET: Final = 2000
"""Bytes of ``string`` values one list index entry may hold (what is left of PostgreSQL's
2,704 goes to the entry's header, the tenant, the other keys and the id)."""
COMPARING: Final = frozenset({"eq", "ne", "in", "lt", "lte", "gt", "gte"})
"""Filter operators an index serves (``contains`` and ``null`` alone get none)."""

IndexGroup = tuple[str, str, tuple[Column, ...]]
"""(entity FQN, table, the indexed columns after ``tenant_id``; ``id`` follows)."""


def index_groups(graph: Graph) -> Iterator[IndexGroup]:
    """Every list index the graph's list projections want (repeats possible)."""
    for projection in graph.projections.values():
        spec = list_spec(projection)
        singles = [*spec.sortable.values()]
        singles += [f.column for f in spec.filters.values() if COMPARING & set(f.operators)]
        entity = projection.entity
        groups = [(column,) for column in singles if column.name != "id"]  # id: the key
        for group in [*groups, *spec.indexes]:
            target = group[0].target
            if target is None:
                yield entity.fqn, entity.table_name, group
                continue
            # A followed field (``project.key``) is indexed on its own entity's table.
            own = entity_column(target, group[0].source)
            if own is not None and own.name != "id":
                yield target.fqn, target.table_name, (own,)


def indexed_text_limits(graph: Graph) -> dict[str, dict[str, int]]:
    """Entity FQN -> ``string`` field -> the most UTF-8 bytes it may hold."""
    limits: dict[str, dict[str, int]] = {}
    for fqn, _, group in index_groups(graph):
        texts = [column.name for column in group if column.type.name == "string"]
        for name in texts:
            fields = limits.setdefault(fqn, {})
            fields[name] = min(fields.get(name, INDEX_TEXT_BUDGET), INDEX_TEXT_BUDGET // len(texts))
    return limits


def check_text_limits(limits: Mapping[str, int], values: Mapping[str, object]) -> None:
    """Refuse a write of a listed ``string`` field longer than its limit.

    :raises BadRequest: naming the field, its length and the limit.
    """
    for name, limit in limits.items():
        value = values.get(name)
        if not isinstance(value, str) or len(value) * 4 <= limit:
            continue  # at most 4 bytes a character: short enough without encoding
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise BadRequest(
                f"Field {name!r} is {size} bytes long (UTF-8); a field a list filters or "
                f"sorts on holds at most {limit} bytes"
            )
