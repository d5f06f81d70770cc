"""Fault injection: whatever fails inside an action, the database is exactly as before.

Each test compares full snapshots (every row and column of the entity tables, the audit table
and the sequence table) taken before and after the failing request.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import sqlalchemy as sa

from host.storage.store import EntityStore
from plugin_api import (
    SYSTEM_FIELDS,
    ActionContext,
    BadRequest,
    ConcurrencyConflict,
    EffectFailed,
    InternalError,
    NotFound,
    PolicyDenied,
    TesseraError,
    WorkflowStateMismatch,
)
from plugin_api.testing import Client, Host, Result

from ._support import (
    AUDIT,
    INVOICE,
    ITEM,
    ITEM_FIELDS,
    SEQUENCES,
    TICKET,
    LabPlugin,
    break_audit,
    execute,
    repair_audit,
    snapshot,
    table,
)

ALL_TABLES = (TICKET, INVOICE, ITEM, AUDIT, SEQUENCES)
SECRET = "s3cr3t-cause-7731"

lab_items = sa.table(
    table(ITEM),
    *(sa.column(name) for name in (*SYSTEM_FIELDS, *ITEM_FIELDS, "status")),
)


def assert_error(result: Result, status: int, kind: str) -> str:
    assert (result.status, result.error_kind) == (status, kind), result.json
    return str(result.json["error"]["message"])


async def lab_item(client: Client, name: str = "item") -> str:
    return str((await client.action(ITEM + ".add", inputs={"name": name})).outputs["id"])


async def lab_actions(client: Client) -> list[tuple[str, str | None, dict[str, Any]]]:
    """One (fqn, subject, inputs) per action kind of the lab plugin, on fresh items."""
    return [
        (ITEM + ".create", None, {"name": "new", "qty": 2}),
        (ITEM + ".finish", await lab_item(client, "to finish"), {}),
        (ITEM + ".patch", await lab_item(client, "to patch"), {"name": "patched", "qty": 9}),
    ]


# -- (a) the audit write fails for real ----------------------------------------------------------


async def test_audit_failure_rolls_back_every_kind_of_action(host: Host) -> None:
    url = host.database_url
    agent = host.client(actor="alice", roles=["agent"])
    clerk = host.client(actor="carl", roles=["clerk"])
    ticket = (await agent.action(TICKET + ".create", inputs={"title": "T"})).outputs["id"]
    money = {"amount": "10.00", "currency": "USD"}
    invoice = await clerk.action(INVOICE + ".create", inputs={"customer": "c", "amount": money})
    invoice_id = invoice.outputs["id"]

    await break_audit(url)
    # The trigger is real: a direct insert into the audit table fails too.
    with pytest.raises(Exception, match="injected audit failure"):
        await execute(
            url,
            f"INSERT INTO {AUDIT} (id, tenant_id, actor_id, roles, action, entity, subject_id, "
            "inputs, outputs, graph_hash, created_at) VALUES "
            "('x', 't', 'a', '[]', 'a', 'e', 's', '{}', '{}', 'h', 'c')",
        )
    before = await snapshot(url, TICKET, INVOICE, AUDIT, SEQUENCES)
    attempts: list[tuple[Client, str, str | None, dict[str, Any]]] = [
        (agent, TICKET + ".create", None, {"title": "Never stored"}),
        (agent, TICKET + ".edit", ticket, {"title": "Never changed"}),
        (agent, TICKET + ".start", ticket, {}),
        (agent, TICKET + ".escalate", ticket, {}),  # custom effect
        (clerk, INVOICE + ".issue", invoice_id, {}),  # custom effect taking a sequence number
    ]
    for client, fqn, subject, inputs in attempts:
        result = await client.action(fqn, subject=subject, inputs=inputs)
        message = assert_error(result, 500, "AuditEmissionFailed")
        assert "injected" not in message
        assert await snapshot(url, TICKET, INVOICE, AUDIT, SEQUENCES) == before, fqn

    await repair_audit(url)
    # Nothing was consumed by the failed attempts: the first invoice number is still 1.
    issued = await clerk.action(INVOICE + ".issue", subject=invoice_id)
    assert issued.outputs["number"] == "INV-00001"
    started = await agent.action(TICKET + ".start", subject=ticket)
    assert started.outputs["state"] == "in_progress"
    assert len((await snapshot(url, AUDIT))[AUDIT]) == len(before[AUDIT]) + 2


async def test_audit_record_that_cannot_be_built_rolls_back(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime ends with the row and its audit record; if the audit record cannot even be
    built, it fails in the audit record's place and everything is still rolled back."""
    url = host.database_url
    agent = host.client(actor="alice", roles=["agent"])
    ticket = (await agent.action(TICKET + ".create", inputs={"title": "T"})).outputs["id"]
    before = await snapshot(url, TICKET, AUDIT)

    def unbuildable(*args: object) -> None:
        raise ValueError(SECRET)

    monkeypatch.setattr(EntityStore, "audit", unbuildable)
    for fqn, subject, inputs in (
        (TICKET + ".create", None, {"title": "Never stored"}),
        (TICKET + ".edit", ticket, {"title": "Never changed"}),
        (TICKET + ".start", ticket, {}),
    ):
        result = await agent.action(fqn, subject=subject, inputs=inputs)
        assert SECRET not in assert_error(result, 500, "AuditEmissionFailed")
        assert await snapshot(url, TICKET, AUDIT) == before, fqn


