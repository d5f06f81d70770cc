"""Lists: filters of every operator and type, sorts, search, keyset pages through cursors and
every 400, on the backend of the run (SQLite or PostgreSQL), through the HTTP interface."""

from __future__ import annotations

import base64
import json
import unicodedata
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest

from plugin_api.testing import Client, SharedHarness, TenantHost, TesseraHarness

from ._lists_plugin import FIELDS, SORTABLE, THING, ListsPlugin

LIST = f"{THING}.list"
LEVELS = ("low", "mid", "high")

# name, note, count, due, level, price, flag (None: null)
ROWS: list[tuple[Any, ...]] = [
    ("alpha", None, -5, "2030-01-01T10:00:00+02:00", "low", "9.75", True),
    ("Beta", "Hello World", 0, "2030-01-01T08:00:00Z", "high", "10.5", False),
    ("gamma", "hello", 3, None, None, "100", None),
    ("ÉCOLE", "x:y", None, "2029-12-31T23:59:59.5Z", "mid", "10.50", True),
    ("école", "ÀB", 3, "2031-06-01T00:00:00Z", "low", None, False),
    ("delta", "it's", 2**40, "2030-01-01T08:00:00.000001Z", "high", "-1", True),
    ("Zeta", "", 7, None, "mid", "0.001", None),
    ("alpha", "ALPHA beta", -5, "2030-01-01T10:00:00+02:00", "low", "9.75", True),
    ("Ω", None, 1, "2000-02-29T12:00:00Z", None, "1E+1", False),
]


def _parse_dt(text: str) -> datetime:
    text = text.replace("Z", "+00:00")
    if "." in text:  # Python 3.10: fromisoformat takes 3 or 6 fraction digits only
        head, _, rest = text.partition(".")
        digits, sign, offset = rest.partition("+")
        text = f"{head}.{digits.ljust(6, '0')}{sign}{offset}"
    return datetime.fromisoformat(text).astimezone(timezone.utc)


def _model(name: str, raw: object) -> object:
    """A value as the list compares it."""
    if raw is None:
        return None
    if name == "due":
        return _parse_dt(str(raw))
    if name == "level":
        return LEVELS.index(str(raw))
    if name == "price":
        return Decimal(str(raw))
    return raw


