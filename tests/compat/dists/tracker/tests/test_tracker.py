"""The tracker's tests, on the real host (the `tessera` fixture of tessera-host)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

import pytest

from plugin_api.testing import Client, Host, TesseraHarness

PROJECT = "tracker.project"
ISSUE = "tracker.issue"
COMMENT = "tracker.comment"
LISTS = {"acceptSchemaVersions": "1.1.0"}


@pytest.fixture
async def host(tessera: TesseraHarness) -> Host:
    return await tessera.start(plugins=["tracker"])


@pytest.fixture
def ada(host: Host) -> Client:
    return host.client(tenant="acme", actor="ada", roles=["admin", "member"])


@pytest.fixture
def bob(host: Host) -> Client:
    return host.client(tenant="acme", actor="bob", roles=["member"])


async def new_project(client: Client, key: str = "WEB") -> str:
    result = await client.action(f"{PROJECT}.create", inputs={"key": key, "name": f"{key} site"})
    return str(result.outputs["id"])


async def new_issue(client: Client, project: str, title: str, body: str | None = None) -> str:
    inputs = {"project": project, "title": title, "body": body}
    return str((await client.action(f"{ISSUE}.open", inputs=inputs)).outputs["id"])


async def titles(client: Client, **query: str) -> list[str]:
    page = await client.projection(f"{ISSUE}.board", query={**LISTS, **query})
    return [row["title"] for row in page.items]


async def detail(client: Client, issue: str) -> dict[str, Any]:
    item = (await client.projection(f"{ISSUE}.detail", subject=issue)).item
    assert item is not None
    return item


async def test_an_issue_is_opened_worked_and_closed(ada: Client, bob: Client) -> None:
    issue = await new_issue(bob, await new_project(ada), "Login fails")
    assert (await detail(bob, issue))["reporter"] == "bob"
    started = await bob.action(f"{ISSUE}.start", subject=issue)
    assert started.outputs["assignee"] == "bob"
    closed = await bob.action(f"{ISSUE}.close", subject=issue)
    assert closed.outputs["state"] == "closed" and closed.outputs["closed_at"].endswith("Z")
    again = await bob.action(f"{ISSUE}.close", subject=issue)
    assert (again.status, again.error_kind) == (409, "WorkflowStateMismatch")
    reopened = await bob.action(f"{ISSUE}.reopen", subject=issue)
    assert reopened.outputs["closed_at"] is None


async def test_comments_are_counted_once_each(ada: Client, bob: Client) -> None:
    issue = await new_issue(bob, await new_project(ada), "Slow page")
    for text in ("Seen it too", "Fixed on staging"):
        await bob.action(f"{COMMENT}.add", inputs={"issue": issue, "text": text})
    deadline = asyncio.get_running_loop().time() + 10
    while (await detail(bob, issue))["comments"] != 2:
        assert asyncio.get_running_loop().time() < deadline, await detail(bob, issue)
        await asyncio.sleep(0.05)
    thread = await bob.projection(f"{COMMENT}.thread", query={**LISTS, "filter.issue": issue})
    assert [row["text"] for row in thread.items] == ["Seen it too", "Fixed on staging"]
    assert {row["author"] for row in thread.items} == {"bob"}
    second = await bob.projection(f"{COMMENT}.thread", subject=thread.items[1]["id"])
    assert second.item is not None


async def test_the_board_filters_sorts_and_searches(ada: Client, bob: Client) -> None:
    web, app = await new_project(ada, "WEB"), await new_project(ada, "APP")
    first = await new_issue(bob, web, "Header overlaps", body="on the printer stylesheet")
    await new_issue(bob, app, "Crash on start")
    third = await new_issue(bob, web, "Typo in footer")
    # The most recently touched first.
    assert await titles(bob) == ["Typo in footer", "Crash on start", "Header overlaps"]
    await bob.action(f"{ISSUE}.edit", subject=first, inputs={"assignee": "bob"})
    assert await titles(bob) == ["Header overlaps", "Typo in footer", "Crash on start"]
    assert await titles(bob, sort="created_at") == [
        "Header overlaps",
        "Crash on start",
        "Typo in footer",
    ]
    assert await titles(bob, **{"filter.project": web, "sort": "title"}) == [
        "Header overlaps",
        "Typo in footer",
    ]
    since = (await detail(bob, third))["created_at"]
    assert await titles(bob, **{"filter.created_at.gte": since}) == ["Typo in footer"]
    assert await titles(bob, **{"filter.assignee.null": "true"}) == [
        "Typo in footer",
        "Crash on start",
    ]
    assert await titles(bob, q="printer") == ["Header overlaps"]
    page = await bob.projection(f"{ISSUE}.board", query={**LISTS, "pageSize": "2"})
    cursor = page.json["data"]["pagination"]["nextCursor"]
    rest = await titles(bob, pageSize="2", cursor=cursor)
    assert rest == ["Crash on start"]


async def test_the_thread_lists_comments_since(ada: Client, bob: Client) -> None:
    issue = await new_issue(bob, await new_project(ada), "Flaky test")
    await bob.action(f"{COMMENT}.add", inputs={"issue": issue, "text": "one"})
    await asyncio.sleep(0.01)
    since = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
    for text in ("two", "three"):
        await bob.action(f"{COMMENT}.add", inputs={"issue": issue, "text": text})
    later = await bob.projection(
        f"{COMMENT}.thread", query={**LISTS, "filter.issue": issue, "filter.created_at.gte": since}
    )
    assert [row["text"] for row in later.items] == ["two", "three"]
    newest = await bob.projection(f"{COMMENT}.thread", query={**LISTS, "sort": "-created_at"})
    assert [row["text"] for row in newest.items] == ["three", "two", "one"]


async def test_members_only(host: Host, ada: Client) -> None:
    project = await new_project(ada)
    guest = host.client(tenant="acme", actor="gus", roles=["guest"])
    refused = await guest.action(f"{ISSUE}.open", inputs={"project": project, "title": "Hi"})
    assert (refused.status, refused.error_kind) == (403, "PolicyDenied")
    board = await guest.projection(f"{ISSUE}.board")
    assert (board.status, board.error_kind) == (403, "PolicyDenied")
    projects = await guest.projection(f"{PROJECT}.list")
    assert [row["key"] for row in projects.items] == ["WEB"]


async def test_references_stay_in_the_tenant(ada: Client, bob: Client) -> None:
    foreign = await new_issue(
        bob.as_(tenant="other"), await new_project(ada.as_(tenant="other")), "Theirs"
    )
    result = await bob.action(f"{COMMENT}.add", inputs={"issue": foreign, "text": "Me too"})
    assert (result.status, result.error_kind) == (400, "BadRequest")