# -- (b) an effect raising an arbitrary exception --------------------------------------------


async def test_effect_crash_is_effect_failed_without_leaking_the_cause(
    lab_host: Host, lab: LabPlugin, caplog: pytest.LogCaptureFixture
) -> None:
    url = lab_host.database_url
    client = lab_host.client(actor="ida")

    def crash(ctx: ActionContext) -> None:
        raise ValueError(SECRET)

    actions = await lab_actions(client)
    lab.effect = crash
    before = await snapshot(url, *ALL_TABLES)
    with caplog.at_level(logging.ERROR):
        for fqn, subject, inputs in actions:
            result = await client.action(fqn, subject=subject, inputs=inputs)
            message = assert_error(result, 500, "EffectFailed")
            assert SECRET not in message and "ValueError" not in message
            assert SECRET not in str(result.json) and SECRET not in str(result.headers)
    assert await snapshot(url, *ALL_TABLES) == before
    # The cause is logged for the operator.
    logged = [r for r in caplog.records if r.exc_info and SECRET in str(r.exc_info[1].__cause__)]  # type: ignore[union-attr]
    logged += [r for r in caplog.records if r.exc_info and SECRET in str(r.exc_info[1])]
    assert logged, [r.getMessage() for r in caplog.records]


# -- (c) an effect raising an error of the taxonomy --------------------------------------------


TAXONOMY: list[TesseraError] = [
    ConcurrencyConflict("effect: somebody else got there first"),
    PolicyDenied("effect: not on a Sunday"),
    NotFound("effect: the related thing is gone"),
    BadRequest("effect: qty must be even"),
    WorkflowStateMismatch("effect: wrong phase of the moon"),
    EffectFailed("effect: failed on purpose"),
    InternalError("effect: internal on purpose"),
]


@pytest.mark.parametrize("error", TAXONOMY, ids=lambda e: type(e).__name__)
async def test_effect_taxonomy_error_is_answered_as_raised(
    lab_host: Host, lab: LabPlugin, error: TesseraError
) -> None:
    url = lab_host.database_url
    client = lab_host.client(actor="ida")

    def refuse(ctx: ActionContext) -> None:
        ctx.set("note", "written before the error")
        raise error

    actions = await lab_actions(client)
    lab.effect = refuse
    before = await snapshot(url, *ALL_TABLES)
    for fqn, subject, inputs in actions:
        result = await client.action(fqn, subject=subject, inputs=inputs)
        message = assert_error(result, error.status, error.kind)
        if error.status < 500:
            assert message == error.message
        else:  # a 5xx carries the request id after the message
            assert message.startswith(error.message + " (request id ")
    assert await snapshot(url, *ALL_TABLES) == before


