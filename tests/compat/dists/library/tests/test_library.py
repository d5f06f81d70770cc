"""The library plugin's tests, on the real host (the `tessera` fixture of tessera-host)."""

from __future__ import annotations

import pytest

from plugin_api.testing import Client, Host, TesseraHarness

BOOK = "library.book"
LOAN = "library.loan"
DUE = "2031-01-15T12:00:00Z"
LISTS = {"acceptSchemaVersions": "1.1.0"}


@pytest.fixture
async def host(tessera: TesseraHarness) -> Host:
    return await tessera.start(plugins=["library"])


@pytest.fixture
def lisa(host: Host) -> Client:
    return host.client(tenant="town", actor="lisa", roles=["librarian"])


@pytest.fixture
def max_(host: Host) -> Client:
    return host.client(tenant="town", actor="max", roles=["member"])


async def add_book(client: Client, title: str, **more: str) -> str:
    inputs = {"title": title, "author": "A. Author", "shelf": "fiction", **more}
    return str((await client.action(f"{BOOK}.add", inputs=inputs)).outputs["id"])


async def lend(client: Client, book: str, borrower: str = "max") -> str:
    inputs = {"book": book, "borrower": borrower, "due_at": DUE}
    return str((await client.action(f"{LOAN}.lend", inputs=inputs)).outputs["id"])


async def test_a_book_is_lent_once_until_returned(lisa: Client, max_: Client) -> None:
    book = await add_book(lisa, "Dune")
    loan = await lend(lisa, book)
    detail = await lisa.projection(f"{BOOK}.detail", subject=book)
    assert detail.item is not None and detail.item["on_loan"] is True
    twice = await lisa.action(
        f"{LOAN}.lend", inputs={"book": book, "borrower": "eve", "due_at": DUE}
    )
    assert (twice.status, twice.error_kind) == (409, "WorkflowStateMismatch")
    back = await max_.action(f"{LOAN}.give_back", subject=loan)
    assert back.outputs["state"] == "returned" and back.outputs["returned_at"].endswith("Z")
    detail = await lisa.projection(f"{BOOK}.detail", subject=book)
    assert detail.item is not None and detail.item["on_loan"] is False
    assert (
        await lisa.action(f"{LOAN}.lend", inputs={"book": book, "borrower": "eve", "due_at": DUE})
    ).status == 200


async def test_a_loan_names_a_book_of_this_library(lisa: Client) -> None:
    elsewhere = await add_book(lisa.as_(tenant="city"), "Elsewhere")
    result = await lisa.action(
        f"{LOAN}.lend", inputs={"book": elsewhere, "borrower": "max", "due_at": DUE}
    )
    assert (result.status, result.error_kind) == (400, "BadRequest")


async def test_members_read_and_return_their_own_loans(
    host: Host, lisa: Client, max_: Client
) -> None:
    mine = await lend(lisa, await add_book(lisa, "Mine"))
    theirs = await lend(lisa, await add_book(lisa, "Theirs"), borrower="eve")
    listed = await max_.projection(f"{LOAN}.mine")
    assert [row["id"] for row in listed.items] == [mine]
    assert len((await lisa.projection(f"{LOAN}.mine")).items) == 2
    refused = await max_.action(f"{LOAN}.give_back", subject=theirs)
    assert (refused.status, refused.error_kind) == (403, "PolicyDenied")
    anonymous = host.client(tenant="town", roles=["member"])
    assert (await anonymous.action(f"{LOAN}.give_back", subject=mine)).status == 403
    stranger = await host.client(tenant="town", actor="bob").projection(f"{LOAN}.mine")
    assert (stranger.status, stranger.error_kind) == (403, "PolicyDenied")


async def test_the_desk_shows_loans_still_out(host: Host, lisa: Client) -> None:
    out = await lend(lisa, await add_book(lisa, "Out"))
    lost = await lend(lisa, await add_book(lisa, "Lost"))
    await lisa.action(f"{LOAN}.lose", subject=lost)
    assert [row["id"] for row in (await lisa.projection(f"{LOAN}.desk")).items] == [out]
    head = host.client(tenant="town", actor="hal", roles=["librarian", "head"])
    assert len((await head.projection(f"{LOAN}.desk")).items) == 2


async def test_the_catalogue_filters_sorts_and_searches(lisa: Client) -> None:
    await add_book(lisa, "Zebra tales", shelf="kids", summary="Stripes and friendship")
    await add_book(lisa, "Atoms", shelf="science", author="N. Bohr")
    await add_book(lisa, "Castles", shelf="history", summary="Dragons guard the keep")
    page = await lisa.projection(f"{BOOK}.catalogue", query=LISTS)
    assert [row["title"] for row in page.items] == ["Atoms", "Castles", "Zebra tales"]
    science = await lisa.projection(
        f"{BOOK}.catalogue", query={**LISTS, "filter.shelf.in": "science,kids", "sort": "-title"}
    )
    assert [row["title"] for row in science.items] == ["Zebra tales", "Atoms"]
    found = await lisa.projection(f"{BOOK}.catalogue", query={**LISTS, "q": "dragons"})
    assert [row["title"] for row in found.items] == ["Castles"]
    bohr = await lisa.projection(
        f"{BOOK}.catalogue", query={**LISTS, "filter.author.contains": "bohr"}
    )
    assert [row["title"] for row in bohr.items] == ["Atoms"]
    first = await lisa.projection(f"{BOOK}.catalogue", query={**LISTS, "pageSize": "2"})
    cursor = first.json["data"]["pagination"]["nextCursor"]
    rest = await lisa.projection(
        f"{BOOK}.catalogue", query={**LISTS, "pageSize": "2", "cursor": cursor}
    )
    assert [row["title"] for row in rest.items] == ["Zebra tales"]


async def test_a_v01_client_gets_every_row_in_id_order(lisa: Client) -> None:
    ids = [await add_book(lisa, title) for title in ("B", "A")]
    page = await lisa.projection(f"{BOOK}.catalogue")
    assert [row["id"] for row in page.items] == sorted(ids)
    assert page.json["schemaVersion"] == "1.0.0" and page.json["filters"] == []
