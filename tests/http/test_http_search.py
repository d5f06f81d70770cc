"""``q``: a Unicode case-insensitive substring search served by the text index (trigram:
PostgreSQL ``pg_trgm``, SQLite FTS5), answering exactly the rows of a scan in Python with the
documented folding (docs/http.md, "Search"), on the backend of the run, through HTTP."""

from __future__ import annotations

import asyncio
import itertools
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host.storage import search
from plugin_api.testing import Client, Host, TesseraHarness

from ._lists_plugin import THING, ListsPlugin

LIST = f"{THING}.list"


def documented_fold(text: str) -> str:
    """docs/http.md: NFKC, full case folding, NFKC again (written here independently of the
    host's code)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def scan(rows: dict[str, tuple[str, str | None]], q: str) -> list[str]:
    """Ids (in id order, the list's default) whose name or note contains ``q``, folded."""
    needle = documented_fold(q)
    return sorted(
        row_id
        for row_id, texts in rows.items()
        if any(t is not None and needle in documented_fold(t) for t in texts)
    )


@pytest.fixture
async def lab(tessera: TesseraHarness) -> Host:
    return await tessera.start(plugins=[], extra=[("lab", ListsPlugin())], entry_points=False)


async def _create(client: Client, name: str, note: str | None) -> str:
    result = await client.action(f"{THING}.create", inputs={"name": name, "note": note})
    assert result.status == 200, result.json
    row_id: str = result.outputs["id"]
    return row_id


async def _ids(client: Client, q: str, **more: str) -> list[str]:
    result = await client.projection(LIST, query={"q": q, "pageSize": "500", **more})
    assert result.status == 200, result.json
    return [item["id"] for item in result.items]


@pytest.fixture(params=["indexed", "frequent"])
def drive(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """SQLite reads a rare text through the FTS5 index and a frequent one in the list's
    order (host.storage.search.FREQUENT): both answers must be the scan's. ``frequent``
    makes every text found at least once frequent."""
    if request.param == "frequent":
        monkeypatch.setattr(search, "FREQUENT", 1)
    return str(request.param)


async def test_search_folds_all_of_unicode(lab: Host, drive: str) -> None:
    client = lab.client(tenant="t1")
    ecole = await _create(client, "ÉCOLE normale", None)
    naive = await _create(client, "plain", "une idée naïve")
    strasse = await _create(client, "Hauptstraße 5", None)
    ligature = await _create(client, "ﬁne print", "ΣΟΦΙΑ")
    other = lab.client(tenant="t2")
    await _create(other, "école", None)  # another tenant's row is never found
    assert await _ids(client, "école") == [ecole]
    assert await _ids(client, "ÉCOLE") == [ecole]
    assert await _ids(client, "NAÏVE") == [naive]
    assert await _ids(client, "STRASSE") == [strasse]
    assert await _ids(client, "fine") == [ligature]
    assert await _ids(client, "σοφια") == [ligature]
    # Shorter than the trigram index serves: the same answer (a scan of the tenant's rows).
    assert await _ids(client, "É") == sorted([ecole, naive])
    assert await _ids(client, "ss") == [strasse]
    # Characters of LIKE patterns and FTS5 queries are plain text.
    assert await _ids(client, "%") == []
    assert await _ids(client, '"') == []
    assert await _ids(client, "$q$ x") == []
    assert await _ids(client, "nothing like it") == []


async def test_search_follows_updates_in_the_same_action(lab: Host) -> None:
    client = lab.client(tenant="t1")
    row = await _create(client, "Café", None)
    assert await _ids(client, "CAFÉ") == [row]
    edit = await client.action(f"{THING}.edit", subject=row, inputs={"name": "Thé"})
    assert edit.status == 200, edit.json
    assert await _ids(client, "café") == []
    assert await _ids(client, "THÉ") == [row]
    edit = await client.action(f"{THING}.edit", subject=row, inputs={"note": "Ärger"})
    assert edit.status == 200, edit.json
    assert await _ids(client, "ärger") == [row]
    assert await _ids(client, "thé") == [row]
    # The name sent again as it is stored (a form saved with one field changed): the write
    # leaves the unchanged column out, and the index still holds both fields.
    edit = await client.action(f"{THING}.edit", subject=row, inputs={"name": "Thé", "note": "Öl"})
    assert edit.status == 200, edit.json
    assert await _ids(client, "thé") == [row]
    assert await _ids(client, "öl") == [row] and await _ids(client, "ärger") == []


async def test_search_with_sort_filter_and_pages(lab: Host) -> None:
    client = lab.client(tenant="t1")
    names = ["Äpfel 1", "äPFEL 2", "apfel 3", "ÄPFEL 4", "Birne"]
    made = {await _create(client, name, None): name for name in names}
    wanted = sorted(
        (i for i, n in made.items() if "äpfel" in documented_fold(n)), key=made.__getitem__
    )
    result = await client.projection(LIST, query={"q": "Äpfel", "sort": "name", "pageSize": "2"})
    got = [item["id"] for item in result.items]
    cursor = result.json["data"]["pagination"]["nextCursor"]
    while cursor:
        query = {"q": "Äpfel", "sort": "name", "pageSize": "2", "cursor": cursor}
        result = await client.projection(LIST, query=query)
        got += [item["id"] for item in result.items]
        cursor = result.json["data"]["pagination"]["nextCursor"]
    assert got == wanted and len(got) == 3


# Text a person types, with the characters folding is about, and the special ones of the
# backends' query languages.
_PIECES = st.sampled_from(
    [
        "É",
        "é",
        "e\u0301",
        "ß",
        "SS",
        "ﬁ",
        "İ",
        "\u0131",
        "Σ",
        "ς",
        "\u03c3",
        "%",
        "_",
        "\\",
        '"',
        "'",
        " ",
        "$q$",
        "$q",
    ]
)
_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), max_codepoint=0x2FFFF)
_TEXT = st.lists(st.one_of(_PIECES, st.text(_CHARS, max_size=3)), max_size=6).map("".join)


