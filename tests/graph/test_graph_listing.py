"""List declarations (plugin_api.listing): compiler validation and the graph hash."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from plugin_api import Filter, ListOptions

SHOP = "plugin 'shop'"
LIST = "shop.order.list"


# Every field the declarations below name is shown: a list may only filter, sort and
# search what it shows (see test_hidden_fields_cannot_be_filtered_sorted_or_searched).
SHOWN = ("id", "title", "note", "qty", "size", "price", "paid", "status", "aux", "created_at")


def _with(kit: SimpleNamespace, listing: object, fields: tuple[str, ...] = SHOWN):
    return kit.baseline().with_projection(LIST, listing=listing, fields=fields)


GOOD = ListOptions(
    filters=(
        Filter(field="status"),
        Filter(field="title", operators=("contains", "eq")),
        Filter(field="price", label="Price (EUR)"),
        Filter(field="created_at", operators=("gte",)),
        Filter(field="aux", operators=("eq", "null")),
    ),
    sortable=("created_at", "price", "size", "title", "id"),
    default_sort=("-created_at",),
    search=("title", "note"),
    default_page_size=25,
    max_page_size=200,
    indexes=(("status", "created_at"), ("aux", "title", "price")),
)

BAD: dict[str, tuple[object, tuple[str, ...]]] = {
    "unknown filter field": (
        ListOptions(filters=(Filter(field="colour"),)),
        ("filter on 'colour' is not a field of entity 'shop.order'",),
    ),
    "tenant_id": (
        ListOptions(filters=(Filter(field="tenant_id"),)),
        ("filter on 'tenant_id': this field cannot be filtered or sorted on",),
    ),
    "contains on integer": (
        ListOptions(filters=(Filter(field="qty", operators=("contains",)),)),
        ("operator 'contains' does not fit its type 'integer'", "eq, ne, in, lt"),
    ),
    "lt on boolean": (
        ListOptions(filters=(Filter(field="paid", operators=("lt",)),)),
        ("operator 'lt' does not fit its type 'boolean'",),
    ),
    "null on a system field": (
        ListOptions(filters=(Filter(field="created_at", operators=("null",)),)),
        ("operator 'null' does not fit its type 'timestamp'",),
    ),
    "unknown operator": (
        ListOptions(filters=(Filter(field="title", operators=("like",)),)),
        ("unknown operator 'like'",),
    ),
    "empty operators": (
        ListOptions(filters=(Filter(field="title", operators=()),)),
        ("operators must be a non-empty tuple or None",),
    ),
    "filter twice": (
        ListOptions(filters=(Filter(field="title"), Filter(field="title"))),
        ("listing filters field 'title' twice",),
    ),
    "sort on _version": (
        ListOptions(sortable=("_version",)),
        ("sort on '_version': this field cannot be filtered or sorted on",),
    ),
    "sort on unknown": (
        ListOptions(sortable=("colour",)),
        ("sort on 'colour' is not a field",),
    ),
    "default sort not sortable": (
        ListOptions(sortable=("title",), default_sort=("-qty",)),
        ("listing.default_sort key '-qty' does not name a sortable field",),
    ),
    "search on a non-string": (
        ListOptions(search=("qty",)),
        ("listing.search names 'qty', which is not a string field",),
    ),
    "page size zero": (
        ListOptions(max_page_size=0),
        ("listing.max_page_size must be an integer from 1 to 1000, got 0",),
    ),
    "page size too large": (
        ListOptions(max_page_size=5000),
        ("listing.max_page_size must be an integer from 1 to 1000",),
    ),
    "default above maximum": (
        ListOptions(default_page_size=60, max_page_size=50),
        ("listing.default_page_size must be None or an integer from 1 to max_page_size (50)",),
    ),
    "index of one field": (
        ListOptions(sortable=("title",), indexes=(("title",),)),
        ("must name two or more distinct fields, not id",),
    ),
    "index on id": (
        ListOptions(sortable=("title", "id"), indexes=(("title", "id"),)),
        ("must name two or more distinct fields, not id",),
    ),
    "index of undeclared field": (
        ListOptions(sortable=("title",), indexes=(("qty", "title"),)),
        ("'qty' is not filterable or sortable",),
    ),
    "not a ListOptions": ({"filters": ()}, ("listing must be a ListOptions or None",)),
}


def test_declarations_compile(kit: SimpleNamespace) -> None:
    graph = kit.compile_plugins(("shop", _with(kit, GOOD).plugin()))
    assert graph.projections[LIST].definition.listing == GOOD


@pytest.mark.parametrize("name", list(BAD))
def test_bad_declarations_are_reported_with_the_plugin(kit: SimpleNamespace, name: str) -> None:
    listing, expected = BAD[name]
    errors = kit.graph_errors(("shop", _with(kit, listing).plugin()))
    assert any(
        SHOP in error and f"projection {LIST!r}" in error and all(p in error for p in expected)
        for error in errors
    ), errors


@pytest.mark.parametrize("api", ["1.7", "1.9"])
def test_hidden_fields_cannot_be_filtered_sorted_or_searched(
    kit: SimpleNamespace, api: str
) -> None:
    # The rule of plugin API 1.7; older plugins: tests/graph/test_graph_compat.py.
    plugin = _with(kit, GOOD, ("id", "title", "status")).plugin()
    plugin.TESSERA_PLUGIN_API = api
    errors = kit.graph_errors(("shop", plugin))
    for what, name in (
        ("filters on", "price"),
        ("filters on", "created_at"),
        ("sorts on", "size"),
        ("searches", "note"),
    ):
        expected = f"listing {what} {name!r}, which the projection does not show"
        assert any(SHOP in e and expected in e for e in errors), (expected, errors)
    assert not any("'title', which the projection does not show" in e for e in errors)
    assert not any("'id', which the projection does not show" in e for e in errors)


def test_declarations_are_part_of_the_hash(kit: SimpleNamespace) -> None:
    plain = kit.compile_plugins(
        ("shop", kit.baseline().with_projection(LIST, fields=SHOWN).plugin())
    )
    empty = kit.compile_plugins(("shop", _with(kit, ListOptions()).plugin()))
    good = kit.compile_plugins(("shop", _with(kit, GOOD).plugin()))
    other = ListOptions(**{**{f: getattr(GOOD, f) for f in GOOD.__slots__}, "max_page_size": 100})
    changed = kit.compile_plugins(("shop", _with(kit, other).plugin()))
    assert len({plain.hash, empty.hash, good.hash, changed.hash}) == 4
    # A projection that declares nothing hashes as before declarations existed.
    assert b'"listing"' not in plain.canonical


def test_operator_names_and_members_hash_alike(kit: SimpleNamespace) -> None:
    from plugin_api import FilterOperator

    by_name = ListOptions(filters=(Filter(field="title", operators=("eq", "contains")),))
    by_member = ListOptions(
        filters=(Filter(field="title", operators=(FilterOperator.EQ, FilterOperator.CONTAINS)),)
    )
    first = kit.compile_plugins(("shop", _with(kit, by_name).plugin()))
    second = kit.compile_plugins(("shop", _with(kit, by_member).plugin()))
    assert first.hash == second.hash


def test_loose_inputs_are_normalised_like_every_definition(kit: SimpleNamespace) -> None:
    loose = ListOptions(
        filters=[Filter(field="title", operators=["eq", "contains"])],  # type: ignore[arg-type]
        sortable=["title", "status"],  # type: ignore[arg-type]
        indexes=[["status", "title"]],  # type: ignore[arg-type]
    )
    strict = ListOptions(
        filters=(Filter(field="title", operators=("eq", "contains")),),
        sortable=("title", "status"),
        indexes=(("status", "title"),),
    )
    assert loose == strict
    first = kit.compile_plugins(("shop", _with(kit, loose).plugin()))
    second = kit.compile_plugins(("shop", _with(kit, strict).plugin()))
    assert first.hash == second.hash
