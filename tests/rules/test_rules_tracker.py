"""Entity rules hold on every write path (issue 30): the tracker story through the HTTP
surface on a real database. Each bypass another plugin had through ``ctx.data`` is refused
with a clear kind, the whole action rolled back; the proper way, ``ctx.data.run`` of the
owner's action, runs the owner's chain and produces its event."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from plugin_api import MAX_RUN_DEPTH, ActionContext
from plugin_api.testing import Client, Host

from ..runtime._support import AUDIT, audit_rows, entity_row, query, snapshot
from ._tracker import ISSUE, NOTE, PROJECT, Reports, Tracker

TABLES = (PROJECT, ISSUE, NOTE, AUDIT)


async def database(host: Host) -> dict[str, Any]:
    """Every row of the story's tables and the audit log, and the number of deliveries."""
    state: dict[str, Any] = await snapshot(host.database_url, *TABLES)
    [count] = await query(host.database_url, "SELECT COUNT(*) AS n FROM tessera_deliveries")
    state["deliveries"] = count["n"]
    return state


def member(host: Host, actor: str = "alice") -> Client:
    return host.client(tenant="t1", actor=actor, roles=["member"])


async def new_project(client: Client, key: str = "WEB", **inputs: Any) -> str:
    result = await client.action(
        "tracker.project.create", inputs={"key": key, "name": "Web site", **inputs}
    )
    return str(result.outputs["id"])


async def new_issue(client: Client, project: str, **inputs: Any) -> str:
    result = await client.action(
        "tracker.issue.create", inputs={"project": project, "title": "Broken link", **inputs}
    )
    return str(result.outputs["id"])


async def archive(client: Client, project: str) -> None:
    result = await client.action("tracker.project.edit", subject=project, inputs={"archived": True})
    assert result.status == 200, result.json


def assert_refused(result: Any, status: int, kind: str, *words: str) -> None:
    assert result.status == status, result.json
    assert result.error_kind == kind, result.json
    for word in words:
        assert word in result.json["error"]["message"], result.json


async def meddle(host: Host, reports: Reports, effect: Any, client: Client | None = None) -> Any:
    """Run ``reports.note.create`` whose effect is ``effect``; answer the HTTP result."""
    reports.meddle = effect
    return await (client or member(host)).action("reports.note.create", inputs={"text": "n"})


# -- constraints --------------------------------------------------------------------------------


async def test_constraints_refuse_http_inputs_naming_the_field_and_the_rule(
    rules_host: Host,
) -> None:
    client = member(rules_host)
    cases: list[tuple[dict[str, Any], tuple[str, ...]]] = [
        ({"key": "web", "name": "Web"}, ("'key'", "pattern")),
        ({"key": "WEB", "name": "x" * 41}, ("'name'", "at most 40", "max_length")),
        ({"key": "WEB", "name": ""}, ("'name'", "at least 1", "min_length")),
        (
            {"key": "WEB", "name": "W", "budget": {"amount": "0.00", "currency": "EUR"}},
            ("'budget'", "minimum"),
        ),
    ]
    for inputs, words in cases:
        result = await client.action("tracker.project.create", inputs=inputs)
        assert_refused(result, 400, "BadRequest", *words)
    project = await new_project(client, budget={"amount": "100000", "currency": "EUR"})
    result = await client.action("tracker.issue.create", inputs={"project": project, "title": "ab"})
    assert_refused(result, 400, "BadRequest", "'title'", "at least 3")
    # max_length without enforce_max_length stays advisory, as the interface says.
    long_title = "t" * 200
    issue = await new_issue(client, project, title=long_title)
    result = await client.action("tracker.issue.edit", subject=issue, inputs={"points": 101})
    assert_refused(result, 400, "BadRequest", "'points'", "at most 100", "maximum")
    result = await client.action("tracker.issue.edit", subject=issue, inputs={"points": -1})
    assert_refused(result, 400, "BadRequest", "'points'", "minimum")
    assert (
        await client.action("tracker.issue.edit", subject=issue, inputs={"points": 100})
    ).outputs