def _fold(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def _search_fold(text: str) -> str:
    """``q`` folds all of Unicode (docs/http.md, "Search"); ``contains`` ASCII alone."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


LISTS = ListsPlugin()


@pytest.fixture
async def lab(tessera_shared: SharedHarness) -> TenantHost:
    """The lists plugin on the session's shared host, in a tenant of the test's own."""
    return await tessera_shared.start(plugins=[], extra=[("lab", LISTS)], entry_points=False)


@pytest.fixture
def other_tenant(lab: TenantHost) -> str:
    """A second tenant of the test's own."""
    return lab.new_tenant()


@pytest.fixture
async def things(lab: TenantHost, other_tenant: str) -> dict[str, dict[str, object]]:
    """The rows of ``ROWS`` in the test's tenant (plus noise in ``other_tenant``): id -> model
    values."""
    client = lab.client()
    made: dict[str, dict[str, object]] = {}
    for row in ROWS:
        inputs = dict(zip(FIELDS, row, strict=True))
        if inputs["price"] is not None:
            inputs["price"] = {"amount": inputs["price"], "currency": "EUR"}
        outputs = (await client.action(f"{THING}.create", inputs=inputs)).outputs
        made[outputs["id"]] = {
            name: _model(name, value) for name, value in zip(FIELDS, row, strict=True)
        }
        made[outputs["id"]]["id"] = outputs["id"]
    other = lab.client(tenant=other_tenant)
    for row in ROWS[:3]:
        inputs = {"name": row[0], "count": row[2]}
        assert (await other.action(f"{THING}.create", inputs=inputs)).status == 200
    listed = (await client.projection(LIST, query={"pageSize": "500"})).items
    for item in listed:
        made[item["id"]]["created_at"] = item["created_at"]
    return made


async def _ids(client: Client, query: dict[str, str], fqn: str = LIST) -> list[str]:
    result = await client.projection(fqn, query=query)
    assert result.status == 200, result.json
    return [item["id"] for item in result.items]


# -- filters -------------------------------------------------------------------------------

Check = Callable[[object], bool]


def _ordered(op: str, target: Any) -> Check:
    compare: Callable[[Any], bool] = {
        "eq": lambda v: v == target,
        "lt": lambda v: v < target,
        "lte": lambda v: v <= target,
        "gt": lambda v: v > target,
        "gte": lambda v: v >= target,
    }[op]
    return lambda v: v is not None and compare(v)


FILTER_CASES: list[tuple[str, str, str]] = [
    # (field, operator, value as sent)
    ("name", "eq", "alpha"),
    ("name", "ne", "alpha"),
    ("name", "in", "alpha,Zeta,nobody"),
    ("name", "lt", "delta"),
    ("name", "gte", "école"),
    ("name", "contains", "COLE"),
    ("name", "contains", "éCO"),
    ("name", "contains", "Ω"),
    ("note", "contains", "HELLO"),
    ("note", "contains", "à"),
    ("note", "contains", "'"),
    ("note", "null", "true"),
    ("note", "null", "false"),
    ("note", "eq", ""),
    ("count", "eq", "-5"),
    ("count", "ne", "3"),
    ("count", "in", "0,3,1099511627776"),
    ("count", "lt", "3"),
    ("count", "gte", "3"),
    ("count", "null", "true"),
    ("due", "eq", "2030-01-01T08:00:00Z"),
    ("due", "eq", "2030-01-01T10:00:00+02:00"),
    ("due", "gt", "2030-01-01T08:00:00Z"),
    ("due", "lte", "2030-01-01 09:00"),
    ("due", "null", "false"),
    ("level", "eq", "mid"),
    ("level", "ne", "low"),
    ("level", "in", "low,high"),
    ("level", "gt", "low"),
    ("level", "lte", "mid"),
    ("level", "null", "true"),
    ("price", "eq", "10.5"),
    ("price", "eq", "10"),
    ("price", "ne", "9.75"),
    ("price", "in", "9.75,100.00"),
    ("price", "lt", "10"),
    ("price", "gte", "10.500"),
    ("price", "gt", "-1"),
    ("price", "null", "true"),
    ("flag", "eq", "true"),
    ("flag", "ne", "true"),
    ("flag", "eq", "false"),
    ("flag", "null", "true"),
]


def _expected(field: str, op: str, text: str) -> Check:
    if op == "null":
        return (lambda v: v is None) if text == "true" else (lambda v: v is not None)
    if op == "contains":
        return lambda v: v is not None and _fold(text) in _fold(str(v))
    converters: dict[str, Callable[[str], object]] = {
        "name": str,
        "note": str,
        "count": int,
        "due": lambda t: _parse_dt(t if "T" in t else t.replace(" ", "T") + ":00Z"),
        "level": LEVELS.index,
        "price": Decimal,
        "flag": lambda t: t == "true",
    }
    convert = converters[field]
    if op == "in":
        targets = [convert(part) for part in text.split(",")]
        return lambda v: v is not None and v in targets
    target = convert(text)
    if op == "ne":
        return lambda v: v is None or v != target
    return _ordered(op, target)


@pytest.mark.parametrize(("field", "op", "text"), FILTER_CASES)
async def test_filter_operator_and_type(
    lab: TenantHost, things: dict[str, dict[str, object]], field: str, op: str, text: str
) -> None:
    check = _expected(field, op, text)
    expected = sorted(i for i, row in things.items() if check(row[field]))
    got = await _ids(lab.client(), {f"filter.{field}.{op}": text, "pageSize": "500"})
    assert got == expected, (field, op, text)
    # ``filter.<field>=value`` is ``eq``
    if op == "eq":
        assert await _ids(lab.client(), {f"filter.{field}": text}) == expected


async def test_filters_combine_with_and_and_search(
    lab: TenantHost, things: dict[str, dict[str, object]]
) -> None:
    client = lab.client()
    query = {"filter.level.in": "low,mid", "filter.flag": "true", "q": "ALPHA"}
    expected = sorted(
        i
        for i, r in things.items()
        if r["level"] in (0, 1)
        and r["flag"] is True
        and any(r[f] is not None and "alpha" in _fold(str(r[f])) for f in ("name", "note"))
    )
    assert len(expected) == 2
    assert await _ids(client, query) == expected


@pytest.mark.parametrize("q", ["hello", "É", "é", "ALPHA", "x:y", "%", "_", "nothing"])
async def test_search_is_a_unicode_case_insensitive_substring(
    lab: TenantHost, things: dict[str, dict[str, object]], q: str
) -> None:
    expected = sorted(
        i
        for i, r in things.items()
        if any(
            r[f] is not None and _search_fold(q) in _search_fold(str(r[f]))
            for f in ("name", "note")
        )
    )
    assert await _ids(lab.client(), {"q": q}) == expected


async def test_created_at_and_id_filters(
    lab: TenantHost, things: dict[str, dict[str, object]]
) -> None:
    client = lab.client()
    ordered = sorted(things)
    middle = ordered[4]
    assert await _ids(client, {"filter.id.gt": middle}) == ordered[5:]
    assert await _ids(client, {"filter.id.in": f"{ordered[0]},{ordered[2]}"}) == [
        ordered[0],
        ordered[2],
    ]
    stamp = str(things[middle]["created_at"])
    expected = sorted(i for i, r in things.items() if str(r["created_at"]) >= stamp)
    assert expected and await _ids(client, {"filter.created_at.gte": stamp}) == expected


# -- sorts and pages -----------------------------------------------------------------------


def _sorted(things: dict[str, dict[str, object]], keys: Sequence[str]) -> list[str]:
    """The documented order: nulls first ascending (last descending), ``id`` breaks ties in
    the direction of the last key."""
    rows = list(things.values())
    rows.sort(key=lambda r: str(r["id"]), reverse=bool(keys) and keys[-1].startswith("-"))
    for key in reversed(keys):
        name = key.removeprefix("-")
        descending = key.startswith("-")

        def sort_key(row: dict[str, object], name: str = name) -> Any:
            v = row[name]
            if name == "created_at":  # the read shape drops trailing zeros: compare times
                v = _parse_dt(str(v))
            return (True, v) if v is not None else (False,)

        rows.sort(key=sort_key, reverse=descending)
    return [str(r["id"]) for r in rows]


async def _walk(client: Client, query: dict[str, str], size: int) -> list[str]:
    ids: list[str] = []
    cursor = None
    for _ in range(100):
        page = {**query, "pageSize": str(size), **({"cursor": cursor} if cursor else {})}
        result = await client.projection(LIST, query=page)
        assert result.status == 200, result.json
        pagination = result.json["data"]["pagination"]
        assert pagination["pageSize"] == size
        assert len(result.items) <= size
        ids += [item["id"] for item in result.items]
        cursor = pagination["nextCursor"]
        if cursor is None:
            return ids
        assert len(result.items) == size
    raise AssertionError("no last page")


@pytest.mark.parametrize("key", [*SORTABLE, *(f"-{name}" for name in SORTABLE)])
async def test_sort_every_type_and_walk_pages(
    lab: TenantHost, things: dict[str, dict[str, object]], key: str
) -> None:
    client = lab.client()
    expected = _sorted(things, [key])
    assert await _ids(client, {"sort": key}) == expected
    assert await _walk(client, {"sort": key}, 2) == expected


@pytest.mark.parametrize(
    "keys", [["level", "-count"], ["-flag", "price"], ["-due", "-name"], ["note", "level", "-id"]]
)
async def test_multi_key_sorts_page_exactly(
    lab: TenantHost, things: dict[str, dict[str, object]], keys: list[str]
) -> None:
    client = lab.client()
    expected = _sorted(things, keys)
    sort = ",".join(keys)
    assert await _ids(client, {"sort": sort}) == expected
    for size in (1, 3, 4):
        assert await _walk(client, {"sort": sort}, size) == expected


async def test_filtered_sorted_pages(lab: TenantHost, things: dict[str, dict[str, object]]) -> None:
    client = lab.client()
    keep = {i for i, r in things.items() if r["flag"] is not None}
    expected = [i for i in _sorted(things, ["-price"]) if i in keep]
    assert await _walk(client, {"sort": "-price", "filter.flag.null": "false"}, 2) == expected


async def test_other_tenants_rows_never_appear(
    lab: TenantHost, things: dict[str, dict[str, object]], other_tenant: str
) -> None:
    other = lab.client(tenant=other_tenant)
    items = (await other.projection(LIST, query={"filter.name.in": "alpha,Beta,gamma"})).items
    assert len(items) == 3 and not {i["id"] for i in items} & set(things)
    assert await _ids(lab.client(tenant=lab.new_tenant()), {"pageSize": "5"}) == []


async def test_every_matching_row_without_a_page_size_is_streamed(
    tessera: TesseraHarness,
) -> None:
    host = await tessera.start(
        plugins=[], extra=[("lab", ListsPlugin())], entry_points=False, list_chunk_rows=3
    )
    client = host.client(tenant="t1")
    for n in range(11):
        inputs = {"name": f"n{n:02d}", "count": n % 4}
        assert (await client.action(f"{THING}.create", inputs=inputs)).status == 200
    result = await client.projection(LIST, query={"filter.count.ne": "0", "sort": "-name"})
    names = [item["name"] for item in result.items]
    assert names == [f"n{n:02d}" for n in reversed(range(11)) if n % 4]
    assert result.json["data"]["pagination"] == {"pageSize": len(names), "nextCursor": None}
    assert result.json["schemaVersion"] == "1.0.0"
    streamed = await client.projection(
        LIST, query={"filter.count.ne": "0", "sort": "-name", "acceptSchemaVersions": "1.1.0"}
    )
    assert [item["name"] for item in streamed.items] == names
    assert streamed.json["data"]["pagination"] == {
        "pageSize": len(names),
        "nextCursor": None,
        "maxPageSize": 500,
    }


# -- 400s ------------------------------------------------------------------------------------

BAD_QUERIES: list[tuple[dict[str, str], str]] = [
    ({"pageSize": "0"}, "'pageSize' must be an integer from 1 to 500"),
    ({"pageSize": "501"}, "from 1 to 500"),
    ({"pageSize": "-1"}, "from 1 to 500"),
    ({"pageSize": "ten"}, "from 1 to 500"),
    ({"pageSize": "1e2"}, "from 1 to 500"),
    ({"pageSize": "٣"}, "from 1 to 500"),
    ({"pageSize": "9" * 30}, "from 1 to 500"),
    ({"sort": "colour"}, "sortable fields: name, note, count, due, level, price, flag"),
    ({"sort": "name,-name"}, "names 'name' twice"),
    ({"sort": ""}, "is not a sortable field"),
    ({"sort": "tenant_id"}, "is not a sortable field"),
    ({"filter.colour": "red"}, "filterable fields: name, note, count"),
    ({"filter.tenant_id": "t2"}, "'tenant_id' is not a filterable field"),
    ({"filter.name.like": "a"}, "operator 'like' is not allowed on 'name'; allowed: eq, ne"),
    ({"filter.name.eq.x": "a"}, "operator 'eq.x' is not allowed"),
    ({"filter.name.": "a"}, "the operator after 'name' is empty"),
    ({"filter.colour.": "a"}, "the operator after 'colour' is empty"),
    ({"filter.count.contains": "1"}, "operator 'contains' is not allowed on 'count'"),
    ({"filter.flag.lt": "true"}, "operator 'lt' is not allowed on 'flag'"),
    ({"filter.id.null": "true"}, "operator 'null' is not allowed on 'id'"),
    ({"filter.count": "many"}, "Field 'count' expects"),
    ({"filter.count": "99999999999999999999"}, "signed 64-bit"),
    ({"filter.due.gt": "tomorrow"}, "Field 'due' expects"),
    ({"filter.due.gt": "2030-02-30T00:00:00Z"}, "Field 'due' expects"),
    ({"filter.created_at.gte": "yesterday"}, "filter.created_at.gte"),
    ({"filter.level": "extreme"}, "Field 'level' expects"),
    ({"filter.level.in": "low,extreme"}, "Field 'level' expects"),
    ({"filter.price.lt": "cheap"}, "Field 'price' expects"),
    ({"filter.price.lt": "NaN"}, "Field 'price' expects"),
    ({"filter.flag": "yes"}, "Field 'flag' expects true or false"),
    ({"filter.note.null": "maybe"}, "expects true or false"),
    ({"filter.name.in": ",".join(["x"] * 101)}, "more than 100 values"),
    ({"cursor": "not-a-cursor"}, "'cursor' is not a cursor of this request"),
    ({"cursor": ""}, "'cursor' is not a cursor of this request"),
    ({"q": "a", "pageSize": "1", "cursor": "AAAA"}, "'cursor' is not a cursor"),
]


@pytest.mark.parametrize(("query", "message"), BAD_QUERIES)
async def test_bad_list_parameters_are_400(
    lab: TenantHost, things: dict[str, dict[str, object]], query: dict[str, str], message: str
) -> None:
    result = await lab.client().projection(LIST, query=query)
    assert (result.status, result.error_kind) == (400, "BadRequest"), result.json
    assert message in result.json["error"]["message"], result.json


async def test_repeated_single_parameters_are_400(lab: TenantHost) -> None:
    client = lab.client()
    for name, value in (("pageSize", "2"), ("sort", "name"), ("q", "a"), ("cursor", "x")):
        result = await client.projection(LIST, query=[(name, value), (name, value)])
        assert result.status == 400, result.json
        assert f"'{name}' is given more than once" in result.json["error"]["message"]


async def test_search_and_sort_need_declarations(lab: TenantHost) -> None:
    client = lab.client()
    bare = f"{THING}.bare"
    for query, message in (
        ({"q": "x"}, "declares no search"),
        ({"sort": "name"}, "none (the projection declares no sortable field)"),
        ({"filter.name": "x"}, "none (the projection declares no filter)"),
    ):
        result = await client.projection(bare, query=query)
        assert result.status == 400 and message in result.json["error"]["message"], result.json
    # paging needs no declaration
    assert (await client.projection(bare, query={"pageSize": "1000"})).status == 200
    assert (await client.projection(bare, query={"pageSize": "1001"})).status == 400


async def _first_cursor(client: Client, query: dict[str, str], fqn: str = LIST) -> str:
    result = await client.projection(fqn, query={**query, "pageSize": "2"})
    cursor = result.json["data"]["pagination"]["nextCursor"]
    assert isinstance(cursor, str)
    return cursor


async def test_cursor_is_bound_to_tenant_projection_filters_sort_and_search(
    lab: TenantHost, things: dict[str, dict[str, object]]
) -> None:
    mine = lab.client()
    base = {"filter.count.gte": "-10", "sort": "-name", "q": "a"}
    cursor = await _first_cursor(mine, base)
    good = await mine.projection(LIST, query={**base, "pageSize": "2", "cursor": cursor})
    assert good.status == 200 and good.items
    # the page size may change between pages
    assert (
        await mine.projection(LIST, query={**base, "pageSize": "3", "cursor": cursor})
    ).status == 200
    # acceptSchemaVersions is not part of the binding
    v11 = {**base, "cursor": cursor, "acceptSchemaVersions": "1.1.0"}
    assert (await mine.projection(LIST, query=v11)).status == 200
    reuses: list[tuple[Client, str, dict[str, str]]] = [
        (lab.client(tenant=lab.new_tenant()), LIST, base),
        (mine, f"{THING}.twin", base),
        (mine, LIST, {**base, "filter.count.gte": "-11"}),
        (mine, LIST, {**base, "filter.count.lte": "100"}),
        (mine, LIST, {k: v for k, v in base.items() if k != "filter.count.gte"}),
        (mine, LIST, {**base, "sort": "name"}),
        (mine, LIST, {**base, "sort": "-name,count"}),
        (mine, LIST, {k: v for k, v in base.items() if k != "sort"}),
        (mine, LIST, {**base, "q": "b"}),
        (mine, LIST, {k: v for k, v in base.items() if k != "q"}),
    ]
    for client, fqn, query in reuses:
        result = await client.projection(fqn, query={**query, "pageSize": "2", "cursor": cursor})
        assert (result.status, result.error_kind) == (400, "BadRequest"), (fqn, query, result.json)
        assert "not a cursor of this request" in result.json["error"]["message"]


async def test_cursors_carry_no_readable_value(
    lab: TenantHost, things: dict[str, dict[str, object]]
) -> None:
    client = lab.client()
    for sort in ("name", "-note", "count", "due"):
        page = await client.projection(LIST, query={"sort": sort, "pageSize": "2"})
        cursor = page.json["data"]["pagination"]["nextCursor"]
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        last = page.json["data"]["items"][-1]
        for value in (last["id"], last[sort.removeprefix("-")]):
            if isinstance(value, str) and len(value) > 2:
                assert value.encode() not in raw, (sort, value, raw)
        with pytest.raises(ValueError):  # ciphertext, not the JSON sort key it hides
            json.loads(raw)
        following = await client.projection(
            LIST, query={"sort": sort, "pageSize": "2", "cursor": cursor}
        )
        assert following.status == 200 and following.json["data"]["items"][0] != last


async def test_altered_cursors_are_400(
    lab: TenantHost, things: dict[str, dict[str, object]]
) -> None:
    client = lab.client()
    query = {"sort": "count"}
    cursor = await _first_cursor(client, query)
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    altered = []
    for position in (0, len(raw) // 2, len(raw) - 1):
        flipped = bytearray(raw)
        flipped[position] ^= 0x01
        altered.append(base64.urlsafe_b64encode(bytes(flipped)).rstrip(b"=").decode())
    altered += [cursor[:-1], cursor + "A", cursor + "==", cursor.lower(), "é" + cursor]
    # a forged payload with a recomputed tag of the wrong key
    altered.append(
        base64.urlsafe_b64encode(b'[0,"01ZZZZZZZZZZZZZZZZZZZZZZZZ"]' + bytes(16)).decode()
    )
    for token in altered:
        assert token != cursor
        result = await client.projection(LIST, query={**query, "pageSize": "2", "cursor": token})
        assert (result.status, result.error_kind) == (400, "BadRequest"), (token, result.json)


# -- keyset stability ----------------------------------------------------------------------


@pytest.mark.parametrize("sort", ["-count", "name", "level,-due"])
async def test_pages_under_concurrent_inserts_and_updates(lab: TenantHost, sort: str) -> None:
    """Rows that exist and do not change while a client pages through appear exactly once,
    whatever is inserted or updated (concurrently, by another task) meanwhile."""
    import asyncio

    client = lab.client()
    made: list[str] = []
    for n in range(40):
        inputs = {
            "name": f"row{n:03d}",
            "count": n % 7,
            "level": LEVELS[n % 3],
            "due": f"2030-01-{1 + n % 28:02d}T00:00:00Z",
        }
        made.append((await client.action(f"{THING}.create", inputs=inputs)).outputs["id"])
    changed = set(made[::5])
    stop = asyncio.Event()
    writes: list[int] = []

    async def write_once() -> None:
        n = len(writes)
        writes.append(n)
        target = made[(n * 5) % len(made)]  # only the rows in ``changed``
        patch = {"count": (n * 3) % 11, "level": LEVELS[n % 3], "name": f"moved{n}"}
        assert (await client.action(f"{THING}.edit", subject=target, inputs=patch)).status == 200
        fresh = {"name": f"new{n}", "count": n % 9, "level": LEVELS[(n + 1) % 3]}
        assert (await client.action(f"{THING}.create", inputs=fresh)).status == 200

    async def writer() -> None:
        while not stop.is_set():
            await write_once()
            await asyncio.sleep(0)

    task = asyncio.ensure_future(writer())
    pages = 0
    try:
        seen: list[str] = []
        cursor = None
        while pages < 200:
            query = {"sort": sort, "pageSize": "3", **({"cursor": cursor} if cursor else {})}
            result = await client.projection(LIST, query=query)
            assert result.status == 200, result.json
            pages += 1
            seen += [item["id"] for item in result.items]
            cursor = result.json["data"]["pagination"]["nextCursor"]
            if cursor is None:
                break
            await write_once()  # at least one insert and one update between any two pages
    finally:
        stop.set()
        await task
    assert pages > 10 and len(writes) >= pages - 1
    unchanged = [i for i in made if i not in changed]
    for identity in unchanged:
        assert seen.count(identity) == 1, identity