async def test_search_equals_a_scan_in_python(lab: Host, drive: str) -> None:
    loop = asyncio.get_running_loop()
    tenants = itertools.count()
    checked = {"queries": 0, "found": 0}

    async def check(texts: list[tuple[str, str | None]], queries: list[str]) -> None:
        client = lab.client(tenant=f"p{next(tenants)}")
        rows: dict[str, tuple[str, str | None]] = {}
        for name, note in texts:
            rows[await _create(client, name, note)] = (name, note)
        for q in queries:
            if not q:
                continue
            expected = scan(rows, q)
            assert await _ids(client, q) == expected, (q, texts)
            checked["queries"] += 1
            checked["found"] += bool(expected)

    @st.composite
    def case(draw: Any) -> tuple[list[tuple[str, str | None]], list[str]]:
        texts = draw(
            st.lists(st.tuples(_TEXT, st.one_of(st.none(), _TEXT)), min_size=1, max_size=5)
        )
        queries = draw(st.lists(_TEXT, max_size=3))
        # Pieces of the stored texts, case changed: queries that find something.
        for name, note in texts:
            for text in (name, note or ""):
                if text:
                    start = draw(st.integers(0, len(text) - 1))
                    end = draw(st.integers(start + 1, len(text)))
                    piece = text[start:end]
                    queries.append(draw(st.sampled_from([piece, piece.upper(), piece.lower()])))
        return texts, queries

    @settings(
        max_examples=30,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(example=case())
    def prop(example: tuple[list[tuple[str, str | None]], list[str]]) -> None:
        asyncio.run_coroutine_threadsafe(check(*example), loop).result(timeout=120)

    await asyncio.to_thread(prop)
    assert checked["queries"] > 30 and checked["found"] > 10
