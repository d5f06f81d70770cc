"""The console in a real browser (Playwright driving Debian's chromium) against a real
Hypercorn process: create, filter and page, transition, a stale update, a role that may not
act, a second tenant. Skipped, saying why, when no chromium is installed.

``TESSERA_SCREENSHOTS=docs/console`` also saves the screenshots of docs/console.md there."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
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
expect = sync_api.expect  # retries until the page that a click loads shows what is asserted


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # No timer loop: a ticket's due time passes and its timer stays pending, overdue.
    env = {"TESSERA_CONSOLE": "on", "TESSERA_SERVE_BIND": "127.0.0.1", "TESSERA_TIMERS_POLL": "off"}
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


def _shot(page: Any, name: str, *, full_page: bool = False) -> None:
    folder = os.environ.get("TESSERA_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=full_page)


def _step(page: Any, button: str | re.Pattern[str], label: str, shot: str = "") -> None:
    """Click a row's one-click action, see its dry run, confirm it."""
    page.get_by_role("button", name=button).click()
    confirm = page.get_by_role("button", name=f"Confirm: {label}")
    expect(confirm).to_be_visible()
    if shot:
        _shot(page, shot)
    confirm.click()
    page.wait_for_url(re.compile(rf".*done={label}"))


def _create(page: Any, server: Server, title: str, priority: str = "normal", due: str = "") -> str:
    page.goto(f"{server.base_url}/-/console/p/{QUEUE}")
    page.get_by_role("link", name="New ticket…").click()
    page.get_by_label("Title").fill(title)
    page.get_by_label("Priority").select_option(priority)
    if due:
        page.get_by_label("Due at").fill(due)
    page.get_by_role("button", name="New ticket").click()
    page.wait_for_url(re.compile(r".*/p/helpdesk\.ticket\.queue/[0-9A-Z]+\?done=New"))
    return str(page.url.rsplit("/", 1)[1].split("?")[0])


def _two_agents(browser: Any, server: Server, tenant: str, title: str) -> tuple[Any, Any, str]:
    """alice's page (she created a ticket titled ``title``), bob's page, and the ticket."""
    first = _page(browser, server, tenant, "alice", "agent")
    ticket = _create(first, server, title)
    return first, _page(browser, server, tenant, "bob", "agent"), ticket


def test_create_filter_page_and_transition(browser: Any, server: Server, tenant: str) -> None:
    page = _page(browser, server, tenant, "alice", "agent,requester")
    _shot(page, "home")
    for n in range(3):  # the last one is due later: its detail shows the pending timer
        _create(page, server, f"Ticket {n}", "high", due="2030-01-15T09:00:00" if n == 2 else "")
    _create(page, server, "Quiet one", "low")
    page.goto(f"{server.base_url}/-/console/p/{QUEUE}")
    form = page.get_by_role("form", name="Filter, sort and search")
    form.locator("#f-priority-v").select_option("high")
    form.get_by_label("Sort").select_option("title")
    form.get_by_label("Rows per page").fill("2")
    form.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r".*pageSize=2"))
    rows = page.locator("table.rows tbody tr")
    expect(rows).to_have_count(2)
    assert "Ticket 0" in rows.nth(0).inner_text() and "Ticket 1" in rows.nth(1).inner_text()
    _shot(page, "list")
    facets = page.get_by_role("complementary", name="Counts by value (click to filter)")
    facets.get_by_role("link", name="Open").click()  # the state facet: 3 open tickets
    page.wait_for_url(re.compile(r".*f\.state\.v=open"))
    expect(page.locator("p.count")).to_have_text("3 rows")
    page.go_back()
    page.get_by_role("link", name="Next page →").click()
    expect(page.locator("table.rows tbody tr")).to_have_count(1)
    assert "Ticket 2" in page.locator("table.rows tbody tr").inner_text()
    assert page.get_by_role("link", name="Next page →").count() == 0
    _step(page, re.compile(r"^Start "), "Start", "confirm")
    assert "Done: Start." in page.locator("main").inner_text()
    ticket = page.locator("table.rows tbody tr").first.locator("a").first.inner_text()
    page.goto(f"{server.base_url}/-/console/p/{DETAIL}/{ticket}")
    assert "In progress" in page.locator("dl.item .badge").inner_text()
    expect(page.locator("ol.timeline > li")).to_have_count(2)  # created, then started
    timers = page.get_by_role("region", name="Pending timers")
    expect(timers).to_contain_text("Escalate to urgent, due 2030-01-15 09:00:00Z")
    _shot(page, "detail", full_page=True)


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
    expect(second.locator("dl.item")).to_contain_text("Alice's title")


