"""Issue 30's story end to end, on the backend of the run, through HTTP: another plugin can no
longer walk around the tracker's rules through ``ctx.data``; it runs the tracker's action
instead, whose effect counts on the project without conflicts and whose state change reaches
a state subscriber; the board shows and sorts by the project's key under an OR scope, and a
scope through the reference shows a project owner the issues of their projects."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from plugin_api import ActionContext
from plugin_api.testing import Client, Host, TesseraHarness

from ._story import BOARD, ISSUE, OWNED, PROJECT, Outsider, Story

FAST: dict[str, Any] = {"events_poll_s": 0.02, "events_backoff_s": 0.01}


@pytest.fixture
def story() -> Story:
    return Story()


@pytest.fixture
def outsider() -> Outsider:
    return Outsider()


@pytest.fixture
async def host(tessera: TesseraHarness, story: Story, outsider: Outsider) -> Host:
    extra = [("story", story), ("outsider", outsider)]
    return await tessera.start(plugins=[], extra=extra, entry_points=False, **FAST)


def as_(host: Host, actor: str) -> Client:
    return host.client(tenant="t1", actor=actor, roles=["member"])


async def created(client: Client, action: str, **inputs: Any) -> str:
    result = await client.action(action, inputs=inputs)
    assert result.status == 200, result.json
    return str(result.outputs["id"])


async def meddle(host: Host, outsider: Outsider, effect: Any, actor: str = "eve") -> Any:
    outsider.meddle = effect
    return await as_(host, actor).action("outsider.note.create", inputs={"text": "n"})


async def test_another_plugin_runs_the_owners_action_instead_of_walking_around_it(
    host: Host, story: Story, outsider: Outsider
) -> None:
    olga = as_(host, "olga")
    web = await created(olga, "story.project.create", key="WEB")
    old = await created(olga, "story.project.create", key="OLD")
    issue = await created(as_(host, "ann"), "story.issue.create", project=web, title="Broken")
    await olga.action("story.project.archive", subject=old, inputs={"archived": True})

    async def in_archived(ctx: ActionContext) -> None:  # even through the owner's action
        await ctx.data.run("story.issue.create", inputs={"project": old, "title": "Sneaky"})

    async def forge_reporter(ctx: ActionContext) -> None:
        await ctx.data.patch(ISSUE, issue, {"reporter": "mallory"})

    async def force_done(ctx: ActionContext) -> None:
        await ctx.data.transition(ISSUE, issue, "finish")

    async def bump_count(ctx: ActionContext) -> None:
        await ctx.data.increment(PROJECT, web, "done_count")

    refusals = [
        (in_archived, 400, "BadRequest", "archived"),
        (forge_reporter, 403, "PolicyDenied", "'reporter'"),
        (force_done, 403, "PolicyDenied", "'state'"),
        (bump_count, 403, "PolicyDenied", "'done_count'"),
    ]
    for effect, status, kind, word in refusals:
        result = await meddle(host, outsider, effect)
        assert (result.status, result.error_kind) == (status, kind), result.json
        assert word in result.json["error"]["message"]
    direct = await olga.action("story.issue.create", inputs={"project": old, "title": "Late"})
    assert (direct.status, direct.error_kind) == (400, "BadRequest")
    assert (await host.deliveries_settled()) == {}
    assert story.state_changes == []

    async def done_properly(ctx: ActionContext) -> None:
        await ctx.data.run("story.issue.finish", subject=issue)

    assert (await meddle(host, outsider, done_properly)).status == 200
    detail = await olga.projection("story.project.detail", subject=web)
    assert detail.item is not None and detail.item["done_count"] == 1  # the owner's effect ran
    assert (await host.deliveries_settled()) == {}
    [event] = story.state_changes
    assert (event.subject_id, event.action, event.outputs["state"]) == (
        issue,
        "story.issue.finish",
        "done",
    )
    trail = await host.audit_trail(ISSUE, issue)
    assert [record.action for record in trail] == ["story.issue.finish", "story.issue.create"]
    assert trail[0].actor_id == "eve" and trail[0].changes is not None
    assert trail[0].changes["state"] == ("open", "done")


async def test_concurrent_finishes_count_on_one_project_without_conflicts(
    host: Host, story: Story
) -> None:
    olga = as_(host, "olga")
    web = await created(olga, "story.project.create", key="WEB")
    issues = [
        await created(olga, "story.issue.create", project=web, title=f"Issue {n}")
        for n in range(20)
    ]
    results = await asyncio.gather(
        *(olga.action("story.issue.finish", subject=issue) for issue in issues)
    )
    assert [result.status for result in results] == [200] * 20, [r.json for r in results]
    detail = await olga.projection("story.project.detail", subject=web)
    assert detail.item is not None and detail.item["done_count"] == 20
    await host.deliveries_settled()
    assert sorted(event.subject_id for event in story.state_changes) == sorted(issues)


async def test_the_board_follows_the_reference_under_an_or_scope(host: Host) -> None:
    olga, piet = as_(host, "olga"), as_(host, "piet")
    web = await created(olga, "story.project.create", key="WEB")
    app = await created(piet, "story.project.create", key="APP")
    ann = as_(host, "ann")
    mine = await created(ann, "story.issue.create", project=web, title="Reported by ann")
    assigned = await created(olga, "story.issue.create", project=app, title="Given", assignee="ann")
    other = await created(olga, "story.issue.create", project=web, title="Not ann's")
    board = await ann.projection(BOARD, query={"sort": "project.key"})
    assert board.status == 200, board.json
    assert [(row["id"], row["project.key"]) for row in board.items] == [
        (assigned, "APP"),
        (mine, "WEB"),
    ]
    only_web = await ann.projection(BOARD, query={"filter.project.key": "WEB"})
    assert [row["id"] for row in only_web.items] == [mine]
    # A scope through the reference: a project's owner reads its issues, whoever reported them.
    owned = await olga.projection(OWNED)
    assert sorted(row["id"] for row in owned.items) == sorted([mine, other])
    assert {row["project.key"] for row in (await piet.projection(OWNED)).items} == {"APP"}
    # References render as their target's display text at ViewSchema 1.4.0.
    latest = await ann.projection(BOARD, query={"acceptSchemaVersions": "1.4.0"})
    assert {row["_display"]["project"] for row in latest.items} == {"APP", "WEB"}
