"""A plugin published for an older plugin API keeps working (docs/compatibility.md).

Each compiler rule added since plugin API 1.0 applies to the plugins that require the plugin
API which added it, or a later one; an older plugin (one requiring nothing counts as 1.0)
gets the older behaviour, in a safe form where the rule protects readers, and a warning in
``tessera check`` and the start log naming the rule, its reason and the fix. ``tessera
check`` also lists the deprecated spellings a plugin uses, with the version removing each.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib.util
import logging
import sys
from pathlib import Path
from typing import Any

import pluggy
import pytest

from host.graph import Graph, GraphError, build_graph
from host.graph.compat import RULES
from host.graph.deprecations import DEPRECATED, deprecation_warnings, uses_in
from host.plugins import LoadedPlugins, PluginInfo
from plugin_api import PROJECT_NAME, Projection, ReadAccess
from plugin_api.testing import Client, SharedHarness, TesseraHarness

from ._board import BOARD, BOARD_1_5, CARD, PROJECTIONS, RANKED, Board

SHOWN_RULE = "rule 'a list filters, sorts and searches only fields it shows' (plugin API 1.7)"
SHOWN_FIX = (
    "Fix: show the field in the projection or leave it out of the listing, then require "
    "plugin API 1.7 or later"
)
NEWEST = "1.1.0"


def compile_board(api: str | None, projections: tuple[Projection, ...] = PROJECTIONS) -> Graph:
    return build_graph(extra=[("board", Board(api, projections))], entry_points=False)


def about(graph: Graph, text: str) -> list[str]:
    return [warning for warning in graph.warnings if text in warning]


# ---------------------------------------------------------------------------------------------
# The shown-fields rule (plugin API 1.7)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", [None, "1.0", "1.5", "1.6"])
def test_an_older_list_on_hidden_fields_compiles_with_a_warning_each(api: str | None) -> None:
    graph = compile_board(api)
    warnings = about(graph, SHOWN_RULE)
    assert len(warnings) == 5, graph.warnings  # created_at, updated_at, note, rank, memo
    (created,) = about(graph, "on 'created_at'")
    assert created.startswith(
        f"plugin 'board': projection {BOARD!r}: listing declares a filter and a sort on "
        "'created_at', which the projection does not show; " + SHOWN_RULE
    ), created
    assert "reveals the field's values to the list's readers" in created  # the reason
    assert f"The plugin requires plugin API {api or '1.0'}, so it still loads" in created
    assert "the list shows 'id', a ULID carrying the same instant" in created
    assert created.endswith(SHOWN_FIX)
    (note,) = about(graph, "on 'note'")
    assert "projection 'board.card.detail' shows the field to every reader" in note
    (rank,) = about(graph, "on 'rank'")
    assert "a filter and a sort on 'rank'" in rank and rank.endswith(SHOWN_FIX)
    assert "the list sorts on it, and its value never leaves the server" in rank
    assert "its filter is not offered (a request naming it is a 400" in rank
    (memo,) = about(graph, "on 'memo'")
    assert "its search is not offered" in memo and "sorts on it" not in memo
    assert graph.projections[BOARD].withheld == frozenset()
    assert graph.projections[RANKED].withheld == {"rank", "memo"}


@pytest.mark.parametrize("api", ["1.7", "1.8", "1.9"])
def test_a_plugin_requiring_the_rule_is_refused_with_the_current_error(api: str) -> None:
    with pytest.raises(GraphError) as caught:
        compile_board(api)
    reason = "which the projection does not show (it would reveal the field's values); show "
    expected = [
        f"plugin 'board': projection {fqn!r}: listing {what} {name!r}, {reason}"
        "the field or leave it out"
        for fqn, what, name in (
            (BOARD, "filters on", "created_at"),
            (BOARD, "filters on", "note"),
            (BOARD, "sorts on", "created_at"),
            (BOARD, "sorts on", "updated_at"),
            (RANKED, "filters on", "rank"),
            (RANKED, "sorts on", "rank"),
            (RANKED, "searches", "memo"),
        )
    ]
    assert sorted(caught.value.errors) == sorted(expected)


def _with_access(fqn: str, access: ReadAccess | None) -> tuple[Projection, ...]:
    return tuple(dataclasses.replace(p, access=access) if p.fqn == fqn else p for p in PROJECTIONS)


def test_a_field_is_no_secret_only_if_shown_to_every_reader_of_the_list() -> None:
    agents = ReadAccess(roles=("agent",))
    # The detail that shows the note now has readers of its own: the board, readable by
    # anyone, may no longer be filtered on it (created_at stays: the ids tell it).
    restricted = compile_board("1.5", _with_access(f"{CARD}.detail", agents))
    assert restricted.projections[BOARD].withheld == {"note"}
    # The ranked list readable by the bosses only: the admin projection shows them rank and
    # memo, so nothing is withheld from them.
    bosses = compile_board("1.5", _with_access(RANKED, ReadAccess(roles=("boss",))))
    assert bosses.projections[RANKED].withheld == frozenset()
    (rank,) = about(bosses, "on 'rank'")
    assert "projection 'board.card.admin' shows the field to every reader" in rank


# ---------------------------------------------------------------------------------------------
# Role names (plugin API 1.2)
# ---------------------------------------------------------------------------------------------


def _roles(kit: Any, role: str, api: str | None) -> object:
    plugin = kit.baseline().with_action("shop.order.edit", roles=(role, "clerk")).plugin()
    if api is not None:
        plugin.TESSERA_PLUGIN_API = api
    return plugin


@pytest.mark.parametrize("api", [None, "1.1"])
def test_an_older_plugin_keeps_a_role_that_is_no_role_name(kit: Any, api: str | None) -> None:
    graph = kit.compile_plugins(("shop", _roles(kit, "team lead", api)))
    (warning,) = about(graph, "rule 'a role is a role name' (plugin API 1.2)")
    assert warning.startswith(
        "plugin 'shop': action 'shop.order.edit': role 'team lead' is not a role name"
    )
    assert "no caller can hold any other role" in warning  # the reason
    assert "no caller holds the role" in warning  # what the plugin gets
    assert warning.endswith(
        "Fix: rename the role to a role name (such as 'team_lead'), then require plugin API "
        "1.2 or later"
    )


def test_the_role_rules_of_1_0_and_of_1_2(kit: Any) -> None:
    errors = kit.graph_errors(("shop", _roles(kit, "team lead", "1.2")))
    assert any("role 'team lead' is not a role name" in error for error in errors), errors
    # What plugin API 1.0 already refused stays refused.
    errors = kit.graph_errors(("shop", _roles(kit, "a,b", None)))
    assert any("role 'a,b' is not a role name" in error for error in errors), errors


async def test_a_role_no_caller_can_hold_admits_nobody(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(plugins=[], extra=[("old", OLD_ROLES)])
    created = await host.client(roles=["team"]).action(f"{CARD}.create", inputs={"title": "t"})
    assert created.status == 200  # the create action needs no role
    edit = f"{CARD}.edit"
    for roles in (["team"], ["clerk"]):
        refused = await host.client(roles=roles).action(
            edit, subject=created.outputs["id"], inputs={"title": "u"}
        )
        assert (refused.status, refused.error_kind) == (403, "PolicyDenied")
    headers = {"X-Actor-Roles": "team lead", "Content-Type": "application/json"}
    sent = await host.client().request("POST", f"/actions/{edit}", headers=headers, body=b"{}")
    assert sent.status == 400  # the header cannot carry it


# ---------------------------------------------------------------------------------------------
# Deprecations
# ---------------------------------------------------------------------------------------------

OLD_SOURCE = """\
from plugin_api import Condition, Filter, FilterOperator, RowCondition