def test_a_change_by_someone_else_shows_a_reload_notice(
    browser: Any, server: Server, tenant: str
) -> None:
    watcher, other, ticket = _two_agents(browser, server, tenant, "Watched ticket")
    detail = f"{server.base_url}/-/console/p/{DETAIL}/{ticket}"
    other.goto(detail)
    watcher.goto(detail)
    # The same reader also shows the open tickets: the started one leaves that list.
    listing = watcher.context.new_page()
    listing.goto(f"{server.base_url}/-/console/p/{QUEUE}?f.state.v=open")
    for page in (watcher, listing):
        page.wait_for_selector('#live[data-live="open"]', state="attached")
    assert watcher.locator("#live").inner_text() == ""
    _step(other, f"Start {ticket}", "Start")
    left = listing.get_by_role("status").filter(has_text="left this list")
    left.wait_for()
    assert left.inner_text() == "Watched ticket left this list"
    assert left.get_attribute("aria-live") == "polite"
    expect(listing.locator(f'tr[data-row="{ticket}"]')).to_have_class("left")
    _shot(listing, "left", full_page=True)
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
    # the queue offers every action; the row's availability disables the step, saying why
    start = requester.get_by_role("button", name=f"Start {ticket}")
    expect(start).to_be_disabled()
    reason = requester.locator(f"#{start.get_attribute('aria-describedby')}")
    expect(reason).to_contain_text("agent")
    _shot(requester, "disabled")
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


# ---------------------------------------------------------------------------------------------
# Accessibility (axe-core from npm, installed by the test into an untracked folder) and
# keyboard-only use
# ---------------------------------------------------------------------------------------------

AXE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "console-a11y"
AXE = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")


