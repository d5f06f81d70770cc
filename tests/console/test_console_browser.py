"""The console in a real browser (Playwright driving Debian's chromium) against a real
Hypercorn process: create, filter and page, transition, a stale update, a role that may not
act, a second tenant. Skipped, saying why, when no chromium is installed.

``TESSERA_SCREENSHOTS=docs/console`` also saves the screenshots of docs/console.md there."""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..server.conftest import Server, run_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = os.environ.get("TESSERA_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
QUEUE = "helpdesk.ticket.queue"
DETAIL = "helpdesk.ticket.detail"

if not Path(CHROMIUM).exists():
    pytest.skip(
        f"no chromium at {CHROMIUM}: install Debian's 'chromium' (apt-get install -y chromium) "
        "or point TESSERA_CHROMIUM at one to run the browser tests",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"TESSERA_CONSOLE": "on", "TESSERA_SERVE_BIND": "127.0.0.1"}
    with run_server(tmp_path_factory.mktemp("console"), env=env) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        yield launched
        launched.close()


@pytest.fixture
def tenant() -> str:
    return "b" + secrets.token_hex(4)  # the PostgreSQL database is shared by the session


def _page(browser: Any, server: Server, tenant: str, actor: str, roles: str) -> Any:
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    page = context.new_page()
    page.goto(f"{server.base_url}/-/console/as")
    page.get_by_label("Tenant").fill(tenant)
    page.get_by_label("Actor").fill(actor)
    page.get_by_label("Roles (comma-separated)").fill(roles)
    page.get_by_role("button", name="Act as").click()
    page.wait_for_url("**/-/console/")
    return page


def _shot(page: Any, name: str) -> None:
    folder = os.environ.get("TESSERA_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"))


def _create(page: Any, server: Server, title: str, priority: str = "normal") -> str:
    page.goto(f"{server.base_url}/-/console/p/{QUEUE}")
    page.get_by_role("link", name="Create…").click()
    page.get_by_label("Title").fill(title)
    page.get_by_label("Priority").select_option(priority)
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(re.compile(r".*/p/helpdesk\.ticket\.queue/[0-9A-Z]+\?done=Create"))
    return str(page.url.rsplit("/", 1)[1].split("?")[0])


def _two_agents(browser: Any, server: Server, tenant: str, title: str) -> tuple[Any, Any, str]:
    """alice's page (she created a ticket titled ``title``), bob's page, and the ticket."""
    first = _page(browser, server, tenant, "alice", "agent")
    ticket = _create(first, server, title)
    return first, _page(browser, server, tenant, "bob", "agent"), ticket


def test_create_filter_page_and_transition(browser: Any, server: Server, tenant: str) -> None:
    page = _page(browser, server, tenant, "alice", "agent,requester")
    _shot(page, "home")
    for n in range(3):
        _create(page, server, f"Ticket {n}", "high")
    _create(page, server, "Quiet one", "low")
    page.goto(f"{server.base_url}/-/console/p/{QUEUE}")
    form = page.get_by_role("form", name="Filter, sort and search")
    form.locator("#f-priority-v").select_option("high")
    form.get_by_label("Sort").select_option("title")
    form.get_by_label("Rows per page").fill("2")
    form.get_by_role("button", name="Apply").click()
    rows = page.locator("table.rows tbody tr")
    assert rows.count() == 2
    assert "Ticket 0" in rows.nth(0).inner_text() and "Ticket 1" in rows.nth(1).inner_text()
    _shot(page, "list")
    page.get_by_role("link", name="Next page →").click()
    assert page.locator("table.rows tbody tr").count() == 1
    assert "Ticket 2" in page.locator("table.rows tbody tr").inner_text()
    assert page.get_by_role("link", name="Next page →").count() == 0
    page.get_by_role("button", name=re.compile(r"^Start ")).click()
    page.wait_for_url(re.compile(r".*done=Start"))
    assert "Done: Start." in page.locator("main").inner_text()
    ticket = page.locator("table.rows tbody tr").first.locator("a").first.inner_text()
    page.goto(f"{server.base_url}/-/console/p/{DETAIL}/{ticket}")
    assert "In progress" in page.locator("dl.item .badge").inner_text()
    _shot(page, "detail")