# -- (d) an effect that wrote through ctx.db, ctx.set and a sequence, then raised --------------


def busy_effect(other: str, fail: BaseException | None) -> Any:
    async def effect(ctx: ActionContext) -> None:
        ctx.set("note", "set by the effect")
        await ctx.db.execute(
            lab_items.insert().values(
                tenant_id=ctx.tenant_id,
                id="01J00000000000000000SMUGGL",
                created_at="2030-01-01T00:00:00.000000Z",
                updated_at="2030-01-01T00:00:00.000000Z",
                _version="01J00000000000000000SMUGGL",
                name="smuggled",
                qty=1,
                flag=False,
                status="new",
            )
        )
        await ctx.db.execute(
            lab_items.update().where(lab_items.c.id == other).values(name="hijacked")
        )
        assert await ctx.next_sequence("lab.counter") == 1
        if fail is not None:
            raise fail

    return effect


@pytest.mark.parametrize(
    ("fail", "status", "kind"),
    [
        (RuntimeError(SECRET), 500, "EffectFailed"),
        (KeyError(SECRET), 500, "EffectFailed"),
        (ConcurrencyConflict("effect says conflict"), 409, "ConcurrencyConflict"),
        (PolicyDenied("effect says no"), 403, "PolicyDenied"),
    ],
    ids=["RuntimeError", "KeyError", "ConcurrencyConflict", "PolicyDenied"],
)
async def test_effect_writes_are_rolled_back_when_it_raises(
    lab_host: Host, lab: LabPlugin, fail: BaseException, status: int, kind: str
) -> None:
    url = lab_host.database_url
    client = lab_host.client(actor="ida")
    other = await lab_item(client, "bystander")
    actions = await lab_actions(client)
    lab.effect = busy_effect(other, fail)
    before = await snapshot(url, *ALL_TABLES)
    for fqn, subject, inputs in actions:
        result = await client.action(fqn, subject=subject, inputs=inputs)
        assert_error(result, status, kind)
        assert await snapshot(url, *ALL_TABLES) == before, fqn

    # Control: the same effect without the failure really writes all of it.
    lab.effect = busy_effect(other, None)
    fqn, subject, inputs = actions[2]
    patched = await client.action(fqn, subject=subject, inputs=inputs)
    assert patched.outputs["note"] == "set by the effect"
    after = await snapshot(url, ITEM, SEQUENCES)
    rows = {row["id"]: row for row in after[ITEM]}
    assert rows["01J00000000000000000SMUGGL"]["name"] == "smuggled"
    assert rows[other]["name"] == "hijacked"
    assert rows[subject]["note"] == "set by the effect" and rows[subject]["name"] == "patched"
    assert [(r["name"], r["value"]) for r in after[SEQUENCES]] == [("lab.counter", 1)]


# -- the row-count trap: a lost race after an INSERT in the same transaction -------------------


async def test_lost_race_after_an_insert_is_a_conflict_not_a_success(
    lab_host: Host, lab: LabPlugin
) -> None:
    """The effect inserts a row, then changes the subject's ``_version`` behind the runtime's
    back, as a concurrent writer would. The guarded UPDATE then matches no row: it must be a
    409 ConcurrencyConflict (a row count taken from ``execute`` would report the INSERT's
    lastrowid and call it a success), and the INSERT is rolled back with everything else."""
    url = lab_host.database_url
    client = lab_host.client(actor="ida")
    finish_target = await lab_item(client, "finish me")
    patch_target = await lab_item(client, "patch me")

    async def interfere(ctx: ActionContext) -> None:
        assert ctx.subject is not None
        await busy_effect(finish_target, None)(ctx)
        await ctx.db.execute(
            lab_items.update()
            .where(lab_items.c.id == ctx.subject["id"])
            .values(_version="01J000000000000000000STALE", name="concurrent")
        )

    lab.effect = interfere
    before = await snapshot(url, *ALL_TABLES)
    for fqn, subject in ((ITEM + ".finish", finish_target), (ITEM + ".patch", patch_target)):
        result = await client.action(fqn, subject=subject, inputs={})
        assert_error(result, 409, "ConcurrencyConflict")
        assert await snapshot(url, *ALL_TABLES) == before


