"""Counts, facets and export of a list projection (docs/http.md, "Counts and facets" and
"Export"), on the backend of the run, through HTTP: same rows as the JSON list, under the
reader's row scope, bounded counts, CSV safe against formulas."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from plugin_api.testing import Client, Host, TesseraHarness

from ._lists_plugin import FIELDS, THING, ListsPlugin
from .test_http_access import ACTORS, MINE, PRIORITIES, TENANTS, _all_pages, _seed, _visible
from .test_http_contract import assert_envelope

LIST = f"{THING}.list"
LEVELS = ("low", "mid", "high")
ROWS: list[dict[str, Any]] = [
    {"name": "alpha", "level": "low", "flag": True, "price": "9.75", "due": "2030-01-01T10:00:00Z"},
    {"name": '=HYPERLINK("x")', "level": "mid", "flag": False, "price": "-1"},
    {"name": "+1 alpha", "level": "low", "flag": None, "note": "@sum\ttab"},
    {"name": "-2", "level": None, "flag": True, "count": -5},
    {"name": 'école, "quoted"\r\nline', "level": "high", "flag": True, "note": "ALPHA"},
    {"name": "beta", "level": "low", "flag": False, "count": 7},
]


def _header(headers: Mapping[str, str], name: str) -> str:
    return {key.lower(): value for key, value in headers.items()}[name.lower()]


@pytest.fixture
async def lab(tessera: TesseraHarness) -> Host:
    return await tessera.start(
        plugins=[], extra=[("lab", ListsPlugin())], entry_points=False, list_chunk_rows=2
    )


async def _fill(client: Client) -> list[str]:
    ids = []
    for row in ROWS:
        inputs = dict(row)
        if "price" in inputs:
            inputs["price"] = {"amount": inputs["price"], "currency": "EUR"}
        result = await client.action(f"{THING}.create", inputs=inputs)
        assert result.status == 200, result.json
        ids.append(result.outputs["id"])
    return ids


async def _json_items(client: Client, query: dict[str, str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {**query, "pageSize": "2", **({"cursor": cursor} if cursor else {})}
        result = await client.projection(LIST, query=params)
        assert result.status == 200, result.json
        items += result.items
        cursor = result.json["data"]["pagination"]["nextCursor"]
        if cursor is None:
            return items


async def test_count_and_facets_follow_filters_and_search(lab: Host) -> None:
    client = lab.client(tenant="t1")
    await _fill(client)
    await _fill(lab.client(tenant="t2"))  # another tenant's rows are never counted
    plain = await client.projection(LIST, query={"pageSize": "2"})
    assert "count" not in plain.json["data"] and "facets" not in plain.json["data"]
    result = await client.projection(
        LIST, query=[("count", "true"), ("facet", "level"), ("facet", "flag"), ("pageSize", "2")]
    )
    assert result.status == 200, result.json
    data = result.json["data"]
    assert data["count"] == {"value": 6, "exact": True}
    assert data["facets"]["level"] == {
        "exact": True,
        "values": [
            {"value": "low", "count": 3},
            {"value": "mid", "count": 1},
            {"value": "high", "count": 1},
            {"value": None, "count": 1},
        ],
    }
    assert data["facets"]["flag"]["values"] == [
        {"value": False, "count": 2},
        {"value": True, "count": 3},
        {"value": None, "count": 1},
    ]
    # Filters and search narrow the counts as they narrow the rows.
    query = {"q": "ALPHA", "filter.level": "low", "count": "true", "facet": "flag"}
    narrowed = await client.projection(LIST, query=query)
    names = {item["name"] for item in narrowed.items}
    assert names == {"alpha", "+1 alpha"}
    assert narrowed.json["data"]["count"] == {"value": 2, "exact": True}
    assert narrowed.json["data"]["facets"]["flag"]["values"] == [
        {"value": True, "count": 1},
        {"value": None, "count": 1},
    ]


async def test_datetime_facets_count_rows_per_utc_year_month_and_day(lab: Host) -> None:
    client = lab.client(tenant="t1")
    dues = [
        "2030-01-01T10:00:00Z",
        "2030-01-31T23:59:59.999999Z",
        "2030-02-01T01:30:00+02:00",  # 2030-01-31T23:30Z: January in UTC
        "2030-02-01T00:00:00Z",
        "2031-06-15T12:00:00Z",
        None,
    ]
    for n, due in enumerate(dues):
        result = await client.action(f"{THING}.create", inputs={"name": f"n{n}", "due": due})
        assert result.status == 200, result.json
    await lab.client(tenant="t2").action(
        f"{THING}.create", inputs={"name": "other", "due": "2030-01-05T00:00:00Z"}
    )
    facets = [("facet", f"due.{bucket}") for bucket in ("year", "month", "day")]
    result = await client.projection(LIST, query=[*facets, ("facet", "created_at.year")])
    assert result.status == 200, result.json
    got = result.json["data"]["facets"]
    assert got["due.year"] == {
        "exact": True,
        "values": [
            {"value": "2030-01-01T00:00:00Z", "count": 4},
            {"value": "2031-01-01T00:00:00Z", "count": 1},
            {"value": None, "count": 1},
        ],
    }
    assert got["due.month"]["values"] == [
        {"value": "2030-01-01T00:00:00Z", "count": 3},
        {"value": "2030-02-01T00:00:00Z", "count": 1},
        {"value": "2031-06-01T00:00:00Z", "count": 1},
        {"value": None, "count": 1},
    ]
    assert got["due.day"]["values"] == [
        {"value": "2030-01-01T00:00:00Z", "count": 1},
        {"value": "2030-01-31T00:00:00Z", "count": 2},
        {"value": "2030-02-01T00:00:00Z", "count": 1},
        {"value": "2031-06-15T00:00:00Z", "count": 1},
        {"value": None, "count": 1},
    ]
    [this_year] = got["created_at.year"]["values"]
    assert this_year["count"] == 6 and this_year["value"].endswith("-01-01T00:00:00Z")
    # A bucket is a range a client applies next: the filters narrow the counts.
    january = {"filter.due.gte": "2030-01-01T00:00:00Z", "filter.due.lt": "2030-02-01T00:00:00Z"}
    narrowed = await client.projection(LIST, query={**january, "facet": "due.day"})
    assert narrowed.json["data"]["facets"]["due.day"]["values"] == [
        {"value": "2030-01-01T00:00:00Z", "count": 1},
        {"value": "2030-01-31T00:00:00Z", "count": 2},
    ]
    assert len(narrowed.items) == 3


async def test_a_streamed_list_carries_its_counts(lab: Host) -> None:
    client = lab.client(tenant="t1")
    await _fill(client)
    result = await client.projection(LIST, query={"count": "true", "sort": "name"})
    assert result.status == 200
    assert len(result.items) == 6  # three chunks of 2
    assert result.json["data"]["count"] == {"value": 6, "exact": True}


async def test_counts_beyond_the_limit_are_marked(tessera: TesseraHarness) -> None:
    host = await tessera.start(
        plugins=[], extra=[("lab", ListsPlugin())], entry_points=False, list_count_limit=4
    )
    client = host.client(tenant="t1")
    await _fill(client)
    result = await client.projection(LIST, query={"count": "true", "facet": "level"})
    data = result.json["data"]
    assert data["count"] == {"value": 4, "exact": False}
    assert data["facets"]["level"]["exact"] is False
    assert sum(v["count"] for v in data["facets"]["level"]["values"]) <= 5
    narrowed = await client.projection(LIST, query={"count": "true", "filter.level": "low"})
    assert narrowed.json["data"]["count"] == {"value": 3, "exact": True}


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"count": "yes"}, "count"),
        ({"facet": "name"}, "facet"),
        ({"facet": "due"}, "due.month"),  # a datetime facet names its bucket
        ({"facet": "due.week"}, "facet"),
        ({"facet": "name.year"}, "facet"),
        ([("facet", "level"), ("facet", "level")], "facet"),
        ({"format": "xml"}, "format"),
        ({"format": "csv", "pageSize": "2"}, "format"),
    ],
)
async def test_bad_count_facet_and_format_are_refused(lab: Host, query: Any, named: str) -> None:
    result = await lab.client(tenant="t1").projection(LIST, query=query)
    assert_envelope(result, 400, "BadRequest")
    assert named in result.json["error"]["message"]


async def test_ndjson_export_is_the_json_list(lab: Host) -> None:
    client = lab.client(tenant="t1")
    await _fill(client)
    for query in ({}, {"sort": "-name"}, {"q": "alpha", "sort": "level"}):
        expected = await _json_items(client, query)
        result = await client.projection(LIST, query={**query, "format": "ndjson"})
        assert result.status == 200
        assert _header(result.headers, "Content-Type") == "application/x-ndjson"
        assert "attachment" in _header(result.headers, "Content-Disposition")
        lines = result.body.decode().splitlines()
        assert [json.loads(line) for line in lines] == expected


def _csv_value(name: str, item: dict[str, Any]) -> str:
    """The documented CSV text of a JSON list value."""
    value = item[name]
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = f"{value['amount']} {value['currency']}" if isinstance(value, dict) else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


async def test_csv_export_parses_back_to_the_json_list(lab: Host) -> None:
    client = lab.client(tenant="t1")
    await _fill(client)
    expected = await _json_items(client, {"sort": "name"})
    result = await client.projection(LIST, query={"sort": "name", "format": "csv"})
    assert result.status == 200
    assert _header(result.headers, "Content-Type") == "text/csv; charset=utf-8"
    text = result.body.decode("utf-8")
    assert not text.startswith("\ufeff") and text.endswith("\r\n")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    columns = ["id", *FIELDS, "created_at"]
    assert rows[0] == columns
    assert rows[1:] == [[_csv_value(name, item) for name in columns] for item in expected]
    # No cell a spreadsheet would run as a formula (an integer is read as a number).
    assert not any(
        cell[:1] in ("=", "+", "-", "@", "\t", "\r") and not re.fullmatch(r"-[0-9]+", cell)
        for row in rows
        for cell in row
    )
    by_name = {row[1]: row for row in rows[1:]}
    assert by_name['\'=HYPERLINK("x")'][6] == "'-1 EUR"
    assert by_name["'-2"][3] == "-5"
    assert by_name["alpha"][4] == "2030-01-01T10:00:00Z"


async def test_counts_and_export_stay_in_the_row_scope(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=["helpdesk"], list_chunk_rows=2)
    truth = await _seed(host)
    for tenant in TENANTS:
        for actor in ACTORS:
            requester = host.client(tenant=tenant, actor=actor, roles=["requester"])
            mine = [r for r in truth[tenant] if r["id"] in _visible(truth[tenant], actor, set())]
            query = {"count": "true", "facet": "priority", "pageSize": "1"}
            result = await requester.projection(MINE, query=query)
            assert result.status == 200, result.json
            data = result.json["data"]
            assert data["count"] == {"value": len(mine), "exact": True}
            got = {v["value"]: v["count"] for v in data["facets"]["priority"]["values"]}
            assert got == dict(Counter(r["priority"] for r in mine))
            assert set(got) <= set(PRIORITIES)
            searched = await requester.projection(MINE, query={"q": "printer", "count": "true"})
            wanted = [r for r in mine if "printer" in r["title"]]
            assert searched.json["data"]["count"]["value"] == len(wanted)
            exported = await requester.projection(MINE, query={"format": "ndjson"})
            ids = [json.loads(line)["id"] for line in exported.body.decode().splitlines()]
            paged = await _all_pages(requester, {"pageSize": "2"})
            assert isinstance(paged, list) and ids == [item["id"] for item in paged]
            assert sorted(ids) == sorted(r["id"] for r in mine)
        agent = host.client(tenant=tenant, actor="zed", roles=["agent"])
        every = await agent.projection(MINE, query={"count": "true"})
        assert every.json["data"]["count"]["value"] == len(truth[tenant])