def policy(ctx):
    return RowCondition(field="state", operator="eq", value="open")


async def effect(ctx):
    return await ctx.data.find("x.y", Condition(field="note", op="null", value=True))


FILTERS = (Filter(field="state", operators=(FilterOperator.EQ,)),)
"""


def test_deprecated_spellings_are_found_in_source() -> None:
    found = {deprecated.spelling: line for deprecated, line in uses_in(OLD_SOURCE)}
    assert found == {"FilterOperator": 1, "RowCondition": 1, "Condition(op=...)": 9}
    assert uses_in(OLD_SOURCE.replace("plugin_api", "elsewhere")) == ()  # not ours
    assert uses_in("def (:") == ()
    assert {d.removal for d in DEPRECATED} == {"2.0"}


def test_check_lists_an_installed_plugins_deprecations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "tessera_oldie"
    (package / "tests").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plugin.py").write_text(OLD_SOURCE)
    (package / "tests" / "test_it.py").write_text(OLD_SOURCE)  # tests are not scanned
    for name, path in (
        ("tessera_oldie", package / "__init__.py"),
        ("tessera_oldie.plugin", package / "plugin.py"),
    ):
        spec = importlib.util.spec_from_file_location(
            name, path, submodule_search_locations=[str(package)] if "." not in name else None
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
    plugin = sys.modules["tessera_oldie.plugin"]
    installed = PluginInfo(name="oldie", distribution="tessera-oldie", version="0.3")
    loaded = LoadedPlugins(
        manager=pluggy.PluginManager(PROJECT_NAME), plugins=((installed, plugin),), errors=()
    )
    lines = deprecation_warnings(loaded)
    assert lines == (
        "plugin 'oldie' (tessera-oldie 0.3): plugin.py:1 uses FilterOperator, deprecated since "
        "plugin API 1.6: it will be removed in plugin API 2.0; use Operator (the same enum)",
        "plugin 'oldie' (tessera-oldie 0.3): plugin.py:1 uses RowCondition, deprecated since "
        "plugin API 1.6: it will be removed in plugin API 2.0; use Condition (the same class)",
        "plugin 'oldie' (tessera-oldie 0.3): plugin.py:9 uses Condition(op=...), deprecated "
        "since plugin API 1.6: it will be removed in plugin API 2.0; use "
        "Condition(operator=...)",
    )
    # A plugin object of a test (no distribution) is not read.
    uninstalled = PluginInfo(name="oldie")
    assert (
        deprecation_warnings(
            LoadedPlugins(manager=loaded.manager, plugins=((uninstalled, plugin),), errors=())
        )
        == ()
    )


def test_every_gated_rule_and_deprecation_is_in_the_compatibility_doc() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "compatibility.md").read_text()
    for rule in RULES:
        assert f"| {rule.name} | {rule.since} |" in doc, rule.name
    for deprecated in DEPRECATED:
        row = f"| `{deprecated.spelling}` | {deprecated.since} | {deprecated.removal} |"
        assert row in doc, deprecated.spelling


# ---------------------------------------------------------------------------------------------
# Over HTTP
# ---------------------------------------------------------------------------------------------


async def _card(client: Client, title: str, **values: object) -> str:
    created = await client.action(f"{CARD}.create", inputs={"title": title, **values})
    return str(created.outputs["id"])


async def _titles(client: Client, fqn: str, **query: str) -> list[str]:
    page = await client.projection(fqn, query={"acceptSchemaVersions": NEWEST, **query})
    assert all(set(item) == {"id", "title"} for item in page.items), page.items
    return [item["title"] for item in page.items]


async def test_a_1_5_plugin_starts_serves_its_board_in_order_and_warns(
    tessera: TesseraHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tessera.service")
    host = await tessera.start(plugins=[], extra=[("board", BOARD_1_5)])
    logged = [r.getMessage() for r in caplog.records if SHOWN_RULE in r.getMessage()]
    assert len(logged) == 5 and all(line.endswith(SHOWN_FIX) for line in logged), logged
    client = host.client(actor="ann")
    ids = [await _card(client, title) for title in ("a", "b", "c")]
    await client.action(f"{CARD}.edit", subject=ids[0], inputs={"note": "touched"})
    assert await _titles(client, BOARD) == ["a", "c", "b"]  # -updated_at, not shown
    assert await _titles(client, BOARD, sort="created_at") == ["a", "b", "c"]
    assert await _titles(client, BOARD, sort="-created_at") == ["c", "b", "a"]
    second = await client.projection(f"{CARD}.detail", subject=ids[1])
    assert second.item is not None
    since = {"filter.created_at.gte": second.item["created_at"]}
    assert await _titles(client, BOARD, **since) == ["c", "b"]
    assert await _titles(client, BOARD, **{"filter.note.contains": "TOUCH"}) == ["a"]


async def test_a_1_8_plugin_is_refused_at_start(tessera: TesseraHarness) -> None:
    with pytest.raises(GraphError) as caught:
        await tessera.start(plugins=[], extra=[("board", Board("1.8"))])
    assert len(caught.value.errors) == 7
    assert all("which the projection does not show" in e for e in caught.value.errors)


async def test_a_secret_field_still_sorts_but_cannot_be_probed(
    tessera_shared: SharedHarness,
) -> None:
    host = await tessera_shared.start(plugins=[], extra=[("board", BOARD_1_5)])
    client = host.client(actor="ann")
    for title, rank in (("third", 3), ("first", 1), ("second", 2)):
        await _card(client, title, rank=rank, memo=f"{title} memo, bosses only")
    assert await _titles(client, RANKED) == ["first", "second", "third"]
    document = await client.projection(RANKED, query={"acceptSchemaVersions": NEWEST})
    assert [f["field"] for f in document.json["filters"]] == ["title"]
    assert document.json["search"]["fields"] == ["title"]
    for probe in ({"filter.rank.lt": "2"}, {"filter.rank": "1"}):
        refused = await client.projection(RANKED, query={"acceptSchemaVersions": NEWEST, **probe})
        assert (refused.status, refused.error_kind) == (400, "BadRequest"), probe
    assert await _titles(client, RANKED, q="memo") == []  # memo is not searched
    assert await _titles(client, RANKED, q="sec") == ["second"]
    boss = await host.client(roles=["boss"]).projection(f"{CARD}.admin")
    assert sorted(item["rank"] for item in boss.items) == [1, 2, 3]


async def test_a_cursor_tells_nothing_of_a_hidden_sort_key(
    tessera_shared: SharedHarness,
) -> None:
    host = await tessera_shared.start(plugins=[], extra=[("board", BOARD_1_5)])
    client = host.client(actor="ann")
    cursors = []
    for rank in (700001, 123456789012345):  # digits that never show in a random ciphertext
        tenant = host.client(tenant=host.new_tenant(), actor="ann")
        await _card(tenant, "only", rank=rank)
        await _card(tenant, "last", rank=rank + 1)
        page = await tenant.projection(
            RANKED, query={"acceptSchemaVersions": NEWEST, "pageSize": "1"}
        )
        cursor = page.json["data"]["pagination"]["nextCursor"]
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        assert str(rank).encode() not in raw
        cursors.append(cursor)
        following = await _titles(tenant, RANKED, pageSize="1", cursor=cursor)
        assert following == ["last"]
    assert len(cursors[0]) == len(cursors[1])  # the value's length does not show either
    assert await _titles(client, RANKED) == []


OLD_ROLES = Board(None, roles=("team lead",))
"""The board of a plugin API 1.0 author whose edit action needs the role ``team lead``."""
