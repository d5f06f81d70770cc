"""The console over HTTP (Quart test client, no browser): pages drawn from the ViewSchema
documents, forms that act through the action route, errors in words, identity, CSRF."""

from __future__ import annotations

import re

from plugin_api.testing import Host, TesseraHarness

from .conftest import CONSOLE, Console

AGENT = {"X-Tenant-ID": "t1", "X-Actor-Id": "alice", "X-Actor-Roles": "agent,requester"}
QUEUE = "helpdesk.ticket.queue"
DETAIL = "helpdesk.ticket.detail"
CREATE = "helpdesk.ticket.create"


async def _create(console: Console, title: str, **fields: str) -> str:
    form = await console.get(f"/new/{QUEUE}/{CREATE}")
    assert form.status == 200, form.text
    done = await console.submit(form, f"/run/{QUEUE}/{CREATE}", {"in.title": title, **fields})
    assert done.status == 303, done.text
    assert done.location is not None
    match = re.search(rf"{CONSOLE}/p/{QUEUE}/([^?]+)\?done=New\+ticket", done.location)
    assert match, done.location
    return match.group(1)


async def test_home_lists_the_readable_projections_grouped(console_host: Host) -> None:
    page = await Console(console_host, AGENT).get("/")
    assert page.status == 200
    assert "<h2>Helpdesk</h2>" in page.text and "<h2>Billing</h2>" in page.text  # labels
    assert "<h3>Ticket</h3>" in page.text
    assert f'href="{CONSOLE}/p/{QUEUE}">Ticket queue</a>' in page.text
    assert "tenant <strong>t1</strong>" in page.text
    assert "actor <strong>alice</strong>" in page.text


async def test_home_without_identity_says_what_is_missing(console_host: Host) -> None:
    page = await Console(console_host).get("/")
    assert page.status == 200
    assert "Not acting as anyone yet" in page.text and "Missing required header" not in page.text
    assert f'href="{CONSOLE}/p/' not in page.text


async def test_create_list_detail_and_transition(console_host: Host) -> None:
    console = Console(console_host, AGENT)
    ticket = await _create(
        console,
        "Printer on fire",
        **{
            "in.priority": "high",
            "in.estimate_hours": "3",
            "in.budget": "12.50",
            "in.due_at": "2030-01-02T09:30",
            "in.billable": "true",
        },
    )
    api = await console_host.client(tenant="t1").projection(DETAIL, subject=ticket)
    item = api.json["data"]["item"]
    assert item["title"] == "Printer on fire"
    assert item["budget"] == {"amount": "12.50", "currency": "EUR"}
    assert item["due_at"] == "2030-01-02T09:30:00Z"
    assert item["estimate_hours"] == 3 and item["billable"] is True

    listing = await console.get(f"/p/{QUEUE}")
    assert listing.status == 200
    assert "Printer on fire" in listing.text
    start = f"/run/{QUEUE}/helpdesk.ticket.start"
    preview = f"/confirm/{QUEUE}/helpdesk.ticket.start"  # a click first shows the dry run
    assert f'action="{CONSOLE}{preview}"' in listing.text
    confirming = await console.submit(listing, preview, {})
    assert confirming.status == 200, confirming.text
    assert f'action="{CONSOLE}{start}"' in confirming.text

    moved = await console.submit(confirming, start, {})
    assert moved.status == 303, moved.text
    assert moved.location == f"{CONSOLE}/p/{QUEUE}?done=Start"  # back where it was
    after = await console_host.client(tenant="t1").projection(DETAIL, subject=ticket)
    assert after.json["data"]["item"]["state"] == "in_progress"
    assert after.json["data"]["item"]["assignee"] == "alice"

    detail = await console.get(f"/p/{DETAIL}/{ticket}")
    assert detail.status == 200
    assert "12.50 EUR" in detail.text
    # the state as a badge from the 1.3.0 workflow metadata, and the diagram with it
    assert '<dd><span class="badge badge-between">In progress</span></dd>' in detail.text
    assert "Workflow of state" in detail.text
    # buttons for the steps the workflow allows from the row's state (and escalate, no step)
    offered = re.findall(rf'aria-label="([\w ]+?) {ticket}"', detail.text)
    assert offered == ["Resolve", "Cancel", "Escalate to urgent"]
    assert re.search(
        r'<tr class="possible"><td><span class="badge badge-between">In progress'
        r"</span> </td><td>resolve →</td>",
        detail.text,
    )
    assert 'name="in.title" value="Printer on fire"' in detail.text  # initialValues