def test_a_stale_update_says_someone_else_changed_it(
    browser: Any, server: Server, tenant: str
) -> None:
    first, second, ticket = _two_agents(browser, server, tenant, "Shared ticket")
    for page in (first, second):
        page.goto(f"{server.base_url}/-/console/p/{DETAIL}/{ticket}")
    first.locator("#in-title").fill("Alice's title")
    first.get_by_role("button", name="Edit").click()
    first.wait_for_url(re.compile(r".*done=Edit"))
    second.locator("#in-title").fill("Bob's title")
    second.get_by_role("button", name="Edit").click()
    alert = second.get_by_role("alert")
    assert "changed by someone else" in alert.inner_text()
    _shot(second, "conflict")
    second.get_by_role("link", name=f"Reload {ticket}").click()
    assert "Alice's title" in second.locator("dl.item").inner_text()


def test_a_change_by_someone_else_shows_a_reload_notice(
    browser: Any, server: Server, tenant: str
) -> None:
    watcher, other, ticket = _two_agents(browser, server, tenant, "Watched ticket")
    detail = f"{server.base_url}/-/console/p/{DETAIL}/{ticket}"
    other.goto(detail)
    watcher.goto(detail)
    watcher.wait_for_selector('#live[data-live="open"]', state="attached")
    assert watcher.locator("#live").inner_text() == ""
    other.get_by_role("button", name=f"Start {ticket}").click()
    other.wait_for_url(re.compile(r".*done=Start"))
    notice = watcher.get_by_role("status").filter(has_text="changed by someone else")
    notice.wait_for()
    assert notice.inner_text() == "This record was changed by someone else — reload"
    assert "Open" in watcher.locator("dl.item .badge").inner_text()  # not reloaded by itself
    with watcher.expect_navigation():
        notice.get_by_role("link", name="reload").click()
    assert "In progress" in watcher.locator("dl.item .badge").inner_text()
    assert watcher.locator("#live").inner_text() == ""


def test_a_role_that_may_not_act_and_a_second_tenant(
    browser: Any, server: Server, tenant: str
) -> None:
    agent = _page(browser, server, tenant, "alice", "agent")
    _create(agent, server, "Agents only")
    requester = _page(browser, server, tenant, "bob", "requester")
    requester.goto(f"{server.base_url}/-/console/p/{QUEUE}")
    ticket = requester.locator("table.rows tbody tr").first.locator("a").first.inner_text()
    # the queue (no read access declared) offers every action; the API refuses the step
    requester.get_by_role("button", name=f"Start {ticket}").click()
    alert = requester.get_by_role("alert")
    assert "You are not allowed to do this" in alert.inner_text()
    _shot(requester, "refused")
    requester.goto(f"{server.base_url}/-/console/p/{DETAIL}/{ticket}")
    assert "Open" in requester.locator("dl.item .badge").inner_text()
    other = _page(browser, server, tenant + "x", "alice", "agent")
    other.goto(f"{server.base_url}/-/console/p/{QUEUE}")
    assert "No rows." in other.locator("table.rows tbody").inner_text()
    assert "Agents only" not in other.content()
    other.goto(f"{server.base_url}/-/console/p/{DETAIL}/{ticket}")
    assert "There is nothing here" in other.locator("main").inner_text()


def test_phone_width_and_dark_scheme(browser: Any, server: Server, tenant: str) -> None:
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, color_scheme="dark", is_mobile=True
    )
    page = context.new_page()
    page.goto(f"{server.base_url}/-/console/as")
    page.get_by_label("Tenant").fill(tenant)
    page.get_by_label("Roles (comma-separated)").fill("agent")
    page.get_by_role("button", name="Act as").click()
    page.goto(f"{server.base_url}/-/console/p/{QUEUE}")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing wider than the phone: the table scrolls in its own region
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(21, 23, 26)"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    _shot(page, "phone-dark")
    context.close()
