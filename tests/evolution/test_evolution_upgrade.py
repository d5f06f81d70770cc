"""Upgrades that start by themselves: metadata-only and additive changes, applied once at
startup (app factory in a subprocess), recorded in the graph history."""

from __future__ import annotations

import json
import secrets
import socket
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

SEED = [
    {"action": "evo.item.create", "inputs": {"title": "a", "size": "s", "qty": 5}},
    {"action": "evo.item.create", "inputs": {"title": "b", "note": "n"}},
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _history(rows: list[tuple[Any, ...]]) -> list[tuple[str, list[dict[str, Any]]]]:
    return [(str(h), json.loads(p)) for h, p in rows]


async def test_first_start_records_the_graph_once(evo: Any) -> None:
    evo.ok("v1")
    evo.ok("v1")  # a second start finds the graph recorded and does nothing
    shown = json.loads(evo.host("v1", "graph").stdout)
    digest = shown["hash"]
    rows = await evo.query("SELECT graph_hash, plugins FROM tessera_graph ORDER BY seq")
    assert _history(rows) == [
        (digest, [{"name": "evo", "distribution": "tessera-test-evo", "version": "1.0.0"}])
    ]
    canonical = await evo.query("SELECT canonical, recorded_at FROM tessera_graph")
    assert json.loads(canonical[0][0]) == shown["graph"]
    assert canonical[0][1].endswith("Z")
    code, plan = evo.plan("v1")
    assert code == 0 and plan["upToDate"] and plan["changes"] == []


async def test_metadata_only_upgrade_changes_no_table(evo: Any) -> None:
    evo.ok("v1", SEED)
    before = await evo.snapshot()
    code, plan = evo.plan("v1_1")
    assert code == 0
    assert {c["class"] for c in plan["changes"]} == {"metadata"}
    kinds = {(c["kind"], c["subject"]) for c in plan["changes"]}
    assert ("field-metadata", "field 'title' of entity 'evo.item'") in kinds
    assert ("workflow-changed", "entity 'evo.item'") in kinds
    assert ("projection-added", "projection 'evo.item.titles'") in kinds
    assert ("action-changed", "action 'evo.item.close'") in kinds  # a role added
    assert all(c["sql"] == [] for c in plan["changes"])

    results = evo.ok("v1_1", [{"projection": "evo.item.titles"}])
    assert sorted(i["title"] for i in results[0][1]["data"]["items"]) == ["a", "b"]
    after = await evo.snapshot()
    if evo.backend == "sqlite":
        master_before, dump_before = before
        master_after, dump_after = after
        assert master_after == master_before
        changed = set(dump_after) - set(dump_before)
        assert all("tessera_graph" in line for line in changed), changed
    else:
        assert after[0] == before[0]  # columns
        assert {t: r for t, r in after[1].items() if t != "tessera_graph"} == {
            t: r for t, r in before[1].items() if t != "tessera_graph"
        }
    versions = await evo.query("SELECT plugins FROM tessera_graph ORDER BY seq")
    assert [json.loads(p)[0]["version"] for (p,) in versions] == ["1.0.0", "1.1.0"]


async def test_additive_upgrade_backfills_defaults(evo: Any) -> None:
    evo.ok("v1", SEED)
    code, plan = evo.plan("v2")
    assert code == 0
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for change in plan["changes"]:
        by_kind.setdefault(change["kind"], []).append(change)
    assert {c["class"] for c in plan["changes"] if c["kind"] != "field-added"} <= {
        "metadata",
        "additive",
    }
    assert [c["class"] for c in by_kind["field-added"]] == ["additive"] * 4
    assert by_kind["entity-added"][0]["subject"] == "entity 'evo.bin'"
    assert by_kind["enum-option-added"][0]["detail"] == "option(s) 'xl' added"
    priority = next(c for c in by_kind["field-added"] if "'priority'" in c["subject"])
    assert priority["affectedRows"] == 2
    assert priority["sql"][0].startswith("ALTER TABLE evo__item ADD COLUMN priority")
    assert priority["sql"][1] == "UPDATE evo__item SET priority=3"

    results = evo.ok(
        "v2",
        [
            {"projection": "evo.item.list"},
            {"action": "evo.item.create", "inputs": {"title": "c", "size": "xl"}},
            {"action": "evo.bin.create", "inputs": {"label": "new entity"}},
        ],
    )
    items = {i["title"]: i for i in results[0][1]["data"]["items"]}
    # Existing rows get the declared default, not null.
    assert items["a"]["priority"] == 3 and items["b"]["priority"] == 3
    assert items["a"]["flagged"] is False
    assert items["a"]["budget"] == {"amount": "9.50", "currency": "EUR"}
    assert items["a"]["memo"] is None
    assert items["a"]["qty"] == 5 and items["b"]["note"] == "n"  # old data untouched
    assert results[1][0] == 200 and results[2][0] == 200
    assert "_removed" not in " ".join(await evo.columns("evo__item"))
    code, plan = evo.plan("v2")
    assert code == 0 and plan["upToDate"]


async def test_audit_keeps_the_graph_hash_it_was_written_under(evo: Any) -> None:
    evo.ok("v1", [SEED[0]])
    evo.ok("v2", [{"action": "evo.item.create", "inputs": {"title": "later"}}])
    recorded = await evo.query("SELECT graph_hash, plugins FROM tessera_graph ORDER BY seq")
    (v1_hash, v1_plugins), (v2_hash, v2_plugins) = recorded
    assert json.loads(v1_plugins)[0]["version"] == "1.0.0"
    assert json.loads(v2_plugins)[0]["version"] == "2.0.0"
    assert v1_hash != v2_hash
    rows = await evo.query("SELECT action, graph_hash FROM tessera_audit ORDER BY seq")
    assert rows == [("evo.item.create", v1_hash), ("evo.item.create", v2_hash)]


async def test_concurrent_startups_apply_the_upgrade_once(evo: Any) -> None:
    evo.ok("v1", SEED)
    processes = [evo.popen("v2", str(Path(__file__).parent / "driver.py")) for _ in range(3)]
    for process in processes:
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
    hashes = await evo.query("SELECT graph_hash FROM tessera_graph ORDER BY seq")
    assert len(hashes) == 2
    assert (await evo.columns("evo__item")).count("priority") == 1
    rows = await evo.query("SELECT priority FROM evo__item")
    assert [r[0] for r in rows] == [3, 3]


async def test_an_index_over_stored_long_values_is_refused_alike_by_check_and_start(
    evo: Any,
) -> None:
    # Version 1 lists no field, so a title of any length is stored; version 1.2 sorts on the
    # title: its index could not hold the long one (PostgreSQL), on any backend it is refused.
    long_title = secrets.token_urlsafe(2100)[:2700]
    results = evo.ok(
        "v1",
        [
            {"action": "evo.item.create", "inputs": {"title": "short"}},
            {"action": "evo.item.create", "inputs": {"title": long_title}},
        ],
    )
    long_id = results[1][1]["outputs"]["id"]
    before = await evo.snapshot()

    checked = evo.host("v1_2", "check")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    expected = f"1 row(s) would break the field's declared rules (t1/{long_id})"
    assert expected in checked.stderr
    assert "holds at most 2000 bytes (title) of UTF-8 text" in checked.stderr
    status, _, err = evo.drive("v1_2")
    assert status == 1 and expected in err, err
    served = evo.host("v1_2", "serve", "--port", str(_free_port()))
    assert served.returncode == 1 and expected in served.stderr, served.stderr
    assert "Traceback" not in served.stderr
    hypercorn = evo.popen(
        "v1_2", "-m", "hypercorn", "host.asgi:app", "-b", f"127.0.0.1:{_free_port()}"
    )
    _, err = hypercorn.communicate(timeout=60)
    assert hypercorn.returncode != 0 and expected in err and "Traceback" not in err, err
    assert await evo.snapshot() == before

    # With the value shortened (by hand) the same upgrade applies; the list sorts on it.
    await evo.query(f"UPDATE evo__item SET title = 'long' WHERE id = '{long_id}'")
    listed = evo.ok("v1_2", [{"projection": "evo.item.list"}])
    assert [item["title"] for item in listed[0][1]["data"]["items"]] == ["short", "long"]
