"""Migration declarations of a real plugin (``tessera-test-tracker`` 1.0.0 then 2.0.0,
installed one after the other): an enum turned integer through a mapping, a text turned
integer through a function, a field and an entity renamed, a removed option and a removed
workflow state mapped. After the apply every row read back through the HTTP surface keeps
its declared field rules, and the audit history is intact."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

pytestmark = pytest.mark.slow

FLAGS = ("type-changed", "enum-option-removed", "state-removed")


def _seed(tracker: Any) -> dict[str, str]:
    """Three issues and a label under version 1; the issue ids by title."""
    create = "tracker.issue.create"
    results = tracker.ok(
        "t1",
        [
            {
                "action": create,
                "inputs": {
                    "title": "a",
                    "summary": "first",
                    "priority": "LOW",
                    "estimate": "3d",
                    "severity": "blocker",
                },
            },
            {"action": create, "inputs": {"title": "b", "priority": "URGENT", "estimate": "soon"}},
            {"action": create, "inputs": {"title": "c", "estimate": "2"}},
            {"action": "tracker.issue.triage", "subject": 0},
            {"action": "tracker.issue.reject", "subject": 0},
            {"action": "tracker.issue.triage", "subject": 2},
            {"action": "tracker.label.create", "inputs": {"name": "bug", "color": "red"}},
        ],
    )
    assert [status for status, _ in results] == [200] * 7, results
    ids = {body["outputs"]["title"]: body["outputs"]["id"] for _, body in results[:3]}
    ids["label"] = results[6][1]["outputs"]["id"]
    return ids


def _declared_rules(tracker: Any, version: str) -> dict[str, dict[str, Any]]:
    """Entity FQN -> field name -> its declaration, from ``tessera graph``."""
    done = tracker.host(version, "graph")
    assert done.returncode == 0, done.stderr
    graph = json.loads(done.stdout)["graph"]
    return {
        d["attributes"]["fqn"]: {f["name"]: f for f in d["attributes"]["fields"]}
        for d in graph["definitions"]
        if d["kind"] == "entity"
    }


def _broken_rules(row: dict[str, Any], fields: dict[str, Any]) -> list[str]:
    broken = []
    for name, field in fields.items():
        value = row[name]
        if value is None:
            if not field.get("nullable"):
                broken.append(f"{name} is null but not nullable")
        elif field["type"] == "integer" and (type(value) is not int):
            broken.append(f"{name}={value!r} is not an integer")
        elif field["type"] == "string" and not isinstance(value, str):
            broken.append(f"{name}={value!r} is not a string")
        elif field["type"] == "enum" and value not in field["options"]:
            broken.append(f"{name}={value!r} is not one of {field['options']}")
    return broken


def _changes(plan: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["kind"], c["subject"]): c for c in plan["changes"]}


async def test_declared_migrations_keep_every_row_within_its_rules(tracker: Any) -> None:
    ids = _seed(tracker)
    audit_before = await tracker.query("SELECT * FROM tessera_audit ORDER BY seq")
    assert len(audit_before) == 7

    # The plan shows, per conversion, the rows it handles and those it cannot.
    code, plan = tracker.plan("t2")
    assert code == 3
    changes = _changes(plan)
    priority = changes[("type-changed", "field 'priority' of entity 'tracker.issue'")]
    assert (priority["affectedRows"], priority["unconvertible"]) == (3, 0)
    assert priority["via"].startswith("the mapping of plugin 'tracker' (tessera-test-tracker")
    estimate = changes[("type-changed", "field 'estimate' of entity 'tracker.issue'")]
    assert (estimate["affectedRows"], estimate["unconvertible"]) == (3, 1)
    assert estimate["samples"] == [f"t1/{ids['b']}"]
    assert estimate["reason"] == "'soon' is not a number of days"
    assert estimate["via"].startswith("the function of plugin 'tracker'")
    assert estimate["needs"] == ["type-changed", "unconvertible"]
    renamed = changes[("field-renamed", "field 'summary' -> 'headline' of entity 'tracker.issue'")]
    assert renamed["class"] == "additive"
    entity = changes[("entity-renamed", "entity 'tracker.label' -> 'tracker.tag'")]
    assert entity["class"] == "additive"
    severity = changes[("enum-option-removed", "field 'severity' of entity 'tracker.issue'")]
    assert (severity["affectedRows"], severity["violations"]) == (1, 0)
    state = changes[("state-removed", "field 'status' of entity 'tracker.issue'")]
    assert (state["affectedRows"], state["violations"]) == (1, 0)
    assert not any(c["violations"] for c in plan["changes"])
    text = tracker.host("t2", "migrate", "--plan").stdout
    assert "cannot convert: 1" in text and "converted by the function of plugin" in text

    # A start refuses, and `tessera check` says so with the same report (exit 1).
    status, _, err = tracker.drive("t2")
    assert status == 1 and "type-changed: field 'priority'" in err
    checked = tracker.host("t2", "check")
    assert checked.returncode == 1, checked.stderr
    assert "type-changed: field 'priority'" in checked.stderr
    assert "ok " not in checked.stdout

    # Without --allow unconvertible the apply refuses; with it the row gets null (nullable).
    refused = tracker.host("t2", "migrate", "--apply", *(f"--allow={k}" for k in FLAGS))
    assert refused.returncode == 1
    assert "needs --allow type-changed --allow unconvertible" in refused.stderr
    done = tracker.host(
        "t2",
        "migrate",
        "--apply",
        "--progress-interval=0",
        *(f"--allow={k}" for k in (*FLAGS, "unconvertible")),
    )
    assert done.returncode == 0, done.stderr
    assert "converting tracker__issue.priority: 3 rows in " in done.stderr
    assert "checking tracker__issue.estimate: 0/3 rows" in done.stderr
    assert "mapping tracker__issue.severity: 1 rows in " in done.stderr
    checked = tracker.host("t2", "check")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith("ok ")

    # Read back through the HTTP surface: every row keeps its declared rules.
    rules = _declared_rules(tracker, "t2")
    results = tracker.ok(
        "t2",
        [{"projection": "tracker.issue.list"}, {"projection": "tracker.tag.list"}],
    )
    issues = {i["id"]: i for i in results[0][1]["data"]["items"]}
    for row in issues.values():
        assert _broken_rules(row, rules["tracker.issue"]) == [], row
    (tag,) = results[1][1]["data"]["items"]
    assert _broken_rules(tag, rules["tracker.tag"]) == []
    assert (tag["id"], tag["name"], tag["color"]) == (ids["label"], "bug", "red")
    a, b, c = issues[ids["a"]], issues[ids["b"]], issues[ids["c"]]
    assert (a["priority"], a["estimate"], a["headline"]) == (1, 3, "first")
    assert (a["severity"], a["status"]) == ("major", "done")
    assert (b["priority"], b["estimate"]) == (4, None)
    assert (c["priority"], c["estimate"], c["status"]) == (2, 2, "triaged")

    # The converted rows are writable again, and the history goes on.
    edits = tracker.ok(
        "t2",
        [
            {
                "action": "tracker.issue.edit",
                "subject": ids["b"],
                "inputs": {"priority": 5, "headline": "now"},
            },
            {"action": "tracker.issue.finish", "subject": ids["c"]},
            {"action": "tracker.tag.create", "inputs": {"name": "ui"}},
        ],
    )
    assert [status for status, _ in edits] == [200] * 3, edits

    # Audit: the records written before are untouched; every subject is still stored, under
    # the entity's new name where it was renamed (recorded in the graph history).
    audit_after = await tracker.query("SELECT * FROM tessera_audit ORDER BY seq")
    assert audit_after[: len(audit_before)] == audit_before
    # ... then one record per row a conversion or a map rewrote (three priorities, three
    # estimates, a severity, a state: docs/schema-evolution.md, "Migrated rows"), then the
    # three actions.
    assert len(audit_after) == len(audit_before) + 8 + 3
    (latest,) = await tracker.query("SELECT changes FROM tessera_graph ORDER BY seq DESC LIMIT 1")
    recorded = json.loads(latest[0])
    rename = "[additive] entity-renamed: entity 'tracker.label' -> 'tracker.tag'"
    assert any(line.startswith(rename) for line in recorded), recorded
    renames = {"tracker.label": "tracker__tag", "tracker.issue": "tracker__issue"}
    for entity_fqn, subject in await tracker.query("SELECT entity, subject_id FROM tessera_audit"):
        table = renames.get(entity_fqn, entity_fqn.replace(".", "__"))
        found = await tracker.query(f"SELECT count(*) FROM {table} WHERE id = '{subject}'")
        assert found == [(1,)], (entity_fqn, subject)


async def _versions(tracker: Any) -> dict[str, str]:
    rows = await tracker.query("SELECT id, _version FROM tracker__issue")
    return {str(row_id): str(version) for row_id, version in rows}


async def test_migrated_rows_get_a_version_and_an_audit_record(tracker: Any) -> None:
    ids = _seed(tracker)
    (label_before,) = await tracker.query("SELECT _version FROM tracker__label")
    assert tracker.host("t1", "audit", "seal").returncode == 0
    before = await _versions(tracker)
    done = tracker.host(
        "t2", "migrate", "--apply", *(f"--allow={k}" for k in (*FLAGS, "unconvertible"))
    )
    assert done.returncode == 0, done.stderr
    after = await _versions(tracker)
    assert set(after) == set(before)
    assert all(after[row] != before[row] for row in before)  # every issue was converted
    assert await tracker.query("SELECT _version FROM tracker__tag") == [label_before]  # renamed

    records = await tracker.query(
        "SELECT subject_id, actor_id, roles, entity, changes, version FROM tessera_audit "
        "WHERE action = 'migration:tracker@2.0.0' ORDER BY seq"
    )
    assert len(records) == 8
    chain: dict[str, str] = dict(before)
    changed: dict[str, dict[str, Any]] = {}
    for subject, actor, roles, entity, changes, version in records:
        assert (actor, roles, entity) == ("system", "[]", "tracker.issue")
        pairs = json.loads(changes)
        assert pairs.pop("_version") == [chain[subject], version]  # each record chains on
        chain[subject] = version
        changed.setdefault(subject, {}).update(pairs)
    assert chain == after
    assert changed[ids["a"]] == {
        "priority": ["LOW", 1],
        "estimate": ["3d", 3],
        "severity": ["blocker", "major"],
        "status": ["wontfix", "done"],
    }
    assert changed[ids["b"]] == {"priority": ["URGENT", 4], "estimate": ["soon", None]}

    # Through HTTP: the row's history names the migration.
    (result,) = tracker.ok("t2", [{"projection": f"tracker.issue.list/history?subject={ids['b']}"}])
    newest = result[1]["data"]["items"][0]
    assert newest["action"] == "migration:tracker@2.0.0"
    assert newest["actor"] == {"id": "system", "roles": []}
    assert newest["versionAfter"] == after[ids["b"]]
    # The hash chain takes the new records like any others.
    assert tracker.host("t2", "audit", "seal").returncode == 0
    verified = tracker.host("t2", "audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


async def test_migration_versions_off_keeps_the_old_behaviour(tracker: Any) -> None:
    _seed(tracker)
    before = await _versions(tracker)
    count = await tracker.query("SELECT count(*) FROM tessera_audit")
    done = subprocess.run(
        [
            sys.executable,
            *("-m", "host", "migrate", "--apply"),
            *(f"--allow={k}" for k in (*FLAGS, "unconvertible")),
        ],
        env={**tracker.env("t2"), "TESSERA_MIGRATION_VERSIONS": "0"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert await _versions(tracker) == before
    assert await tracker.query("SELECT count(*) FROM tessera_audit") == count


async def test_an_interrupted_apply_leaves_nothing_applied(
    tracker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = 20
    tracker.ok("t1", [{"action": "tracker.label.create", "inputs": {"name": "x"}}])
    tracker.ok(
        "t1",
        [
            {"action": "tracker.issue.create", "inputs": {"title": f"{n}", "estimate": f"{n}d"}}
            for n in range(rows)
        ],
    )
    before = await tracker.snapshot()
    # The estimate function is slow after the plan's check of every value: the apply is
    # interrupted while it converts, after the priority conversion and the renames ran.
    monkeypatch.setenv("TRACKER_SLOW_AFTER", str(rows))
    process = tracker.popen(
        "t2",
        *("-m", "host", "migrate", "--apply", "--progress-interval=0"),
        *(f"--allow={k}" for k in FLAGS),
    )
    assert process.stderr is not None
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        seen.append(line)
        if line.startswith("converting tracker__issue.estimate") or not line:
            break
    assert seen[-1].startswith("converting tracker__issue.estimate: 0/20 rows"), seen
    assert any(line.startswith("converting tracker__issue.priority: 20 rows") for line in seen)
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover - the failure to report
        process.kill()
        raise
    assert process.returncode == 130, err
    assert "interrupted during converting tracker__issue.estimate" in err
    assert "rolled back, nothing was applied" in err
    assert await tracker.snapshot() == before
    # Nothing half-applied: the same apply runs to its end afterwards.
    monkeypatch.delenv("TRACKER_SLOW_AFTER")
    done = tracker.host("t2", "migrate", "--apply", *(f"--allow={k}" for k in FLAGS))
    assert done.returncode == 0, done.stderr