async def test_constraints_refuse_data_api_writes_and_effect_sets(
    rules_host: Host, reports: Reports
) -> None:
    client = member(rules_host)
    project = await new_project(client)
    issue = await new_issue(client, project)
    before = await database(rules_host)

    async def short_title(ctx: ActionContext) -> None:
        await ctx.data.run("tracker.issue.edit", subject=issue, inputs={"title": "no"})

    async def bad_key(ctx: ActionContext) -> None:
        await ctx.data.patch(PROJECT, project, {"name": ""})

    async def bad_set(ctx: ActionContext) -> None:
        ctx.set("text", "fine")
        await ctx.data.patch(ISSUE, issue, {"points": 1000})

    for effect, field in ((short_title, "'title'"), (bad_key, "'name'"), (bad_set, "'points'")):
        result = await meddle(rules_host, reports, effect)
        assert_refused(result, 400, "BadRequest", field)
    assert await database(rules_host) == before


# -- validators ---------------------------------------------------------------------------------


async def test_a_validator_refuses_an_issue_of_an_archived_project_on_every_path(
    rules_host: Host, reports: Reports, tracker: Tracker
) -> None:
    client = member(rules_host)
    project = await new_project(client)
    issue = await new_issue(client, project)
    await archive(client, project)
    before = await database(rules_host)

    result = await client.action(
        "tracker.issue.create", inputs={"project": project, "title": "Another"}
    )
    assert_refused(result, 400, "BadRequest", "WEB is archived")
    result = await client.action("tracker.issue.edit", subject=issue, inputs={"assignee": "bob"})
    assert_refused(result, 400, "BadRequest", "archived")
    result = await client.action("tracker.issue.done", subject=issue)
    assert_refused(result, 400, "BadRequest", "archived")

    async def patch_it(ctx: ActionContext) -> None:
        await ctx.data.patch(ISSUE, issue, {"assignee": "bob"})

    async def run_create(ctx: ActionContext) -> None:
        await ctx.data.run("tracker.issue.create", inputs={"project": project, "title": "Hello"})

    for effect in (patch_it, run_create):
        result = await meddle(rules_host, reports, effect)
        assert result.status == 400 and "archived" in result.json["error"]["message"]
    # A dry run runs the validators too.
    dry = await client.request(
        "POST",
        "/actions/tracker.issue.create",
        query={"dryRun": "true"},
        body=b'{"subject": null, "inputs": {"project": "%s", "title": "Dry"}}' % project.encode(),
        headers={"Content-Type": "application/json"},
    )
    assert_refused(dry, 400, "BadRequest", "archived")
    assert await database(rules_host) == before


async def test_a_failing_validator_rolls_back_every_write_of_the_action(
    rules_host: Host, reports: Reports
) -> None:
    client = member(rules_host)
    open_project = await new_project(client, key="OPEN")
    closed = await new_project(client, key="SHUT")
    issue = await new_issue(client, open_project)
    await archive(client, closed)
    before = await database(rules_host)

    async def several(ctx: ActionContext) -> None:
        ctx.set("text", "several writes")
        await ctx.data.patch(ISSUE, issue, {"assignee": "carol"})  # allowed
        await ctx.data.run("tracker.issue.done", subject=issue)  # allowed, with its event
        await ctx.data.run("tracker.issue.create", inputs={"project": closed, "title": "Late"})

    result = await meddle(rules_host, reports, several)
    assert_refused(result, 400, "BadRequest", "SHUT is archived")
    assert await database(rules_host) == before


async def test_a_validator_sees_the_write_the_actor_and_the_acting_plugin(
    rules_host: Host, reports: Reports, tracker: Tracker
) -> None:
    client = member(rules_host)
    project = await new_project(client)
    issue = await new_issue(client, project, points=3)
    create = tracker.validated[-1]
    assert create.kind == "create" and create.before is None and create.entity == ISSUE
    assert create.after["id"] == issue and create.after["reporter"] == "alice"
    assert create.after["project_owner"] == "alice"  # after the effect's ctx.set
    assert create.changes["points"] == 3 and create.plugin == "tracker"
    assert create.action == "tracker.issue.create" and create.actor_id == "alice"

    async def patch_it(ctx: ActionContext) -> None:
        await ctx.data.patch(ISSUE, issue, {"assignee": "bob"})

    assert (await meddle(rules_host, reports, patch_it)).status == 200
    patch = tracker.validated[-1]
    assert patch.kind == "update" and patch.plugin == "reports"
    assert patch.action == "reports.note.create"
    assert patch.before is not None and patch.before["assignee"] is None
    assert patch.changes == {"assignee": "bob"} and patch.after["assignee"] == "bob"
    assert patch.after["_version"] != patch.before["_version"]


