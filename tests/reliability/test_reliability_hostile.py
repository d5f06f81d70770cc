"""Hostile input against a real server (``--workers 2``): never a 500, always the error
envelope with the CORS headers, never a stored row for a refused request.

Two campaigns:

* ``test_random_bodies``: hypothesis-generated JSON documents, structured bodies with random
  ``subject``/``inputs`` and raw bytes, posted to every kind of action. A response is 200 or a
  4xx error envelope; afterwards the tenant holds exactly as many rows and audit records as
  there were 200s.
* ``test_hostile_catalogue``: wrong types for every field type, huge strings and numbers,
  deep nesting, NUL, lone surrogates, RTL and emoji, SQL metacharacters in values, FQNs (path
  segments) and query parameters, oversized bodies (with and without Content-Length), missing
  and duplicated headers, other methods. Every refused request goes to tenant ``hostile``,
  which must end with no row and no audit record; the values that are legal (SQL
  metacharacters, RTL, emoji, a near-limit string) go to tenant ``nasty`` and must read back
  byte for byte.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import (
    AUDIT_TABLE,
    AUTH_MODE,
    CORS,
    SECURITY,
    TICKET_TABLE,
    HostProcess,
    assert_envelope,
    bearer,
    identity,
    list_items,
    query,
    subject,
    table_names,
)

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

TICKET = "helpdesk.ticket"
INVOICE = "billing.invoice"
ROLES = ["agent", "requester", "clerk", "accountant"]
MAX_BODY = 1024 * 1024
SQL_META = ("'; DROP TABLE helpdesk__ticket;--", "%", "_", "\\", "\\'", '"', "%_%", "' OR '1'='1")


def check(response: httpx.Response, tally: Counter[str], allowed: set[int] | None = None) -> None:
    """The invariant of every answer: < 500, CORS and security headers, no server banner,
    error envelope unless 200."""
    tally["requests"] += 1
    tally[f"status_{response.status_code}"] += 1
    assert response.status_code < 500, (response.status_code, response.text[:500])
    for name, value in {**CORS, **SECURITY}.items():
        assert response.headers.get(name) == value, (name, response.status_code)
    assert "server" not in response.headers
    if response.status_code != 200:
        assert_envelope(response)
    if allowed is not None:
        assert response.status_code in allowed, (response.status_code, response.text[:500])


async def tenant_state(client: httpx.AsyncClient, database: str, tenant: str) -> tuple[int, int]:
    rows = 0
    for fqn in (TICKET, INVOICE):
        rows += len(await list_items(client, f"{fqn}.detail", tenant))
    audit = await query(
        database, f"SELECT COUNT(*) AS n FROM {AUDIT_TABLE} WHERE tenant_id = :t", {"t": tenant}
    )
    return rows, int(audit[0]["n"])


# -- campaign 1: random bodies -----------------------------------------------------------------

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from([*SQL_META, "open", "low", "urgent", "2030-01-02T03:04:05Z", "USD", "EUR"]),
)
json_value = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=12), children, max_size=4),
    ),
    max_leaves=20,
)
FIELD_NAMES = [
    "title",
    "description",
    "priority",
    "estimate_hours",
    "due_at",
    "billable",
    "budget",
    "state",
    "customer",
    "amount",
    "lines",
    "number",
    "id",
    "_version",
    "tenant_id",
]
structured = st.fixed_dictionaries(
    {
        "subject": st.one_of(
            json_value,
            st.fixed_dictionaries(
                {
                    "tenantId": st.sampled_from(["fuzz", "other", ""]) | json_leaf,
                    "entityFqn": st.sampled_from([TICKET, INVOICE]) | json_leaf,
                    "identityHandle": st.sampled_from(["ROW"]) | json_leaf,
                }
            ),
        ),
        "inputs": st.one_of(
            json_value, st.dictionaries(st.sampled_from(FIELD_NAMES), json_value, max_size=5)
        ),
    }
)
bodies = st.one_of(
    json_value.map(lambda v: ("json", v)),
    structured.map(lambda v: ("structured", v)),
    st.binary(max_size=512).map(lambda v: ("bytes", v)),
)
TARGETS = (
    f"{TICKET}.create",
    f"{TICKET}.edit",
    f"{TICKET}.start",
    f"{TICKET}.escalate",
    f"{INVOICE}.create",
    f"{INVOICE}.amend",
    f"{INVOICE}.issue",
    "no.such.action",
)


def test_random_bodies(start_host: Any, database: str, figures: dict[str, Any]) -> None:
    host: HostProcess = start_host(workers=2)
    tally: Counter[str] = Counter()
    headers = {**identity("fuzz", "fuzzer", ROLES), "Content-Type": "application/json"}

    async def setup() -> dict[str, str]:
        async with host.client() as client:
            ticket = await client.post(
                f"/actions/{TICKET}.create",
                json={"subject": None, "inputs": {"title": "fuzz target"}},
                headers=headers,
            )
            invoice = await client.post(
                f"/actions/{INVOICE}.create",
                json={
                    "subject": None,
                    "inputs": {"customer": "c", "amount": {"amount": "1", "currency": "USD"}},
                },
                headers=headers,
            )
        tally["accepted"] += 2
        tally["accepted_creates"] += 2
        return {
            TICKET: ticket.json()["outputs"]["id"],
            INVOICE: invoice.json()["outputs"]["id"],
        }

    rows = asyncio.run(setup())

    async def send(target: str, kind: str, value: Any) -> None:
        if kind == "bytes":
            raw = value
        else:
            if kind == "structured" and isinstance(value.get("subject"), dict):
                entity = target.rsplit(".", 1)[0]
                if value["subject"].get("identityHandle") == "ROW":
                    value["subject"]["identityHandle"] = rows.get(entity, "ROW")
            raw = json.dumps(value).encode()
        async with host.client() as client:
            response = await client.post(f"/actions/{target}", content=raw, headers=headers)
        check(response, tally)
        tally[f"inputs_{kind}"] += 1
        if response.status_code == 200:
            tally["accepted"] += 1
            if target.endswith(".create"):
                tally["accepted_creates"] += 1

    @settings(
        max_examples=200,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(target=st.sampled_from(TARGETS), body=bodies)
    def fuzz(target: str, body: tuple[str, Any]) -> None:
        asyncio.run(send(target, *body))

    fuzz()

    async def after() -> tuple[int, int]:
        async with host.client() as client:
            return await tenant_state(client, database, "fuzz")

    stored_rows, audit_records = asyncio.run(after())
    # Exactly the accepted creates made rows; exactly the accepted actions were audited.
    assert stored_rows == tally["accepted_creates"]
    assert audit_records == tally["accepted"]
    figures.update(
        inputs_tried=sum(v for k, v in tally.items() if k.startswith("inputs_")),
        requests_sent=tally["requests"],
        accepted=tally["accepted"],
        statuses={k[7:]: v for k, v in sorted(tally.items()) if k.startswith("status_")},
        server_errors=0,
        rows_stored_for_refused_requests=0,
    )


async def raw_exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``raw`` on a new connection, then read one response (status, headers, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        body = await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), 30)
        return status, headers, body
    finally:
        writer.close()


# -- campaign 2: the catalogue -----------------------------------------------------------------

WRONG_TYPES: dict[str, list[Any]] = {
    # field type -> values that are not a legal write shape of it
    "string": [123, 1.5, True, [], {}, ["x"], {"a": "b"}],
    "enum": [1, True, [], {}, "LOW", "low ", "", "nope", "low\u0000"],
    "integer": [True, "abc", [], {}, "1.5.3", "1e400", "NaN", "Infinity", "", {"n": 1}],
    "datetime": [123, True, "yesterday", "2020-13-01T00:00:00Z", "", [], {}],
    "boolean": ["true", 1, 0, "yes", [], {}, "false"],
}


def wrong_money(currency: str) -> list[Any]:
    """Values that are not a legal write shape of a money field in ``currency``."""
    return [
        "12.00",
        12,
        True,
        [],
        {},
        {"amount": "x", "currency": currency},
        {"amount": "1"},
        {"currency": currency},
        {"amount": "1", "currency": "GBP"},
        {"amount": "1e400", "currency": currency},
        {"amount": "NaN", "currency": currency},
        {"amount": ["1"], "currency": currency},
        {"amount": "1", "currency": currency, "extra": 1},
    ]


TICKET_FIELDS = {
    "title": "string",
    "description": "string",
    "priority": "enum",
    "estimate_hours": "integer",
    "due_at": "datetime",
    "billable": "boolean",
    "budget": "money",
}
HUGE_NUMBERS = [
    "1e400",
    "-1e400",
    "1" + "0" * 5000,
    str(2**63),
    str(-(2**63) - 1),
    "1e-400",
    "123456789012345678901234567890.5",
]
FQNS = [
    "helpdesk.ticket.create'; DROP TABLE helpdesk__ticket;--",
    "%25",
    "_",
    "%5C",
    "..",
    "helpdesk.ticket.%00",
    "helpdesk.ticket.create%00",
    "%ED%A0%80",
    "%FF%FE",
    "helpdesk.%E2%80%AEticket.create",
    "helpdesk.ticket.%F0%9F%98%80",
    "x" * 4000,
    "helpdesk.ticket.*",
    "helpdesk.ticket.create%20",
]
SUBJECTS = [
    *SQL_META,
    "\u0000",
    "a\u0000b",
    "\ud800",
    "\u202eevil",
    "\U0001f600",
    "x" * 8000,
    "",
    "01ARZ3NDEKTSV4RRFFQ69G5FAV",
]


async def catalogue(host: HostProcess, database: str, tally: Counter[str]) -> dict[str, Any]:
    hostile = {**identity("hostile", "mallory", ROLES), "Content-Type": "application/json"}
    nasty = {**identity("nasty", "nora", ROLES), "Content-Type": "application/json"}
    async with host.client() as client:

        async def post(
            fqn: str,
            raw: bytes,
            headers: Any = hostile,
            allowed: set[int] | None = None,
        ) -> httpx.Response:
            response = await client.post(f"/actions/{fqn}", content=raw, headers=headers)
            check(response, tally, allowed)
            return response

        def body(inputs: Any, subject_ref: Any = None) -> bytes:
            return json.dumps({"subject": subject_ref, "inputs": inputs}).encode()

        # A real ticket of tenant 'hostile' would be a stored row: aim updates at a ticket of
        # tenant 'nasty' through a subject naming 'hostile' (a well-formed, missing row).
        seed = await post(f"{TICKET}.create", body({"title": "seed"}), nasty, {200})
        seed_id = seed.json()["outputs"]["id"]
        missing = subject("hostile", TICKET, seed_id)

        # Wrong types for every field type, in creates and in updates.
        for field, field_type in TICKET_FIELDS.items():
            values = wrong_money("EUR") if field_type == "money" else WRONG_TYPES[field_type]
            for value in values:
                inputs = {"title": "ok", field: value} if field != "title" else {field: value}
                await post(f"{TICKET}.create", body(inputs), allowed={400})
                await post(f"{TICKET}.edit", body({field: value}, missing), allowed={400, 404})
                tally["inputs_wrong_type"] += 1
        for value in wrong_money("USD"):
            await post(f"{INVOICE}.create", body({"customer": "c", "amount": value}), allowed={400})
            tally["inputs_wrong_type"] += 1
        for value in WRONG_TYPES["integer"]:
            amount = {"amount": "1", "currency": "USD"}
            inputs = {"customer": "c", "amount": amount, "lines": value}
            await post(f"{INVOICE}.create", body(inputs), allowed={400})
            tally["inputs_wrong_type"] += 1

        # Huge and odd numbers, written as raw JSON number literals, into an integer and a
        # money field (tenant 'numbers'). Some are legal (2**63 is a fine money amount, 1e-400
        # truncates to the integer 0); the rest are 400s. Rows must equal the 200s.
        numbers = {**identity("numbers", "nick", ROLES), "Content-Type": "application/json"}
        accepted = 0
        for literal in [*HUGE_NUMBERS, "-0", "-0.0", str(2**63 - 1), "7.9", "1E+2"]:
            ticket = f'{{"subject": null, "inputs": {{"title": "n", "estimate_hours": {literal}}}}}'
            invoice = (
                '{"subject": null, "inputs": {"customer": "c", '
                f'"amount": {{"amount": {literal}, "currency": "USD"}}}}}}'
            )
            for fqn, text in ((f"{TICKET}.create", ticket), (f"{INVOICE}.create", invoice)):
                answer = await post(fqn, text.encode(), numbers, {200, 400})
                accepted += answer.status_code == 200
                tally["inputs_numbers"] += 1
        assert await tenant_state(client, database, "numbers") == (accepted, accepted)
        tally["numbers_accepted"] = accepted

        # Deep nesting (over and under the decoder's limit), in the body and in a value.
        for depth in (65, 1000, 100_000):
            raw = b'{"subject": null, "inputs": {"title": ' + b"[" * depth + b"]" * depth + b"}}"
            await post(f"{TICKET}.create", raw, allowed={400})
            await post(f"{TICKET}.create", b"[" * depth + b"]" * depth, allowed={400})
            tally["inputs_nesting"] += 2
        raw = b'{"subject": null, "inputs": {"title": "t", "description": ' + b"[" * 60
        await post(f"{TICKET}.create", raw + b"]" * 60 + b"}}", allowed={400})
        tally["inputs_nesting"] += 1

        # Unicode that cannot be stored.
        for text in ("a\u0000b", "\u0000"):
            await post(f"{TICKET}.create", body({"title": text}), allowed={400})
            tally["inputs_unicode"] += 1
        for escaped in (b'"\\ud800"', b'"a\\udfffb"', b'"\\udc00\\ud800"'):
            raw = b'{"subject": null, "inputs": {"title": ' + escaped + b"}}"
            await post(f"{TICKET}.create", raw, allowed={400})
            raw = b'{"subject": null, "inputs": {"title": "t"}, ' + escaped + b": 1}"
            await post(f"{TICKET}.create", raw, allowed={400})
            tally["inputs_unicode"] += 2
        for raw in (b"\xff\xfe{}", b'{"inputs": {"title": "\xc3\x28"}}', b"\xed\xa0\x80"):
            await post(f"{TICKET}.create", raw, allowed={400})
            tally["inputs_unicode"] += 1

        # Legal but nasty values: stored and read back byte for byte (tenant 'nasty').
        legal = [
            *SQL_META,
            "\u202eRTL override \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",
            "\U0001f600\U0001f469\u200d\U0001f4bb emoji",
            "\ufeffBOM and \u200b zero width",
            "tab\tnewline\ncr\r",
            "x" * (MAX_BODY - 4096),  # a near-limit string
        ]
        written: dict[str, str] = {}
        for text in legal:
            # A connection of its own: Hypercorn may close a connection after a ~1 MiB body,
            # and a pooled connection reused in that instant fails client-side.
            async with host.client() as own:
                answer = await own.post(
                    f"/actions/{TICKET}.create",
                    content=body({"title": "t", "description": text}),
                    headers=nasty,
                )
            check(answer, tally)
            assert answer.status_code == 200, answer.text[:300]
            written[answer.json()["outputs"]["id"]] = text
            tally["inputs_legal_nasty"] += 1

        # Long values in fields a list index covers (the ticket title, the invoice customer):
        # a 400 naming the field and the limit on both backends, up to the body limit, and
        # nothing written (tenant 'longs'); a long actor id is refused at the edge, naming the
        # header (docs/http.md, "Identity limits").
        longs = {**identity("longs", "lena", ROLES), "Content-Type": "application/json"}
        usd = {"amount": "1.00", "currency": "USD"}
        kept = await post(f"{TICKET}.create", body({"title": "short"}), longs, {200})
        kept_ref = subject("longs", TICKET, kept.json()["outputs"]["id"])
        for size in (2001, 2700, 3000, 100_000, MAX_BODY - 4096):
            text = "x" * size
            for fqn, inputs, ref in (
                (f"{TICKET}.create", {"title": text}, None),
                (f"{TICKET}.edit", {"title": text}, kept_ref),
                (f"{INVOICE}.create", {"customer": text, "amount": usd}, None),
            ):
                async with host.client() as own:  # see the near-limit note below
                    answer = await own.post(
                        f"/actions/{fqn}", content=body(inputs, ref), headers=longs
                    )
                check(answer, tally, {400})
                assert "holds at most 2000 bytes" in answer.json()["error"]["message"]
                tally["inputs_long_indexed"] += 1
        long_actor = {**longs, "X-Actor-Id": "a" * 12_000}
        started = await post(f"{TICKET}.start", body({}, kept_ref), long_actor, {400})
        assert "X-Actor-Id" in started.json()["error"]["message"]
        tally["inputs_long_indexed"] += 1
        assert await tenant_state(client, database, "longs") == (1, 1)

        # FQNs (path segments) on both routes.
        for fqn in FQNS:
            answer = await post(fqn, body({"title": "t"}), allowed={400, 404})
            projection = await client.get(f"/projections/{fqn}", headers=hostile)
            check(projection, tally, {400, 404})
            tally["inputs_fqn"] += 2
            del answer

        # Query parameters: subject (and the reserved ones) full of metacharacters.
        for value in SUBJECTS:
            for fqn in (f"{TICKET}.detail", f"{INVOICE}.list"):
                # Percent-encoded by hand: a lone surrogate goes out as its (invalid) UTF-8.
                encoded = quote(value.encode("utf-8", "surrogatepass"), safe="")
                params = f"subject={encoded}&locale={encoded}&renderer={encoded}"
                answer = await client.get(f"/projections/{fqn}?{params}", headers=hostile)
                check(answer, tally, {200, 400})
                if answer.status_code == 200:
                    assert answer.json()["data"]["item"] is None
                tally["inputs_query"] += 1
            edit = body({"title": "t"}, subject("hostile", TICKET, value))
            await post(f"{TICKET}.edit", edit, allowed={400, 404})
            tally["inputs_subject"] += 1
        for raw_query in ("subject=%FF%FE", "subject=%ED%A0%80", "subject=a&subject=b", "%%%"):
            answer = await client.get(f"/projections/{TICKET}.detail?{raw_query}", headers=hostile)
            check(answer, tally, {200, 400})
            tally["inputs_query"] += 1

        # Oversized bodies, declared and chunked. The server answers 413 before reading it
        # all and closes, so the client sends only the first part and then reads the answer
        # (a client still writing would get a connection reset instead of the response).
        head = (
            f"POST /api/actions/{TICKET}.create HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "X-Tenant-ID: hostile\r\nX-Actor-Roles: agent\r\nContent-Type: application/json\r\n"
        )
        declared = f"{head}Content-Length: {2 * MAX_BODY}\r\n\r\n".encode()
        chunk = b"x" * 65536
        chunked = f"{head}Transfer-Encoding: chunked\r\n\r\n".encode() + (
            b"10000\r\n" + chunk + b"\r\n"
        ) * (MAX_BODY // len(chunk) + 2)
        for raw in (declared + b'{"subject": null, "inputs": {"title": "' + chunk, chunked):
            status, headers, payload = await raw_exchange(host.port, raw)
            assert status == 413, (status, payload[:200])
            for name, value in CORS.items():
                assert headers.get(name) == value, (name, headers)
            error = json.loads(payload)
            assert error["ok"] is False and error["error"]["kind"] == "BadRequest", error
            tally["requests"] += 1
            tally["status_413"] += 1
            tally["inputs_oversized"] += 1

        # Missing, empty and duplicated headers.
        create = body({"title": "header games"})
        if AUTH_MODE == "token":
            await token_games(post, create, hostile)
        else:
            await header_games(post, client, check, tally, create, hostile)
        # Content types other than JSON are refused: 415, or 400 when missing or blank.
        for content_type in ("text/plain", "application/x-www-form-urlencoded", "a/b; x=\\"):
            headers = {**hostile, "Content-Type": content_type}
            await post(f"{TICKET}.create", create, headers, {415})
        await post(f"{TICKET}.create", create, {**hostile, "Content-Type": ""}, {400})
        no_body = {k: v for k, v in hostile.items() if k != "Content-Type"}
        await post(f"{TICKET}.create", b"", no_body, {400})
        tally["inputs_headers"] += 19

        # Other methods.
        for method in ("PUT", "DELETE", "PATCH"):
            answer = await client.request(method, f"/actions/{TICKET}.create", headers=hostile)
            check(answer, tally, {405})
            tally["inputs_methods"] += 1

        # After all that: tenant 'hostile' has nothing, the tables are intact and the legal
        # values read back exactly.
        rows, audit = await tenant_state(client, database, "hostile")
        assert (rows, audit) == (0, 0), (rows, audit)
        items = {item["id"]: item for item in await list_items(client, f"{TICKET}.detail", "nasty")}
        for row_id, text in written.items():
            assert items[row_id]["description"] == text
    return {"hostile_rows": rows, "hostile_audit": audit, "nasty_rows": len(items)}


async def header_games(
    post: Any,
    client: httpx.AsyncClient,
    check: Any,
    tally: Counter[str],
    create: bytes,
    hostile: dict[str, str],
) -> None:
    """Header mode: missing, empty and duplicated identity headers; odd role names."""
    no_tenant = {k: v for k, v in hostile.items() if k != "X-Tenant-ID"}
    await post(f"{TICKET}.create", create, no_tenant, {400})
    await post(f"{TICKET}.create", create, {**hostile, "X-Tenant-ID": ""}, {400})
    await post(f"{TICKET}.create", create, {**hostile, "X-Tenant-ID": ", ,"}, {200, 400})
    await post(f"{TICKET}.create", create, {**hostile, "X-Actor-Roles": ""}, {403})
    await post(f"{TICKET}.create", create, {**hostile, "X-Actor-Roles": ", ,"}, {403})
    base = [(k, v) for k, v in hostile.items() if k != "X-Tenant-ID"]
    dup_tenant = [*base, ("X-Tenant-ID", "hostile"), ("X-Tenant-ID", "nasty")]
    await post(f"{TICKET}.create", create, dup_tenant, {400})
    base = [(k, v) for k, v in hostile.items() if k != "X-Actor-Id"]
    dup_actor = [*base, ("X-Actor-Id", "a"), ("X-Actor-Id", "b")]
    await post(f"{TICKET}.create", create, dup_actor, {400})
    for path in (f"/projections/{TICKET}.list", f"/projections/{TICKET}.queue"):
        answer = await client.get(path, headers=dup_tenant)
        check(answer, tally, {400, 404})
        answer = await client.get(path)
        check(answer, tally, {400, 404})
    # Role names outside the documented set, and repeated identity headers.
    for roles in ("agent\u00a0", "\u0085agent", "agent\u00c2\u00a0", "a" * 65, "ag ent"):
        odd: dict[str, str | bytes] = {**hostile, "X-Actor-Roles": roles.encode("latin-1")}
        await post(f"{TICKET}.create", create, odd, {400})
    base = [(k, v) for k, v in hostile.items() if k != "X-Actor-Roles"]
    dup_roles = [*base, ("X-Actor-Roles", "requester"), ("X-Actor-Roles", "agent")]
    await post(f"{TICKET}.create", create, dup_roles, {400})


async def token_games(post: Any, create: bytes, hostile: dict[str, str]) -> None:
    """Token mode: identity headers beside the token, no token, forged and stale tokens."""
    await post(f"{TICKET}.create", create, {**hostile, "X-Tenant-ID": "nasty"}, {403})
    await post(f"{TICKET}.create", create, {**hostile, "X-Tenant-ID": ""}, {403})
    await post(f"{TICKET}.create", create, {**hostile, "X-Actor-Id": "root"}, {400})
    await post(f"{TICKET}.create", create, {**hostile, "X-Actor-Roles": "agent"}, {400})
    dup = [*hostile.items(), ("Authorization", hostile["Authorization"])]
    await post(f"{TICKET}.create", create, dup, {400})
    forged = {"X-Tenant-ID": "hostile", "X-Actor-Id": "m", "X-Actor-Roles": "agent"}
    await post(f"{TICKET}.create", create, {**forged, "Content-Type": "application/json"}, {401})
    token = hostile["Authorization"].removeprefix("Bearer ")
    header, payload, signature = token.split(".")
    for bad in (
        f"{header}.{payload[:-2]}{payload[-2:][::-1]}.{signature}",
        f"{header}.{payload}.",
        bearer("hostile", "mallory", tuple(ROLES), exp=1),
        bearer("hostile", "mallory", tuple(ROLES), aud="elsewhere"),
        "x" * 5000,
    ):
        sent = {"Authorization": f"Bearer {bad}", "Content-Type": "application/json"}
        await post(f"{TICKET}.create", create, sent, {401})


def test_hostile_catalogue(start_host: Any, database: str, figures: dict[str, Any]) -> None:
    host: HostProcess = start_host(workers=2)
    tables_before = asyncio.run(table_names(database))
    tally: Counter[str] = Counter()
    after = asyncio.run(catalogue(host, database, tally))
    # The SQL metacharacters (DROP TABLE and friends) left the schema as it was.
    assert asyncio.run(table_names(database)) == tables_before
    assert TICKET_TABLE in tables_before and AUDIT_TABLE in tables_before, tables_before
    assert after["nasty_rows"] > 0
    figures.update(
        inputs_tried=sum(v for k, v in tally.items() if k.startswith("inputs_")),
        requests_sent=tally["requests"],
        by_category={k[7:]: v for k, v in sorted(tally.items()) if k.startswith("inputs_")},
        statuses={k[7:]: v for k, v in sorted(tally.items()) if k.startswith("status_")},
        server_errors=0,
        rows_stored_for_refused_requests=after["hostile_rows"],
        audit_records_for_refused_requests=after["hostile_audit"],
    )