async def test_update_sends_only_changed_fields_and_refuses_a_stale_form(
    console_host: Host,
) -> None:
    console = Console(console_host, AGENT)
    ticket = await _create(console, "Mail down", **{"in.description": "since noon"})
    detail = await console.get(f"/p/{DETAIL}/{ticket}")
    stale = detail
    edit = f"/run/{DETAIL}/helpdesk.ticket.edit"
    changed = await console.submit(detail, edit, {"in.priority": "urgent"})
    assert changed.status == 303, changed.text
    row = (await console_host.client().projection(DETAIL, subject=ticket)).json["data"]["item"]
    assert row["priority"] == "urgent" and row["description"] == "since noon"

    again = await console.submit(stale, edit, {"in.title": "Mail really down"})
    assert again.status == 409
    assert "changed by someone else" in again.text
    assert "ConcurrencyConflict" in again.text
    row = (await console_host.client().projection(DETAIL, subject=ticket)).json["data"]["item"]
    assert row["title"] == "Mail down"


async def test_a_double_post_of_one_form_creates_one_row(console_host: Host) -> None:
    console = Console(console_host, AGENT)
    form = await console.get(f"/new/{QUEUE}/{CREATE}")
    first = await console.submit(form, f"/run/{QUEUE}/{CREATE}", {"in.title": "Twice"})
    second = await console.submit(form, f"/run/{QUEUE}/{CREATE}", {"in.title": "Twice"})
    assert first.status == second.status == 303
    assert first.location == second.location
    rows = (await console_host.client().projection(DETAIL)).json["data"]["items"]
    assert [r["title"] for r in rows] == ["Twice"]


async def test_errors_are_shown_next_to_the_form(console_host: Host) -> None:
    console = Console(console_host, AGENT)
    form = await console.get(f"/new/{QUEUE}/{CREATE}")
    page = await console.submit(
        form, f"/run/{QUEUE}/{CREATE}", {"in.title": "ok", "in.estimate_hours": "many"}
    )
    assert page.status == 400
    assert "Something in the request is not right" in page.text
    assert 'role="alert"' in page.text
    assert "estimate_hours" in page.text  # the API's message, naming the field
    assert 'name="in.estimate_hours" type="number" step="1" value="many"' in page.text
    assert (await console_host.client().projection(DETAIL)).json["data"]["items"] == []


async def test_a_role_that_may_not_act(console_host: Host) -> None:
    agent = Console(console_host, AGENT)
    ticket = await _create(agent, "Not yours")
    requester = Console(
        console_host, {"X-Tenant-ID": "t1", "X-Actor-Id": "bob", "X-Actor-Roles": "requester"}
    )
    listing = await requester.get(f"/p/{QUEUE}")
    # the queue lists every action; the row's availability says the requester may not
    # start it: the button is disabled with the reason, and a forged post is refused (403)
    reason = f'id="why-{ticket}-helpdesk-ticket-start">'
    assert f'disabled aria-label="Start {ticket}" aria-describedby="why-' in listing.text
    assert re.search(reason + r"[^<]*agent", listing.text), re.findall(r"why-[^<]*<", listing.text)
    page = await requester.post(
        f"/run/{QUEUE}/helpdesk.ticket.start",
        {"_csrf": (await requester.get("/as")).hidden("_csrf"), "_key": "k", "_subject": ticket},
    )
    assert page.status == 403
    assert "You are not allowed to do this" in page.text
    row = (await console_host.client().projection(DETAIL, subject=ticket)).json["data"]["item"]
    assert row["state"] == "open"


async def test_a_second_tenant_sees_nothing_of_the_first(console_host: Host) -> None:
    ticket = await _create(Console(console_host, AGENT), "Tenant one only")
    other = Console(console_host, {**AGENT, "X-Tenant-ID": "t2"})
    listing = await other.get(f"/p/{QUEUE}")
    assert listing.status == 200
    assert "Tenant one only" not in listing.text and "No rows." in listing.text
    detail = await other.get(f"/p/{DETAIL}/{ticket}")
    assert detail.status == 404
    assert "Tenant one only" not in detail.text


async def test_filter_sort_and_pages_by_cursor(console_host: Host) -> None:
    console = Console(console_host, AGENT)
    for n in range(5):
        await _create(console, f"T{n}", **{"in.priority": "high" if n % 2 else "low"})
    query = {"f.priority.op": "eq", "f.priority.v": "low", "sort": "title", "pageSize": "2"}
    first = await console.get(f"/p/{QUEUE}", query)
    assert first.status == 200
    titles = re.findall(r"<td>(T\d)</td>", first.text)
    assert titles == ["T0", "T2"]
    next_url = re.search(r'href="([^"]+)" rel="next"', first.text)
    assert next_url
    second = await console.get(next_url.group(1).replace("&amp;", "&")[len(CONSOLE) :])
    assert re.findall(r"<td>(T\d)</td>", second.text) == ["T4"]
    assert 'rel="next"' not in second.text
    assert re.search(rf'href="{CONSOLE}/p/{QUEUE}\?[^"]*">First page</a>', second.text)
    previous = re.search(r'href="([^"]+)" rel="prev"', second.text)
    assert previous
    back = await console.get(previous.group(1).replace("&amp;", "&")[len(CONSOLE) :])
    assert re.findall(r"<td>(T\d)</td>", back.text) == ["T0", "T2"]