async def test_increments_follow_the_entity_rules(
    rules_host: Host, reports: Reports, tracker: Tracker
) -> None:
    client = member(rules_host)
    project = await new_project(client)
    issue = await new_issue(client, project, points=3)

    async def add(by: int, field: str = "points") -> Any:
        async def effect(ctx: ActionContext) -> None:
            await ctx.data.increment(ISSUE, issue, field, by)

        return await meddle(rules_host, reports, effect)

    assert (await add(2)).status == 200
    seen = tracker.validated[-1]
    assert seen.kind == "update" and seen.plugin == "reports"
    assert seen.before is not None and seen.before["points"] == 3
    assert seen.changes == {"points": 5} and seen.after["points"] == 5
    assert seen.after["_version"] != seen.before["_version"]
    before = await database(rules_host)
    assert_refused(await add(96), 400, "BadRequest", "'points'", "100")  # past the maximum
    assert_refused(await add(-6), 400, "BadRequest", "'points'", "0")  # below the minimum
    assert_refused(await add(1, "votes"), 403, "PolicyDenied", "'votes'", "tracker")
    await archive(client, project)
    archived = await database(rules_host)
    assert_refused(await add(1), 400, "BadRequest", "archived")  # the validator
    assert await database(rules_host) == archived
    assert before[ISSUE] == archived[ISSUE]


# -- ownership ----------------------------------------------------------------------------------


async def test_another_plugin_cannot_write_owned_fields_or_move_an_owned_workflow(
    rules_host: Host, reports: Reports
) -> None:
    client = member(rules_host)
    project = await new_project(client)
    issue = await new_issue(client, project)
    before = await database(rules_host)

    async def set_reporter(ctx: ActionContext) -> None:
        await ctx.data.create(ISSUE, {"project": project, "title": "Forged", "reporter": "mallory"})

    async def move_scope(ctx: ActionContext) -> None:
        await ctx.data.patch(ISSUE, issue, {"project_owner": "mallory"})

    async def force_done(ctx: ActionContext) -> None:
        await ctx.data.transition(ISSUE, issue, "finish")

    cases = (
        (set_reporter, "'reporter'"),
        (move_scope, "'project_owner'"),
        (force_done, "'state'"),
    )
    for effect, field in cases:
        result = await meddle(rules_host, reports, effect)
        assert_refused(result, 403, "PolicyDenied", field, "owned by plugin 'tracker'")
    assert await database(rules_host) == before
    # The row scope still shows the issue to its project's owner only.
    assert [row["id"] for row in (await client.projection("tracker.issue.mine")).items] == [issue]
    mallory = rules_host.client(tenant="t1", actor="mallory")
    assert (await mallory.projection("tracker.issue.mine")).items == []


async def test_the_owner_stamps_but_requests_never_set_effect_only_fields(
    rules_host: Host,
) -> None:
    client = member(rules_host)
    project = await new_project(client)
    issue = await new_issue(client, project)
    assert (await client.action("tracker.issue.done", subject=issue)).status == 200
    # reopen takes ANY_FIELD inputs: the owner's own fields are stamped, effect-only ones not.
    result = await client.action(
        "tracker.issue.reopen",
        subject=issue,
        inputs={"assignee": "bob", "project_owner": "mallory", "done_by": "mallory"},
    )
    assert result.outputs["assignee"] == "bob"
    assert "project_owner" not in result.outputs and "done_by" not in result.outputs
    row = await entity_row(rules_host.database_url, ISSUE, issue)
    assert row is not None
    assert row["project_owner"] == "alice" and row["done_by"] == "alice"
    assert row["assignee"] == "bob" and row["state"] == "open"


async def test_a_transition_of_a_new_plugin_stamps_nothing_unless_asked(rules_host: Host) -> None:
    client = member(rules_host)
    project = await new_project(client)
    issue = await new_issue(client, project, assignee="bob")
    result = await client.action(
        "tracker.issue.done", subject=issue, inputs={"assignee": "eve", "title": "Changed!"}
    )
    assert set(result.outputs) == {"state", "done_by", "_version"}
    row = await entity_row(rules_host.database_url, ISSUE, issue)
    assert row is not None
    assert row["assignee"] == "bob" and row["title"] == "Broken link" and row["state"] == "done"
    # The inputs are accepted and kept in the audit record only.
    [record] = await audit_rows(
        rules_host.database_url, action="tracker.issue.done", subject_id=issue
    )
    assert "Changed!" in str(record["inputs"])


# -- running the owner's action -----------------------------------------------------------------


