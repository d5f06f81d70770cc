"""Helpers shared by the runtime tests: direct database inspection and an in-test plugin.

Everything here is backend-neutral: the same helpers read a SQLite file or PostgreSQL through
``databases.Database(url)``, on a connection of their own (never the host's).
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import pytest
from databases import Database

from host.graph.checks import table_name
from plugin_api import (
    Action,
    ActionContext,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    PolicyHandler,
    Projection,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    hookimpl,
)

Row = dict[str, Any]

TICKET = "helpdesk.ticket"
INVOICE = "billing.invoice"
AUDIT = "tessera_audit"
SEQUENCES = "tessera_sequences"
ULID_RE = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
"""A canonical ULID: 26 Crockford base-32 characters."""
UTC_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")


def parse_utc(text: str) -> datetime:
    """Parse the host's RFC 3339 ``Z`` text on every supported Python.

    Python 3.10's ``datetime.fromisoformat`` takes only 3- or 6-digit fractions, and the
    host strips trailing zeros, so the fraction is padded to microseconds first.
    """
    match = re.fullmatch(r"(.{19})(?:\.(\d{1,6}))?Z", text)
    assert match, text
    micros = (match.group(2) or "").ljust(6, "0")
    return datetime.fromisoformat(f"{match.group(1)}.{micros}").replace(tzinfo=timezone.utc)


def is_postgres() -> bool:
    return os.environ.get("TESSERA_TEST_BACKEND") == "postgresql"


sqlite_only = pytest.mark.skipif(
    is_postgres(), reason="inspects SQLite-specific behaviour (the file, its locking)"
)


def table(fqn: str) -> str:
    """The SQL table of an entity FQN."""
    return table_name(fqn)


# -- direct database access (a connection of our own) ----------------------------------------


async def query(url: str, sql: str, values: Mapping[str, Any] | None = None) -> list[Row]:
    """Run ``sql`` on a fresh connection and return the rows as plain dicts."""
    async with Database(url) as db:
        return [dict(record._mapping) for record in await db.fetch_all(sql, dict(values or {}))]


async def execute(url: str, *statements: str) -> None:
    """Run each statement on a fresh connection (autocommit)."""
    async with Database(url) as db:
        for statement in statements:
            await db.execute(statement)


ORDER = {AUDIT: "seq", SEQUENCES: "tenant_id, name"}


async def snapshot(url: str, *tables: str) -> dict[str, list[Row]]:
    """Every row of every table (entity tables by FQN or SQL name), in a stable order."""
    result: dict[str, list[Row]] = {}
    async with Database(url) as db:
        for name in tables:
            sql_name = table(name) if "." in name else name
            order = ORDER.get(sql_name, "tenant_id, id")
            records = await db.fetch_all(f'SELECT * FROM "{sql_name}" ORDER BY {order}')
            result[name] = [dict(record._mapping) for record in records]
    return result


async def audit_rows(url: str, **where: str) -> list[Row]:
    """Audit records (``where`` filters by equality), in commit order."""
    clause = " AND ".join(f"{column} = :{column}" for column in where) or "1 = 1"
    return await query(url, f"SELECT * FROM {AUDIT} WHERE {clause} ORDER BY seq", where)


async def entity_row(url: str, fqn: str, record_id: str) -> Row | None:
    rows = await query(url, f'SELECT * FROM "{table(fqn)}" WHERE id = :id', {"id": record_id})
    return rows[0] if rows else None


# -- audit-failure injection: a real trigger aborting inserts into the audit table -----------


async def break_audit(url: str) -> None:
    """Make every INSERT into the audit table fail, from another connection."""
    if is_postgres():
        await execute(
            url,
            "CREATE FUNCTION tessera_test_refuse_audit() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'injected audit failure'; END; $$",
            f"CREATE TRIGGER tessera_test_refuse_audit BEFORE INSERT ON {AUDIT} "
            "FOR EACH ROW EXECUTE FUNCTION tessera_test_refuse_audit()",
        )
    else:
        await execute(
            url,
            f"CREATE TRIGGER tessera_test_refuse_audit BEFORE INSERT ON {AUDIT} "
            "BEGIN SELECT RAISE(ABORT, 'injected audit failure'); END",
        )


async def repair_audit(url: str) -> None:
    if is_postgres():
        await execute(
            url,
            f"DROP TRIGGER tessera_test_refuse_audit ON {AUDIT}",
            "DROP FUNCTION tessera_test_refuse_audit()",
        )
    else:
        await execute(url, "DROP TRIGGER tessera_test_refuse_audit")


# -- an in-test plugin whose policy and effect the test controls ------------------------------

ITEM = "lab.item"
ITEM_FIELDS = ("name", "note", "qty", "flag")
SYSTEM_STAMPS = ("created_at", "updated_at", "_version")

Behaviour = Callable[[ActionContext], Awaitable[Any] | Any]


class LabPlugin:
    """Entity ``lab.item`` (name, note, qty, flag, status new -> done) with actions that all
    run the custom policy ``lab.policy`` and the custom effect ``lab.effect``; a test sets
    :attr:`policy` / :attr:`effect` to decide what they do. ``lab.item.plain`` is an update
    without policy or effect."""

    def __init__(self) -> None:
        self.policy: Behaviour = lambda ctx: True
        self.effect: Behaviour | None = None
        self.policy_calls: list[dict[str, Any]] = []
        self.effect_calls: list[dict[str, Any]] = []

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=ITEM,
                fields=(
                    Field(name="name", type=FieldType.STRING),
                    Field(name="note", type=FieldType.STRING, nullable=True),
                    Field(name="qty", type=FieldType.INTEGER, default=0),
                    Field(name="flag", type=FieldType.BOOLEAN, default=False),
                    Field(name="status", type=FieldType.ENUM, options=("new", "done")),
                ),
                workflow=Workflow(
                    state_field="status",
                    initial="new",
                    transitions=(Transition(name="finish", sources=("new",), target="done"),),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        hooks: dict[str, Any] = {"policies": ("lab.policy",), "effect": "lab.effect"}
        return (
            CreateAction(fqn=f"{ITEM}.create", entity=ITEM, inputs=ITEM_FIELDS, **hooks),
            TransitionAction(fqn=f"{ITEM}.finish", entity=ITEM, transition="finish", **hooks),
            UpdateAction(fqn=f"{ITEM}.patch", entity=ITEM, patchable=ITEM_FIELDS, **hooks),
            CreateAction(fqn=f"{ITEM}.add", entity=ITEM, inputs=ITEM_FIELDS),
            UpdateAction(fqn=f"{ITEM}.plain", entity=ITEM, patchable=ITEM_FIELDS),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn=f"{ITEM}.detail",
                entity=ITEM,
                fields=("id", "tenant_id", *ITEM_FIELDS, "status", *SYSTEM_STAMPS),
            ),
        )

    @hookimpl
    def tessera_policies(self) -> Mapping[str, PolicyHandler]:
        return {"lab.policy": self._policy}

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"lab.effect": self._effect}

    async def _policy(self, ctx: ActionContext) -> bool:
        self.policy_calls.append(
            {"subject": None if ctx.subject is None else dict(ctx.subject), "roles": ctx.roles}
        )
        verdict = self.policy(ctx)
        if hasattr(verdict, "__await__"):
            verdict = await verdict
        return verdict  # type: ignore[return-value]  # passed through: only True allows

    async def _effect(self, ctx: ActionContext) -> None:
        self.effect_calls.append({"changes": dict(ctx.changes), "inputs": dict(ctx.inputs)})
        if self.effect is not None:
            result = self.effect(ctx)
            if hasattr(result, "__await__"):
                await result
