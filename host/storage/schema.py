"""The SQL schema derived from the compiled graph (SQLAlchemy Core)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import sqlalchemy as sa

from host.fieldtypes import DATETIME_TEXT_LENGTH as DATETIME_LENGTH
from host.fieldtypes import ULID_LENGTH, column_type
from host.graph.model import CompiledEntity, Graph
from host.storage.dialects import Dialect
from host.storage.names import primary_key, reference_index
from host.storage.timers import timers_table
from host.systemfields import SYSTEM, TABLE_KEY
from plugin_api.definitions import FieldType

AUDIT_TABLE = "tessera_audit"
SEQUENCE_TABLE = "tessera_sequences"
IDEMPOTENCY_TABLE = "tessera_idempotency"
DELIVERIES_TABLE = "tessera_deliveries"
AUDIT_ID_KEY = "uq_tessera_audit_id"
DELIVERIES_EVENT_KEY = "uq_tessera_deliveries_event"
REFERENCE_TABLES = frozenset({"tessera_graph", "tessera_secrets"})
"""The host's tables without ``tenant_id``: small, shared by every tenant (the graph's
history, the cursor secret); on a database distributed by tenant, reference tables."""


def _entity_table(metadata: sa.MetaData, entity: CompiledEntity) -> sa.Table:
    # (tenant_id, id) is the primary key: per-tenant scans in id order and (tenant, id)
    # lookups are both served by it, with no second index. Its columns come first.
    system = [*TABLE_KEY, *(name for name in SYSTEM if name not in TABLE_KEY)]
    columns: list[sa.Column[object]] = [
        sa.Column(name, SYSTEM[name].column_type(), nullable=False) for name in system
    ]
    columns.extend(
        sa.Column(field.name, column_type(field), nullable=True) for field in entity.fields.values()
    )
    # A reference is looked up by (tenant, referenced id): one index per reference field.
    indexes = [
        sa.Index(reference_index_name(entity.table_name, field.name), "tenant_id", field.name)
        for field in entity.fields.values()
        if field.type is FieldType.REFERENCE
    ]
    # Named, not left to PostgreSQL (``<table>_pkey``: the name of the table of an entity
    # ``<fqn>_pkey``); host/storage/names.py.
    key = sa.PrimaryKeyConstraint(*TABLE_KEY, name=primary_key(entity.table_name))
    return sa.Table(entity.table_name, metadata, *columns, key, *indexes, sqlite_with_rowid=False)


def reference_index_name(table: str, column: str) -> str:
    """The index of reference field ``column`` of ``table`` (host/storage/names.py)."""
    return reference_index(table, column)


def _order_key(dialect: Dialect) -> sa.Column[int]:
    """``seq``: a database-assigned sequence, the order rows were written in (SQLite's
    INTEGER PRIMARY KEY is its rowid)."""
    return sa.Column(
        "seq",
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
        primary_key=not dialect.tenant_led_order_keys,
        autoincrement=True,
        nullable=False,
    )


def _tenant_led(dialect: Dialect, table: str) -> tuple[sa.PrimaryKeyConstraint, ...]:
    """The primary key ``(tenant_id, seq)`` where the dialect keys by tenant (else ``seq``
    alone is the key, on its column)."""
    if not dialect.tenant_led_order_keys:
        return ()
    return (sa.PrimaryKeyConstraint("tenant_id", "seq", name=f"{table}_pkey"),)


def _audit_table(metadata: sa.MetaData, dialect: Dialect) -> sa.Table:
    return sa.Table(
        AUDIT_TABLE,
        metadata,
        # ``seq``: a database-assigned sequence. It is the commit order on SQLite (writers are
        # serialised) but not on PostgreSQL (values are taken before commit); readers that walk
        # the log use the position (``xact``, ``seq``) of host/storage/auditlog.py, and the
        # history of one row uses ``seq`` (writes of one row are serialised by its
        # ``_version`` guard). docs/history.md.
        _order_key(dialect),
        sa.Column("id", sa.String(ULID_LENGTH), nullable=False),
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
        # Added by issue 26 (older databases get them at start, host/storage/auditlog.py):
        # the writing transaction's id on PostgreSQL (0 on SQLite and for older records),
        # the row's ``_version`` after the write, and the changed fields' values before and
        # after (JSON, read shapes; null for older records).
        sa.Column("xact", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("version", sa.String(ULID_LENGTH), nullable=True),
        sa.Column("changes", sa.Text, nullable=True),
        # Added by issue 39: the chain of a nested action's record (JSON list of
        # {"action", "plugin"}, outermost first; null for any other record).
        sa.Column("via", sa.Text, nullable=True),
        sa.Index("ix_tessera_audit_subject", "tenant_id", "entity", "subject_id"),
        sa.Index("ix_tessera_audit_row_history", "tenant_id", "entity", "subject_id", "seq"),
        sa.Index("ix_tessera_audit_position", "tenant_id", "xact", "seq"),
        sa.UniqueConstraint("tenant_id", "id", name=AUDIT_ID_KEY),
        *_tenant_led(dialect, AUDIT_TABLE),
    )


def _sequence_table(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        SEQUENCE_TABLE,
        metadata,
        sa.Column("tenant_id", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("value", sa.BigInteger, nullable=False),
    )


def _idempotency_table(metadata: sa.MetaData) -> sa.Table:
    # One row per (tenant, actor, key): the first successful answer to that key, written in
    # the action's own transaction (host/runtime/idempotency.py).
    return sa.Table(
        IDEMPOTENCY_TABLE,
        metadata,
        sa.Column("tenant_id", sa.Text, primary_key=True),
        sa.Column("actor_id", sa.Text, primary_key=True),
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("response", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(DATETIME_LENGTH), nullable=False),
        sa.Index("ix_tessera_idempotency_created", "created_at"),
    )


def _deliveries_table(metadata: sa.MetaData, dialect: Dialect) -> sa.Table:
    # One row per (event, subscriber) still to deliver, written in the action's own
    # transaction (host/storage/outbox.py); deleted once delivered. ``seq`` orders the events
    # of one subject; times are Unix milliseconds (host/storage/deliveries.py).
    millis = sa.BigInteger
    return sa.Table(
        DELIVERIES_TABLE,
        metadata,
        _order_key(dialect),
        sa.Column("event_id", sa.String(ULID_LENGTH), nullable=False),
        sa.Column("subscriber", sa.Text, nullable=False),
        sa.Column("tenant_id", sa.Text, nullable=False),
        sa.Column("entity", sa.Text, nullable=False),
        sa.Column("subject_id", sa.String(ULID_LENGTH), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_at", millis, nullable=False),
        sa.Column("lease_owner", sa.Text, nullable=True),
        sa.Column("lease_until", millis, nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("created_at", millis, nullable=False),
        sa.UniqueConstraint("tenant_id", "event_id", "subscriber", name=DELIVERIES_EVENT_KEY),
        *_tenant_led(dialect, DELIVERIES_TABLE),
        sa.Index("ix_tessera_deliveries_due", "subscriber", "state", "next_at"),
        sa.Index(
            "ix_tessera_deliveries_subject",
            "subscriber",
            "tenant_id",
            "entity",
            "subject_id",
            "seq",
        ),
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Schema:
    """Every table the host uses for one graph."""

    metadata: sa.MetaData
    entities: Mapping[str, sa.Table]
    """Entity tables by entity FQN."""
    audit: sa.Table
    sequences: sa.Table
    idempotency: sa.Table
    deliveries: sa.Table
    """Event deliveries still to make (host/events)."""

    @property
    def audit_columns(self) -> tuple[str, ...]:
        """The columns of an audit record, in table order: all but the database's ``seq``
        and ``xact`` (the database's transaction id, :attr:`Dialect.transaction_position`)."""
        return tuple(
            column.name for column in self.audit.columns if column.name not in ("seq", "xact")
        )


def build_schema(graph: Graph, dialect: Dialect) -> Schema:
    """Derive the tables of ``graph`` on ``dialect``'s database: one per entity, plus the
    audit, sequence, idempotency and event delivery tables. Every key of a table with a
    ``tenant_id`` includes it (on SQLite, but for the rowid ``seq``)."""
    metadata = sa.MetaData()
    entities = {fqn: _entity_table(metadata, entity) for fqn, entity in graph.entities.items()}
    timers_table(metadata)  # issue 41: the armed timers (host/storage/timers.py)
    return Schema(
        metadata=metadata,
        entities=MappingProxyType(entities),
        audit=_audit_table(metadata, dialect),
        sequences=_sequence_table(metadata),
        idempotency=_idempotency_table(metadata),
        deliveries=_deliveries_table(metadata, dialect),
    )