async def until(check: Any, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_ctx_data_run_runs_the_owners_chain_and_produces_its_event(
    rules_host: Host, reports: Reports
) -> None:
    client = member(rules_host, actor="dora")
    project = await new_project(client)
    issue = await new_issue(client, project)
    seen: dict[str, Any] = {}

    async def done_properly(ctx: ActionContext) -> None:
        seen["outputs"] = dict(await ctx.data.run("tracker.issue.done", subject=issue))
        created = await ctx.data.run(
            "tracker.issue.create", inputs={"project": project, "title": "Follow-up"}
        )
        seen["created"] = created["id"]

    result = await meddle(rules_host, reports, done_properly, client)
    assert result.status == 200, result.json
    assert seen["outputs"]["state"] == "done" and seen["outputs"]["done_by"] == "dora"
    row = await entity_row(rules_host.database_url, ISSUE, issue)
    assert row is not None and row["state"] == "done" and row["done_by"] == "dora"
    assert row["_version"] == seen["outputs"]["_version"]
    created = await entity_row(rules_host.database_url, ISSUE, seen["created"])
    assert created is not None
    assert created["reporter"] == "dora" and created["project_owner"] == "dora"
    [record] = await audit_rows(
        rules_host.database_url, action="tracker.issue.done", subject_id=issue
    )
    assert record["actor_id"] == "dora"
    await until(lambda: any(e.subject_id == issue for e in reports.events))
    [event] = [e for e in reports.events if e.subject_id == issue]
    assert event.action == "tracker.issue.done" and event.actor_id == "dora"
    assert event.outputs["state"] == "done"


async def test_ctx_data_run_applies_the_actions_role_check_and_gate(
    rules_host: Host, reports: Reports
) -> None:
    client = member(rules_host)
    project = await new_project(client)
    issue = await new_issue(client, project)
    before = await database(rules_host)

    async def done(ctx: ActionContext) -> None:
        await ctx.data.run("tracker.issue.done", subject=issue)

    outsider = rules_host.client(tenant="t1", actor="olaf", roles=["guest"])
    result = await meddle(rules_host, reports, done, outsider)
    assert_refused(result, 403, "PolicyDenied", "tracker.issue.done", "member")

    async def twice(ctx: ActionContext) -> None:
        await ctx.data.run("tracker.issue.done", subject=issue)
        await ctx.data.run("tracker.issue.done", subject=issue)

    result = await meddle(rules_host, reports, twice)
    assert_refused(result, 409, "WorkflowStateMismatch")

    async def unknown(ctx: ActionContext) -> None:
        await ctx.data.run("tracker.issue.nothing", subject=issue)

    assert_refused(await meddle(rules_host, reports, unknown), 404, "UnknownAction")
    assert await database(rules_host) == before


async def test_nested_runs_are_bounded_and_roll_back_whole(
    rules_host: Host, reports: Reports
) -> None:
    client = member(rules_host)
    before = await database(rules_host)
    calls: list[int] = []

    async def again(ctx: ActionContext) -> None:
        calls.append(1)
        await ctx.data.run("reports.note.create", inputs={"text": f"level {len(calls)}"})

    result = await meddle(rules_host, reports, again, client)
    assert_refused(result, 500, "EffectFailed")
    assert len(calls) == MAX_RUN_DEPTH + 1  # the HTTP action, then MAX_RUN_DEPTH nested runs
    assert await database(rules_host) == before


async def test_a_validator_that_breaks_is_a_500_and_nothing_is_written(
    rules_host: Host, tracker: Tracker
) -> None:
    client = member(rules_host)
    project = await new_project(client)
    before = await database(rules_host)

    def broken(write: Any) -> None:
        raise KeyError("a bug in the validator")

    tracker.check = broken
    result = await client.action(
        "tracker.issue.create", inputs={"project": project, "title": "Anything"}
    )
    assert_refused(result, 500, "InternalError")
    assert await database(rules_host) == before


async def test_the_openapi_document_shows_declared_constraints_only(rules_host: Host) -> None:
    answer = await member(rules_host).request("GET", "/openapi.json")
    assert answer.status == 200
    text = json.dumps(answer.json, separators=(",", ":"))
    assert '"pattern":"^(?:[A-Z][A-Z0-9]{1,9})$"' in text  # the project's key
    assert '"maxLength":40,"minLength":1' in text  # the project's name, max enforced
    assert "maxLength is enforced (400 beyond it)" in text
    # the issue's title: its advisory max is no rule of the request (issue 40)
    assert '"minLength":3,"type":"string","x-tessera-advisory-max-length":80' in text
    assert "At most 80 characters is advisory" in text
    assert '"format":"int64","maximum":100,"minimum":0' in text  # the issue's points
