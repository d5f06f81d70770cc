"""Breaking upgrades (version 3 of the plugin): refused at startup with a report, the
database left exactly as it was; applied by ``migrate --apply`` only with a flag per kind,
moving data aside instead of dropping it."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ALL_BUT_UNCONVERTIBLE = (
    "entity-removed",
    "field-removed",
    "type-changed",
    "field-required",
    "enum-option-removed",
    "state-removed",
    "currency-changed",
)


def _seed(evo: Any) -> dict[str, str]:
    """Three items and a tag under version 1; returns the item ids by title."""
    results = evo.ok(
        "v1",
        [
            {
                "action": "evo.item.create",
                "inputs": {
                    "title": "a",
                    "size": "s",
                    "color": "red",
                    "qty": 5,
                    "code": "12",
                    "price": {"amount": "1.50", "currency": "EUR"},
                    "note": "x",
                },
            },
            {"action": "evo.item.create", "inputs": {"title": "b", "code": "abc"}},
            {"action": "evo.item.create", "inputs": {"title": "c", "qty": 7, "code": "0"}},
            {"action": "evo.tag.create", "inputs": {"name": "x"}},
            {"action": "evo.item.close", "subject": 0},
            {"action": "evo.item.archive", "subject": 0},
        ],
    )
    assert [status for status, _ in results] == [200] * 6
    return {body["outputs"]["title"]: body["outputs"]["id"] for _, body in results[:3]}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


EXPECTED = {
    # kind, subject -> affected rows (all breaking)
    ("field-removed", "field 'color' of entity 'evo.item'"): 1,
    ("enum-option-removed", "field 'size' of entity 'evo.item'"): 1,
    ("type-changed", "field 'qty' of entity 'evo.item'"): 2,
    ("type-changed", "field 'code' of entity 'evo.item'"): 3,
    ("currency-changed", "field 'price' of entity 'evo.item'"): 1,
    ("field-required", "field 'note' of entity 'evo.item'"): 2,
    ("state-removed", "field 'status' of entity 'evo.item'"): 1,
    ("entity-removed", "entity 'evo.tag'"): 1,
}


async def test_breaking_upgrade_is_refused_and_alters_nothing(evo: Any) -> None:
    ids = _seed(evo)
    before = await evo.snapshot()

    code, plan = evo.plan("v3")
    assert code == 3
    breaking = {(c["kind"], c["subject"]): c for c in plan["changes"] if c["class"] == "breaking"}
    assert {key: c["affectedRows"] for key, c in breaking.items()} == EXPECTED
    code_change = breaking[("type-changed", "field 'code' of entity 'evo.item'")]
    assert code_change["unconvertible"] == 1
    assert code_change["samples"] == [f"t1/{ids['b']}"]
    assert code_change["needs"] == ["type-changed", "unconvertible"]
    color_sql = breaking[("field-removed", "field 'color' of entity 'evo.item'")]["sql"]
    assert color_sql[0].startswith("ALTER TABLE evo__item RENAME COLUMN color TO _removed_color_")

    # The app factory's startup refuses, with the report.
    status, _, err = evo.drive("v3")
    assert status == 1
    assert "nothing was altered" in err
    for kind, subject in EXPECTED:
        assert f"{kind}: {subject}" in err
    assert "affected rows: 3; cannot convert: 1" in err

    # ``check`` refuses the same way; its advice names the command the README teaches.
    checked = evo.host("v3", "check")
    assert checked.returncode == 1
    assert "Review with `tessera migrate --plan`" in checked.stderr
    assert "python -m host" not in checked.stderr + err

    # ``serve`` exits non-zero with the report before Hypercorn starts.
    served = evo.host("v3", "serve", "--bind", f"127.0.0.1:{_free_port()}")
    assert served.returncode == 1
    assert "field-removed: field 'color' of entity 'evo.item'" in served.stderr

    # ``migrate --apply`` without every needed flag refuses too.
    refused = evo.host("v3", "migrate", "--apply", *(f"--allow={k}" for k in ALL_BUT_UNCONVERTIBLE))
    assert refused.returncode == 1
    assert "needs --allow type-changed --allow unconvertible" in refused.stderr
    assert "field-removed: field 'color'" not in refused.stderr  # allowed: not listed

    assert await evo.snapshot() == before


async def test_apply_with_flags_moves_data_aside(evo: Any) -> None:
    ids = _seed(evo)
    flags = [f"--allow={k}" for k in (*ALL_BUT_UNCONVERTIBLE, "unconvertible")]
    before = await evo.snapshot()

    # Version 3 would leave rows breaking their declared rules (a removed option and a removed
    # state still held, a required field null): no flag applies that; the rows are named.
    refused = evo.host("v3", "migrate", "--apply", *flags)
    assert refused.returncode == 1, refused.stderr
    assert "enum-option-removed: field 'size'" in refused.stderr
    assert f"1 row(s) would break the field's declared rules (t1/{ids['a']})" in refused.stderr
    assert "map 's' with MapOptions" in refused.stderr
    assert "map 'archived' with MapStates" in refused.stderr
    nulls = sorted([f"t1/{ids['b']}", f"t1/{ids['c']}"])
    assert f"2 row(s) would break the field's declared rules ({', '.join(nulls)})" in (
        refused.stderr
    )
    assert await evo.snapshot() == before

    # Version 3.1 maps them and gives the required field a default: applied, and the SQL
    # applied is the SQL planned (a second later), moved-aside names included.
    _, planned = evo.plan("v3_1")
    time.sleep(1.1)
    done = evo.host("v3_1", "migrate", "--apply", "--json", *flags)
    assert done.returncode == 0, done.stderr
    applied = json.loads(done.stdout)
    assert not applied["upToDate"]
    assert [c["sql"] for c in applied["changes"]] == [c["sql"] for c in planned["changes"]]

    columns = await evo.columns("evo__item")
    aside = {c.split("_")[2]: c for c in columns if c.startswith("_removed_")}
    assert sorted(aside) == ["code", "color", "price", "qty"]
    assert "color" not in columns
    rows = await evo.query(
        f"SELECT title, size, status, qty, code, price, note, {aside['color']}, "
        f"{aside['qty']}, {aside['code']}, {aside['price']} FROM evo__item ORDER BY title"
    )
    a, b, c = rows
    # Converted where possible; the old values kept aside; unconvertible left null.
    assert a[3:5] == ("5", 12) and c[3:5] == ("7", 0)
    assert b[4] is None and b[9] == "abc"
    assert a[7] == "red" and a[8] == 5 and a[9] == "12"
    # A currency change keeps the amounts aside, unconverted; the field starts null.
    assert a[5] is None and a[10] == "1.50"
    # The removed option and state are mapped; the required notes get the default.
    assert a[1:3] == ("m", "closed")
    assert (a[6], b[6], c[6]) == ("x", "-", "-")

    tables = await evo.tables()
    assert "evo__tag" not in tables
    (moved,) = [t for t in tables if t.startswith("_removed_evo__tag_")]
    assert await evo.query(f"SELECT name FROM {moved}") == [("x",)]
    versions = await evo.query("SELECT plugins FROM tessera_graph ORDER BY seq")
    assert [json.loads(p)[0]["version"] for (p,) in versions] == ["1.0.0", "3.1.0"]

    # The host now starts on version 3.1 and reads the kept rows.
    results = evo.ok(
        "v3_1",
        [
            {"projection": "evo.item.list"},
            {"action": "evo.item.create", "inputs": {"title": "d", "note": "y", "code": 4}},
        ],
    )
    items = {i["id"]: i for i in results[0][1]["data"]["items"]}
    assert items[ids["a"]]["size"] == "m" and items[ids["a"]]["status"] == "closed"
    assert items[ids["a"]]["qty"] == "5" and items[ids["c"]]["code"] == 0
    assert results[1][0] == 200
