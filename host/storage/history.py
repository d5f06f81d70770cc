"""The graph history table: which graph the database was last prepared for.

One row per graph the database was prepared for (history; the highest ``seq`` is current),
holding the canonical form, its hash, when it was recorded, the plugins (names, distributions,
versions) and a summary of the changes applied on the way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa
from sqlalchemy.schema import CreateTable

from host.fieldtypes import DATETIME_TEXT_LENGTH, now_db
from host.graph.model import Graph
from host.storage.database import Tx

__all__ = ["GRAPH_TABLE", "GraphRecord", "create_history", "latest_record", "record_graph"]

GRAPH_TABLE: Final = "tessera_graph"

_metadata = sa.MetaData()
history_table: Final = sa.Table(
    GRAPH_TABLE,
    _metadata,
    sa.Column(
        "seq",
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column("graph_hash", sa.String(64), nullable=False),
    sa.Column("canonical", sa.Text, nullable=False),
    sa.Column("plugins", sa.Text, nullable=False),
    sa.Column("changes", sa.Text, nullable=False),
    sa.Column("recorded_at", sa.String(DATETIME_TEXT_LENGTH), nullable=False),
)


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphRecord:
    """One row of the history."""

    seq: int
    graph_hash: str
    canonical: str
    plugins: str
    recorded_at: str


async def create_history(tx: Tx) -> None:
    await tx.execute(CreateTable(history_table, if_not_exists=True))


async def latest_record(tx: Tx) -> GraphRecord | None:
    """The current graph of the database (the table must exist)."""
    t = history_table
    row = await tx.fetch_one(
        sa.select(t.c.seq, t.c.graph_hash, t.c.canonical, t.c.plugins, t.c.recorded_at)
        .order_by(t.c.seq.desc())
        .limit(1)
    )
    if row is None:
        return None
    return GraphRecord(
        seq=int(row["seq"]),
        graph_hash=str(row["graph_hash"]),
        canonical=str(row["canonical"]),
        plugins=str(row["plugins"]),
        recorded_at=str(row["recorded_at"]),
    )


def plugins_json(graph: Graph) -> str:
    plugins = [
        {"name": p.name, "distribution": p.distribution, "version": p.version}
        for p in graph.plugins
    ]
    return json.dumps(plugins, sort_keys=True, separators=(",", ":"))


async def record_graph(tx: Tx, graph: Graph, changes: Sequence[str]) -> None:
    """Append ``graph`` as the database's current graph."""
    await tx.execute(
        history_table.insert().values(
            graph_hash=graph.hash,
            canonical=graph.canonical.decode("utf-8"),
            plugins=plugins_json(graph),
            changes=json.dumps(list(changes), separators=(",", ":"), ensure_ascii=False),
            recorded_at=now_db(),
        )
    )