# -- effects misusing the context --------------------------------------------------------------


async def test_effect_setting_a_bad_value_or_an_unknown_field(
    lab_host: Host, lab: LabPlugin
) -> None:
    url = lab_host.database_url
    client = lab_host.client(actor="ida")
    actions = await lab_actions(client)
    before = await snapshot(url, *ALL_TABLES)

    lab.effect = lambda ctx: ctx.set("qty", "many")
    for fqn, subject, inputs in actions:
        result = await client.action(fqn, subject=subject, inputs=inputs)
        assert "'qty'" in assert_error(result, 400, "BadRequest")
    lab.effect = lambda ctx: ctx.set("no_such_field", 1)
    for fqn, subject, inputs in actions:
        assert_error(await client.action(fqn, subject=subject, inputs=inputs), 500, "EffectFailed")
    assert await snapshot(url, *ALL_TABLES) == before


async def test_effect_sees_the_pending_changes_and_its_set_is_output(
    lab_host: Host, lab: LabPlugin
) -> None:
    client = lab_host.client(actor="ida")
    lab.effect = lambda ctx: ctx.set("qty", ctx.changes.get("qty", 0) + 100)
    created = await client.action(ITEM + ".create", inputs={"name": "n", "qty": "5.7"})
    assert created.outputs == {
        "id": created.outputs["id"],
        "name": "n",
        "qty": 105,
        "status": "new",
    }
    assert lab.effect_calls[-1]["changes"] == {
        "qty": 5,
        "flag": False,
        "name": "n",
        "status": "new",
    }
    finished = await client.action(ITEM + ".finish", subject=created.outputs["id"])
    assert set(finished.outputs) == {"status", "qty", "_version"} and finished.outputs["qty"] == 100


# -- queries an effect runs from child tasks stay inside the action's transaction ---------------


@pytest.mark.parametrize("fail", [None, RuntimeError(SECRET)], ids=["commits", "rolls-back"])
async def test_effect_queries_from_child_tasks_share_the_transaction(
    tessera: Any, lab: LabPlugin, fail: Exception | None
) -> None:
    """With ``databases``, a query issued from a child task (``gather``) inside a
    transaction runs on another connection, outside the transaction (on SQLite it would then
    wait for the write lock its own action holds). The context's query handle is bound to
    the action's connection, so child-task writes commit and roll back with the action."""
    host = await tessera.start(
        plugins=["helpdesk", "billing"], extra=[("lab", lab)], sqlite_busy_timeout_ms=1000
    )
    url = host.database_url
    client = host.client(actor="ida")
    first, second = await lab_item(client, "first"), await lab_item(client, "second")
    subject = await lab_item(client, "subject")

    async def effect(ctx: ActionContext) -> None:
        await asyncio.gather(
            *(
                ctx.db.execute(lab_items.update().where(lab_items.c.id == i).values(note="child"))
                for i in (first, second)
            )
        )
        if fail is not None:
            raise fail

    lab.effect = effect
    before = await snapshot(url, *ALL_TABLES)
    result = await asyncio.wait_for(client.action(ITEM + ".finish", subject=subject), 10)
    notes = {row["id"]: row["note"] for row in (await snapshot(url, ITEM))[ITEM]}
    if fail is None:
        assert result.status == 200, result.json
        assert notes == {first: "child", second: "child", subject: None}
    else:
        assert_error(result, 500, "EffectFailed")
        assert await snapshot(url, *ALL_TABLES) == before
