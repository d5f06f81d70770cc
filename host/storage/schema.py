"""The SQL schema derived from the compiled graph (SQLAlchemy Core)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import sqlalchemy as sa

from host.graph.model import CompiledEntity, Graph
from host.values import column_type

AUDIT_TABLE = "tessera_audit"
SEQUENCE_TABLE = "tessera_sequences"

ULID_LENGTH = 26
DATETIME_LENGTH = 27


def _entity_table(metadata: sa.MetaData, entity: CompiledEntity) -> sa.Table:
    columns: list[sa.Column[object]] = [
        # (tenant_id, id) is the primary key: per-tenant scans in id order and (tenant, id)
        # lookups are both served by it, with no second index.
        sa.Column("tenant_id", sa.Text, primary_key=True),
        sa.Column("id", sa.String(ULID_LENGTH), primary_key=True),
        sa.Column("created_at", sa.String(DATETIME_LENGTH), nullable=False),
        sa.Column("updated_at", sa.String(DATETIME_LENGTH), nullable=False),
        sa.Column("_version", sa.String(ULID_LENGTH), nullable=False),
    ]
    columns.extend(
        sa.Column(field.name, column_type(field), nullable=True) for field in entity.fields.values()
    )
    return sa.Table(entity.table_name, metadata, *columns, sqlite_with_rowid=False)


def _audit_table(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        AUDIT_TABLE,
        metadata,
        # A database-assigned sequence gives the commit order; ULIDs are not ordered across
        # processes.
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("id", sa.String(ULID_LENGTH), nullable=False, unique=True),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("actor_id", sa.Text, nullable=False),
        sa.Column("roles", sa.Text, nullable=False),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("entity", sa.Text, nullable=False),
        sa.Column("subject_id", sa.String(ULID_LENGTH), nullable=False),
        sa.Column("inputs", sa.Text, nullable=False),
        sa.Column("outputs", sa.Text, nullable=False),
        sa.Column("graph_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.String(DATETIME_LENGTH), nullable=False),
        sa.Index("ix_tessera_audit_subject", "tenant_id", "entity", "subject_id"),
    )


def _sequence_table(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        SEQUENCE_TABLE,
        metadata,
        sa.Column("tenant_id", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("value", sa.BigInteger, nullable=False),
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Schema:
    """Every table the host uses for one graph."""

    metadata: sa.MetaData
    entities: Mapping[str, sa.Table]
    """Entity tables by entity FQN."""
    audit: sa.Table
    sequences: sa.Table


def build_schema(graph: Graph) -> Schema:
    """Derive the tables of ``graph``: one per entity, plus the audit and sequence tables."""
    metadata = sa.MetaData()
    entities = {fqn: _entity_table(metadata, entity) for fqn, entity in graph.entities.items()}
    return Schema(
        metadata=metadata,
        entities=MappingProxyType(entities),
        audit=_audit_table(metadata),
        sequences=_sequence_table(metadata),
    )