async def test_an_unknown_filter_value_is_a_clear_400(console_host: Host) -> None:
    page = await Console(console_host, AGENT).get(
        f"/p/{QUEUE}", {"f.due_at.op": "lt", "f.due_at.v": "not a date"}
    )
    assert page.status == 400
    assert "due_at" in page.text


async def test_act_as_keeps_the_identity_in_a_signed_cookie(console_host: Host) -> None:
    console = Console(console_host)
    done = await console.act_as("t9", "carol", "agent")
    assert done.status == 303
    page = await console.get("/")
    assert "tenant <strong>t9</strong>" in page.text and "actor <strong>carol</strong>" in page.text
    bad = await console.act_as("t9", "carol", "agent boss")
    assert bad.status == 400 and "X-Actor-Roles" in bad.text


async def test_a_post_without_the_csrf_token_is_refused(console_host: Host) -> None:
    console = Console(console_host, AGENT)
    await console.get("/")
    page = await console.post(f"/run/{QUEUE}/{CREATE}", {"in.title": "forged", "_key": "k"})
    assert page.status == 403
    assert "CSRF" in page.text
    forged = await console.post("/as", {"tenant": "t1", "_csrf": "made-up"})
    assert forged.status == 403
    assert (await console_host.client().projection(DETAIL)).json["data"]["items"] == []


async def test_act_as_is_refused_off_loopback(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"], console="on", serve_bind="0.0.0.0:8000")
    console = Console(host)
    page = await console.get("/as")
    assert page.status == 403
    assert "loopback" in page.text
    home = await Console(host, AGENT).get("/")
    assert "actor <strong>alice</strong>" in home.text and "Act as" not in home.text


async def test_a_disabled_console_answers_404_in_the_envelope(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"])  # auto, not served on loopback: off
    client = host.app.test_client()
    for path in (
        "/-/console/",
        "/-/console/p/helpdesk.ticket.queue",
        "/-/console/static/console.css",
    ):
        response = await client.get(path, headers=AGENT)
        assert response.status_code == 404
        body = await response.get_json()
        assert body == {
            "ok": False,
            "error": {"kind": "NotFound", "message": f"No route for GET {path}"},
        }


async def test_the_api_answers_the_same_with_the_console_on(
    tessera: TesseraHarness, console_host: Host
) -> None:
    plain = await tessera.start(plugins=["helpdesk", "billing"])
    for host in (plain, console_host):
        await host.client(tenant="t1", roles=["agent"]).action(CREATE, inputs={"title": "same"})
    bodies = []
    for host in (plain, console_host):
        result = await host.client().request("GET", "/openapi.json")
        bodies.append(result.body)
    assert bodies[0] == bodies[1]


async def test_pages_load_their_stylesheet_and_the_api_keeps_its_policy(
    console_host: Host,
) -> None:
    client = console_host.app.test_client()
    page = await client.get("/-/console/", headers=AGENT)
    assert "style-src 'self'" in page.headers["Content-Security-Policy"]
    assert page.headers.getlist("Content-Security-Policy") == [
        page.headers["Content-Security-Policy"]
    ]
    cookie = page.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/-/console" in cookie
    api = await client.get("/api/_health")
    assert api.headers["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"


async def test_a_first_visit_on_loopback_asks_who_to_be(console_host: Host) -> None:
    console = Console(console_host)
    page = await console.get("/")
    assert page.status == 200
    assert "<h1>Welcome</h1>" in page.text and 'action="/-/console/as"' in page.text
    await console.act_as("acme", "rita", "requester")
    home = await console.get("/")
    assert f'href="{CONSOLE}/p/{QUEUE}"' in home.text


async def test_a_reference_input_is_a_picker_linking_to_the_target(
    tessera: TesseraHarness,
) -> None:
    host = await tessera.start(
        plugins=["helpdesk", "billing", "billing_helpdesk"], console="on", serve_bind="127.0.0.1"
    )
    staff = {"X-Tenant-ID": "acme", "X-Actor-Id": "carl", "X-Actor-Roles": "requester,clerk"}
    console = Console(host, staff)
    ticket = await _create(console, "Billable work", **{"in.billable": "true"})
    form = await console.get("/new/billing.charge.list/billing.charge.create")
    picker = re.search(r'<select id="in-ticket" name="in.ticket">(.*?)</select>', form.text, re.S)
    assert picker and f'<option value="{ticket}">Billable work ({ticket})</option>' in picker[1]
    fields = {"in.ticket": ticket, "in.hours": "2", "in.amount": "80.00"}
    done = await console.submit(form, "/run/billing.charge.list/billing.charge.create", fields)
    assert done.status == 303, done.text
    listing = await console.get("/p/billing.charge.list")
    target = re.search(rf'href="{CONSOLE}/p/(helpdesk\.ticket\.\w+)/{ticket}"', listing.text)
    assert target, listing.text
    detail = await console.get(f"/p/{target[1]}/{ticket}")
    assert detail.status == 200 and "Billable work" in detail.text