@pytest.fixture(scope="module")
def axe() -> str:
    """axe-core's script: installed with npm on first use into ``.cache/`` (never committed);
    the test is skipped, saying why, where npm cannot install it."""
    if not AXE.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("no npm to install axe-core (the accessibility checker)")
        done = subprocess.run(
            [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(AXE_DIR),
             "axe-core@4"],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        if done.returncode != 0 or not AXE.exists():
            pytest.skip(f"npm could not install axe-core: {done.stderr.strip()[-300:]}")
    return AXE.read_text()


def _violations(page: Any, axe: str) -> list[str]:
    """The serious and critical axe-core violations of the page as it is shown."""
    page.add_script_tag(content=axe)
    found = page.evaluate("async () => (await axe.run(document)).violations")
    return [
        f"{v['id']} ({v['impact']}): {len(v['nodes'])} node(s), e.g. {v['nodes'][0]['target']}"
        for v in found
        if v["impact"] in SERIOUS
    ]


def test_every_console_page_has_no_serious_accessibility_violation(
    browser: Any, server: Server, tenant: str, axe: str
) -> None:
    # the console's policy allows only its own scripts: this context lets the checker in
    context = browser.new_context(viewport={"width": 1100, "height": 800}, bypass_csp=True)
    page = context.new_page()
    base = f"{server.base_url}/-/console"
    report: dict[str, list[str]] = {}
    page.goto(f"{server.base_url}/")  # the root leads to the console, which says who to be
    page.wait_for_url(f"{base}/")
    expect(page.get_by_role("heading", name="Welcome")).to_be_visible()
    report["welcome"] = _violations(page, axe)
    page.get_by_label("Tenant").fill(tenant)
    page.get_by_label("Roles (comma-separated)").fill("agent,requester")
    page.get_by_label("Actor").fill("alice")
    page.get_by_role("button", name="Act as").click()
    page.wait_for_url(f"{base}/")
    soon = datetime.now(timezone.utc) + timedelta(seconds=6)  # the console reads it as UTC
    ticket = _create(page, server, "Checked ticket", due=soon.strftime("%Y-%m-%dT%H:%M:%S"))
    pages = {
        "home": f"{base}/",
        "act as": f"{base}/as",
        "list": f"{base}/p/{QUEUE}?f.priority.v=normal&sort=title",
        "create form": f"{base}/new/{QUEUE}/helpdesk.ticket.create",
        "detail with history": f"{base}/p/{DETAIL}/{ticket}",
        "not found": f"{base}/p/{DETAIL}/NOPE",
    }
    for name, url in pages.items():
        page.goto(url)
        report[name] = _violations(page, axe)
    # The pending timer, in words; overdue once its due time passed (no timer loop here).
    timers = page.get_by_role("region", name="Pending timers")
    for _ in range(60):  # at most 15 s: the due time is 6 s after the creation
        page.goto(f"{base}/p/{DETAIL}/{ticket}")
        if timers.locator(".badge-overdue").count():
            break
        page.wait_for_timeout(250)
    expect(timers).to_contain_text("Escalate to urgent, due ")
    expect(timers.locator(".badge-overdue")).to_have_text("Overdue")
    assert "helpdesk.ticket" not in timers.inner_text()
    report["detail with an overdue timer"] = _violations(page, axe)
    page.goto(f"{base}/p/{DETAIL}/{ticket}")
    page.get_by_role("button", name=f"Start {ticket}").click()
    expect(page.get_by_role("button", name="Confirm: Start")).to_be_visible()
    report["dry-run confirmation"] = _violations(page, axe)
    page.goto(f"{base}/p/{DETAIL}/{ticket}")
    page.get_by_role("link", name="As of this version").first.click()
    page.wait_for_url(re.compile(r".*asOf="))
    report["as of a version"] = _violations(page, axe)
    context.close()
    print("axe-core serious/critical violations per page:", report)  # docs/console.md
    assert report == {name: [] for name in report}, report


def _tab_to(page: Any, selector: str) -> None:
    """Press Tab until the focused element matches ``selector`` (keyboard only)."""
    for _ in range(120):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_keyboard_only_create_filter_and_transition(
    browser: Any, server: Server, tenant: str
) -> None:
    page = _page(browser, server, tenant, "alice", "agent,requester")
    base = f"{server.base_url}/-/console"
    page.goto(f"{base}/p/{QUEUE}")
    _tab_to(page, 'a.button[href*="/new/"]')
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/new/"))
    _tab_to(page, "#in-title")
    page.keyboard.type("Typed, never clicked")
    page.keyboard.press("Enter")  # submits the form
    page.wait_for_url(re.compile(r".*done=New"))
    ticket = page.url.rsplit("/", 1)[1].split("?")[0]

    page.goto(f"{base}/p/{QUEUE}")
    _tab_to(page, "#f-state-v")
    page.keyboard.press("ArrowDown")  # "any" -> "open"
    _tab_to(page, 'form.query button[type="submit"]')
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*f\.state\.v=open"))
    expect(page.locator("table.rows tbody tr")).to_have_count(1)

    page.goto(f"{base}/p/{DETAIL}/{ticket}")
    _tab_to(page, f'button[aria-label="Start {ticket}"]')
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/confirm/"))
    _tab_to(page, 'button[type="submit"]')
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*done=Start"))
    expect(page.locator("dl.item .badge")).to_contain_text("In progress")
