"""The chores plugin on the real host (the tessera fixture of tessera-host)."""

from __future__ import annotations

import pytest

from plugin_api.testing import Client, Host, TesseraHarness

CHORE = "chores.chore"


@pytest.fixture
async def host(tessera: TesseraHarness) -> Host:
    return await tessera.start(plugins=["chores"])


@pytest.fixture
def mum(host: Host) -> Client:
    return host.client(tenant="smiths", actor="mum", roles=["parent"])


@pytest.fixture
def tom(host: Host) -> Client:
    return host.client(tenant="smiths", actor="tom", roles=["kid"])


async def add(client: Client, title: str = "Wash the car", **inputs: object) -> str:
    result = await client.action(f"{CHORE}.add", inputs={"title": title, **inputs})
    return str(result.outputs["id"])


async def test_a_parent_adds_a_chore(mum: Client) -> None:
    chore = await add(mum, points=3, reward={"amount": "2.50", "currency": "EUR"}, outdoor=True)
    detail = await mum.projection(f"{CHORE}.detail", subject=chore)
    assert detail.item is not None
    assert (detail.item["owner"], detail.item["state"], detail.item["points"]) == ("mum", "todo", 3)
    assert detail.item["reward"] == {"amount": "2.50", "currency": "EUR"}
    assert detail.item["outdoor"] is True and detail.item["receipt"] is None


async def test_a_kid_cannot_add_chores(tom: Client) -> None:
    result = await tom.action(f"{CHORE}.add", inputs={"title": "Eat cake"})
    assert (result.status, result.error_kind) == (403, "PolicyDenied")


async def test_bad_inputs_are_refused(mum: Client) -> None:
    unknown = await mum.action(f"{CHORE}.add", inputs={"title": "Dust", "colour": "red"})
    assert (unknown.status, unknown.error_kind) == (400, "BadRequest")
    dollars = await mum.action(
        f"{CHORE}.add", inputs={"title": "Dust", "reward": {"amount": "1", "currency": "USD"}}
    )
    assert (dollars.status, dollars.error_kind) == (400, "BadRequest")


async def test_take_and_finish_give_numbered_receipts(mum: Client, tom: Client) -> None:
    receipts = []
    for title in ("Feed the cat", "Tidy up"):
        chore = await add(mum, title)
        taken = await tom.action(f"{CHORE}.take", subject=chore, inputs={"notes": "after school"})
        assert taken.outputs["assignee"] == "tom" and taken.outputs["notes"] == "after school"
        finished = await tom.action(f"{CHORE}.finish", subject=chore)
        assert finished.outputs["state"] == "done" and finished.outputs["done_at"].endswith("Z")
        receipts.append(finished.outputs["receipt"])
    assert receipts == ["R-0001", "R-0002"]


async def test_only_the_kid_who_took_it_finishes_it(host: Host, mum: Client, tom: Client) -> None:
    chore = await add(mum)
    await tom.action(f"{CHORE}.take", subject=chore)
    amy = host.client(tenant="smiths", actor="amy", roles=["kid"])
    refused = await amy.action(f"{CHORE}.finish", subject=chore)
    assert (refused.status, refused.error_kind) == (403, "PolicyDenied")
    again = await tom.action(f"{CHORE}.take", subject=chore)
    assert (again.status, again.error_kind) == (409, "WorkflowStateMismatch")


async def test_double_points_until_done(mum: Client, tom: Client) -> None:
    chore = await add(mum, points=2)
    doubled = await mum.action(f"{CHORE}.double", subject=chore)
    assert set(doubled.outputs) == {"points", "_version"} and doubled.outputs["points"] == 4
    await tom.action(f"{CHORE}.take", subject=chore)
    await tom.action(f"{CHORE}.finish", subject=chore)
    refused = await mum.action(f"{CHORE}.double", subject=chore)
    assert (refused.status, refused.error_kind) == (409, "WorkflowStateMismatch")
    redone = await mum.action(f"{CHORE}.redo", subject=chore)
    assert redone.outputs["done_at"] is None and redone.outputs["assignee"] is None


async def test_the_board_shows_one_household(mum: Client) -> None:
    await add(mum, "Ours")
    await add(mum.as_(tenant="joneses"), "Theirs")
    board = await mum.projection(f"{CHORE}.board")
    assert [row["title"] for row in board.items] == ["Ours"]
    assert board.json["data"]["pagination"] == {"pageSize": 1, "nextCursor": None}
    assert set(board.items[0]) == {
        "id",
        "title",
        "points",
        "state",
        "assignee",
        "due_at",
        "created_at",
    }
