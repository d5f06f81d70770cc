"""Relations through HTTP (docs/writing-plugins.md, "Relations"; docs/http.md, "ViewSchema
1.4.0"): followed fields shown, filtered and sorted with cursor paging, display texts, row
scopes through a reference and OR, the target's read floor (null for a reader it does not
admit), and tenants that never join. Both backends (``TESSERA_TEST_BACKEND``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host.config import Settings
from host.graph import GraphError
from host.storage import Storage
from host.storage.tx import Tx
from plugin_api import Entity, Field, FieldType, ListOptions, Projection, RowScope, hookimpl
from plugin_api.access import ReadAccess
from plugin_api.testing import Client, Host, TesseraHarness

from ._tracker_plugin import BOARD, EITHER, ISSUE, MINE, OWNED, PROJECT, TrackerPlugin

TENANTS = ("t1", "t2")
V14 = "1.4.0"
LEAD: dict[str, Any] = {"actor": "lena", "roles": ["lead"]}

# (key, name, owner, secret) per tenant; t2 reuses keys to show tenants never mix.
PROJECTS: Mapping[str, Sequence[tuple[str, str, str, bool]]] = {
    "t1": (
        ("CORE", "Core engine", "olga", False),
        ("APP", "Mobile app", "piet", False),
        ("OPS", "Operations", "olga", True),
    ),
    "t2": (("CORE", "Other core", "olga", False),),
}
# (title, project key, reporter, assignee)
ISSUES: Sequence[tuple[str, str, str, str | None]] = (
    ("crash on start", "CORE", "ann", "bob"),
    ("slow sync", "APP", "bob", None),
    ("login fails", "APP", "ann", "carl"),
    ("disk full", "OPS", "carl", "ann"),
    ("typo", "CORE", "dora", None),
    ("dark mode", "APP", "dora", "bob"),
    ("backup", "OPS", "olga", None),
)


async def start(tessera: TesseraHarness, **options: Any) -> Host:
    return await tessera.start(
        plugins=[], extra=[("trk", TrackerPlugin())], entry_points=False, **options
    )


async def seed(host: Host) -> dict[str, dict[str, Any]]:
    """Projects and issues in both tenants; per tenant: project key -> project row and
    ``issues`` -> every issue row (as the lead reads them)."""
    seeded: dict[str, dict[str, Any]] = {}
    for tenant in TENANTS:
        client = host.client(tenant=tenant, **LEAD)
        projects: dict[str, Any] = {}
        for key, name, owner, secret in PROJECTS[tenant]:
            inputs = {"key": key, "name": name, "owner": owner, "secret": secret}
            made = await client.action("trk.project.create", inputs=inputs)
            assert made.status == 200, made.json
            projects[key] = {"id": made.outputs["id"], **inputs}
        issues = []
        for title, key, reporter, assignee in ISSUES:
            if key not in projects:
                continue
            inputs = {
                "title": f"{tenant} {title}",
                "project": projects[key]["id"],
                "reporter": reporter,
                "assignee": assignee,
            }
            made = await client.action("trk.issue.create", inputs=inputs)
            assert made.status == 200, made.json
            issues.append({"id": made.outputs["id"], **inputs, "key": key})
        seeded[tenant] = {"projects": projects, "issues": issues}
    return seeded


async def pages(client: Client, fqn: str, query: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every item of a paged list, following nextCursor (each page must answer 200)."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = dict(query) if cursor is None else {**query, "cursor": cursor}
        result = await client.projection(fqn, query=params)
        assert result.status == 200, result.json
        items.extend(result.items)
        cursor = result.json["data"]["pagination"]["nextCursor"]
        if cursor is None:
            return items


def readable_key(issue: Mapping[str, Any], project: Mapping[str, Any], roles: set[str]) -> Any:
    """What a reader with ``roles`` reads in ``project.key`` (the project's read floor)."""
    if "lead" in roles:
        return issue["key"]
    if "member" in roles and not project["secret"]:
        return issue["key"]
    return None


def board_order(
    issues: Sequence[Mapping[str, Any]], keys: Mapping[str, Any], descending: bool
) -> list[str]:
    """Ids sorted by the key read (null first ascending, last descending), ties by id in the
    key's direction."""
    present = sorted((keys[i["id"]], i["id"]) for i in issues if keys[i["id"]] is not None)
    nulls = sorted(i["id"] for i in issues if keys[i["id"]] is None)
    if descending:
        return [i for _, i in reversed(present)] + list(reversed(nulls))
    return nulls + [i for _, i in present]


async def test_board_shows_filters_and_sorts_by_the_projects_key(
    tessera: TesseraHarness,
) -> None:
    host = await start(tessera)
    seeded = await seed(host)
    lead = host.client(tenant="t1", **LEAD)
    issues = seeded["t1"]["issues"]
    keys = {issue["id"]: issue["key"] for issue in issues}
    # v0.1 shape: the followed fields are plain values of the row (every version shows them).
    plain = await lead.projection(BOARD)
    assert plain.status == 200 and plain.json["schemaVersion"] == "1.0.0"
    assert {i["id"]: i["project.key"] for i in plain.items} == keys
    assert "_display" not in plain.items[0]
    by_id = {i["id"]: i for i in plain.items}
    for issue in issues:
        project = seeded["t1"]["projects"][issue["key"]]
        assert by_id[issue["id"]]["project.name"] == project["name"]
    # Sorted by the key across pages of 2, both directions, ties broken by id.
    for sort, descending in (("project.key", False), ("-project.key", True)):
        got = await pages(lead, BOARD, {"pageSize": "2", "sort": sort})
        assert [i["id"] for i in got] == board_order(issues, keys, descending)
    two = await pages(lead, BOARD, {"pageSize": "1", "sort": "project.key,-title"})
    expected = sorted(issues, key=lambda i: i["title"], reverse=True)
    expected = sorted(expected, key=lambda i: i["key"])
    assert [i["id"] for i in two] == [i["id"] for i in expected]
    # Filters on the followed field: equality, in, contains; counts and facets agree.
    core = await pages(lead, BOARD, {"pageSize": "1", "filter.project.key": "CORE"})
    assert {i["id"] for i in core} == {i["id"] for i in issues if i["key"] == "CORE"}
    some = await lead.projection(BOARD, query={"filter.project.key.in": "OPS,APP", "count": "true"})
    wanted = {i["id"] for i in issues if i["key"] in ("OPS", "APP")}
    assert {i["id"] for i in some.items} == wanted
    assert some.json["data"]["count"] == {"value": len(wanted), "exact": True}
    named = await lead.projection(BOARD, query={"filter.project.name.contains": "MOBILE"})
    assert {i["id"] for i in named.items} == {i["id"] for i in issues if i["key"] == "APP"}
    # A search (on SQLite its text index drives the read) joins the same way.
    for text in ("sync", "s"):
        found = await pages(lead, BOARD, {"pageSize": "1", "q": text, "filter.project.key": "APP"})
        matching = [i for i in issues if text in i["title"] and i["key"] == "APP"]
        assert sorted(i["id"] for i in found) == sorted(i["id"] for i in matching)
        assert {i["project.key"] for i in found} == {"APP"}
    # The export reads the same rows with the same followed values.
    exported = await lead.projection(BOARD, query={"format": "ndjson", "sort": "project.key"})
    lines = [json.loads(line) for line in exported.body.decode().splitlines()]
    assert [row["project.key"] for row in lines] == sorted(keys.values())
    csv = await lead.projection(BOARD, query={"format": "csv", "filter.project.key": "OPS"})
    assert csv.body.decode().splitlines()[0] == "id,title,project,project.key,project.name"


async def test_display_texts_and_descriptors_at_1_4_0(tessera: TesseraHarness) -> None:
    host = await start(tessera)
    seeded = await seed(host)
    lead = host.client(tenant="t1", **LEAD)
    issue = seeded["t1"]["issues"][0]
    older = await lead.projection(BOARD, query={"acceptSchemaVersions": "1.3.0"})
    assert older.json["schemaVersion"] == "1.3.0"
    assert "_display" not in older.items[0]
    old_fields = {f["name"]: f for f in older.json["fields"]}
    assert old_fields["project.key"] == {
        "name": "project.key",
        "type": "string",
        "label": "Project key",
        "typeOptions": {},
    }
    assert "display" not in old_fields["project"]
    newer = await lead.projection(BOARD, query={"acceptSchemaVersions": f"1.3.0,{V14}"})
    assert newer.json["schemaVersion"] == V14
    fields = {f["name"]: f for f in newer.json["fields"]}
    assert fields["project.key"]["readOnly"] is True
    assert fields["project.key"]["follows"] == {
        "reference": "project",
        "entity": PROJECT,
        "field": "key",
    }
    assert fields["project"]["display"] == "key"
    assert "readOnly" not in fields["title"] and "display" not in fields["title"]
    for item in newer.items:
        assert item["_display"] == {"project": item["project.key"]}
    detail = await lead.projection(BOARD, subject=issue["id"], query={"acceptSchemaVersions": V14})
    assert detail.json["data"]["item"]["_display"] == {"project": "CORE"}
    filters = {f["field"]: f for f in detail.json["filters"]}
    assert filters["project.key"]["label"] == "Project key"
    assert filters["project.key"]["type"] == "string"
    # A reader the project's floor does not admit reads null, its display text too.
    guest = host.client(tenant="t1", actor="gus", roles=[])
    hidden = await guest.projection(BOARD, subject=issue["id"], query={"acceptSchemaVersions": V14})
    item = hidden.json["data"]["item"]
    assert item["project"] == issue["project"]  # the issue's own column stays readable
    assert item["project.key"] is None and item["project.name"] is None
    assert item["_display"] == {"project": None}


async def test_as_of_a_version_with_another_reference_reads_null_through_it(
    tessera: TesseraHarness,
) -> None:
    host = await start(tessera)
    seeded = await seed(host)
    lead = host.client(tenant="t1", **LEAD)
    issue = seeded["t1"]["issues"][0]  # a CORE issue
    before = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    app = seeded["t1"]["projects"]["APP"]["id"]
    moved = await lead.action("trk.issue.move", subject=issue["id"], inputs={"project": app})
    assert moved.status == 200, moved.json
    query = {"acceptSchemaVersions": V14}
    now = (await lead.projection(BOARD, subject=issue["id"], query=query)).item
    assert now is not None and now["project.key"] == "APP" and now["_display"] == {"project": "APP"}
    past = await lead.projection(BOARD, subject=issue["id"], query={**query, "asOf": before})
    item = past.json["data"]["item"]
    # The reference as it was, and nothing of the project it points at now.
    assert item["project"] == issue["project"]
    assert item["project.key"] is None and item["project.name"] is None
    assert item["_display"] == {"project": None}


async def test_a_reader_who_cannot_read_the_project_sees_null(tessera: TesseraHarness) -> None:
    host = await start(tessera)
    seeded = await seed(host)
    issues = seeded["t1"]["issues"]
    projects = {p["id"]: p for p in seeded["t1"]["projects"].values()}
    for roles in ([], ["member"], ["lead"], ["member", "lead"]):
        client = host.client(tenant="t1", actor="mia", roles=roles)
        keys = {i["id"]: readable_key(i, projects[i["project"]], set(roles)) for i in issues}
        got = await pages(client, BOARD, {"pageSize": "2", "sort": "-project.key"})
        assert {i["id"]: i["project.key"] for i in got} == keys
        assert [i["id"] for i in got] == board_order(issues, keys, True)
        # Filtering on a value the reader may not read finds nothing (it is null to them).
        ops = await client.projection(BOARD, query={"filter.project.key": "OPS"})
        assert len(ops.items) == (2 if "lead" in roles else 0)
        nulls = await client.projection(BOARD, query={"filter.project.key.null": "true"})
        assert {i["id"] for i in nulls.items} == {k for k, v in keys.items() if v is None}
        # The project list itself answers by the same floor.
        listed = await client.projection("trk.project.list")
        if roles:
            assert {p["key"] for p in listed.items} == {
                p["key"] for p in projects.values() if "lead" in roles or not p["secret"]
            }
        else:
            assert listed.status == 403 and listed.error_kind == "PolicyDenied"


async def test_another_tenants_project_never_joins(tessera: TesseraHarness) -> None:
    host = await start(tessera)
    seeded = await seed(host)
    core = seeded["t1"]["projects"]["CORE"]
    app = seeded["t1"]["projects"]["APP"]
    lone = seeded["t1"]["issues"][1]  # an APP issue
    # Behind the API's back: t2 gets a project with the id of t1's CORE, and a t1 issue is
    # pointed at an id that exists in t2 only.
    storage = Storage(Settings(database_url=host.database_url))
    await storage.connect()
    try:

        async def forge(tx: Tx) -> None:
            project, issue = _table(PROJECT), _table(ISSUE)
            copy = (
                f'INSERT INTO "{project}" (tenant_id, id, created_at, updated_at, _version, '
                '"key", "name", "owner", "secret") SELECT :tenant, :new_id, created_at, '
                'updated_at, _version, :key, :key, :key, "secret" FROM '
                f'"{project}" WHERE tenant_id = :source AND id = :id'
            )
            for new_id, key, source in ((core["id"], "EVIL", core), ("ELSEWHERE", "FOUL", app)):
                values = {"tenant": "t2", "new_id": new_id, "key": key, "source": "t1"}
                await tx.execute(copy, {**values, "id": source["id"]})
            moved = f'UPDATE "{issue}" SET "project" = :far WHERE tenant_id = :t AND id = :id'
            await tx.execute(moved, {"far": "ELSEWHERE", "t": "t1", "id": lone["id"]})

        await storage.transaction(forge)
    finally:
        await storage.disconnect()
    lead = host.client(tenant="t1", **LEAD)
    got = await pages(lead, BOARD, {"pageSize": "3", "sort": "project.key"})
    assert len(got) == len(seeded["t1"]["issues"])  # no row doubled by the second tenant
    by_id = {i["id"]: i for i in got}
    assert by_id[lone["id"]]["project.key"] is None  # t2's row never joins a t1 issue
    assert "EVIL" not in json.dumps(got) and "FOUL" not in json.dumps(got)
    evil = await lead.projection(BOARD, query={"filter.project.key": "EVIL"})
    assert evil.items == []
    owned = await host.client(tenant="t1", actor="eve", roles=["member"]).projection(OWNED)
    assert owned.items == []


def _table(fqn: str) -> str:
    from host.graph.checks import table_name

    return table_name(fqn)


async def test_scope_through_a_reference(tessera: TesseraHarness) -> None:
    host = await start(tessera)
    seeded = await seed(host)
    issues = seeded["t1"]["issues"]
    projects = {p["id"]: p for p in seeded["t1"]["projects"].values()}
    for actor in ("olga", "piet", "ann"):
        for roles in (["member"], ["lead"], []):
            client = host.client(tenant="t1", actor=actor, roles=roles)
            got = await pages(client, OWNED, {"pageSize": "2", "sort": "title"})
            if "lead" in roles:
                expected = {i["id"] for i in issues}  # exempt
            else:
                # Members: the issues of the projects they own and may read (OPS is secret:
                # its owner, a member, cannot read it, so its issues stay out of scope).
                expected = {
                    i["id"]
                    for i in issues
                    if projects[i["project"]]["owner"] == actor
                    and "member" in roles
                    and not projects[i["project"]]["secret"]
                }
            assert {i["id"] for i in got} == expected, (actor, roles)
            for issue in issues:
                detail = await client.projection(OWNED, subject=issue["id"])
                assert (detail.json["data"]["item"] is not None) == (issue["id"] in expected)
                history = await client.request(
                    "GET", f"/projections/{OWNED}/history", query={"subject": issue["id"]}
                )
                assert history.status == (200 if issue["id"] in expected else 404)
    # t2's olga owns t2's CORE only: t1's rows never show.
    t2 = host.client(tenant="t2", actor="olga", roles=["member"])
    assert {i["id"] for i in (await t2.projection(OWNED)).items} == {
        i["id"] for i in seeded["t2"]["issues"]
    }


async def test_or_scope_reporter_or_assignee(tessera: TesseraHarness) -> None:
    host = await start(tessera)
    seeded = await seed(host)
    issues = seeded["t1"]["issues"]
    for actor in ("ann", "bob", "carl", "dora", "zed"):
        client = host.client(tenant="t1", actor=actor)
        got = await pages(client, MINE, {"pageSize": "2", "sort": "-title"})
        expected = [
            i["id"]
            for i in sorted(issues, key=lambda i: i["title"], reverse=True)
            if actor in (i["reporter"], i["assignee"])
        ]
        assert [i["id"] for i in got] == expected
        counted = await client.projection(MINE, query={"count": "true"})
        assert counted.json["data"]["count"]["value"] == len(expected)
    # An anonymous reader owns no row.
    assert (await host.client(tenant="t1").projection(MINE)).items == []


async def test_read_policy_any_of_through_a_reference(tessera: TesseraHarness) -> None:
    host = await start(tessera)
    seeded = await seed(host)
    # olga owns CORE (a member reads it) and OPS (secret: a lead reads it) and reported one
    # OPS issue; ann reported two issues and owns nothing.
    cases: tuple[tuple[tuple[str, list[str]], int], ...] = (
        (("olga", ["member"]), 3),
        (("olga", []), 1),
        (("olga", ["lead"]), 4),
    )
    for (actor, roles), count in (*cases, (("ann", []), 2)):
        client = host.client(tenant="t1", actor=actor, roles=roles)
        got = await client.projection(EITHER)
        assert got.status == 200
        read = {"tenant": "t1", "actor": actor, "roles": roles, "projection": EITHER}
        expected, _ = expected_rows(seeded, read)
        assert len(expected) == count
        assert {i["id"] for i in got.items} == expected, (actor, roles)


async def test_the_data_api_does_not_follow_references(tessera: TesseraHarness) -> None:
    host = await start(tessera)
    lead = host.client(**LEAD)
    inputs = {"key": "X", "name": "X", "owner": "olga", "secret": False}
    refused = await lead.action("trk.project.probe", inputs=inputs)
    assert refused.status == 500 and refused.error_kind == "EffectFailed", refused.json
    assert (await lead.projection("trk.project.list")).items == []  # rolled back


class _Broken:
    def __init__(self, entity: Entity, projection: Projection) -> None:
        self.entity, self.projection = entity, projection

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            self.entity,
            Entity(fqn="bad.target", fields=(Field(name="code", type=FieldType.STRING),)),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (self.projection,)


_NOTE = (
    Field(name="body", type=FieldType.STRING),
    Field(name="level", type=FieldType.INTEGER, nullable=True),
    Field(name="target", type=FieldType.REFERENCE, target="bad.target"),
)


@pytest.mark.parametrize(
    ("display", "fields", "listing", "access", "message"),
    [
        ("nope", ("id",), None, None, "display 'nope' is not a declared field"),
        ("level", ("id",), None, None, "must be a string or enum field"),
        (None, ("body.code",), None, None, "'body' is not a reference field"),
        (None, ("target.nope",), None, None, "'nope' is not a field of entity 'bad.target'"),
        (
            None,
            ("id", "target.code"),
            ListOptions(search=("target.code",)),
            None,
            "a followed field cannot be searched",
        ),
        (
            None,
            ("id", "target.code", "body"),
            ListOptions(sortable=("target.code", "body"), indexes=(("target.code", "body"),)),
            None,
            "'target.code' is a followed field",
        ),
        (None, ("id",), None, ReadAccess(scope=RowScope(field="target")), "must be a string"),
        (
            None,
            ("id",),
            None,
            ReadAccess(scope=RowScope(field="body", fields=("body",))),
            "gives both field and fields",
        ),
        (None, ("id",), None, ReadAccess(scope=RowScope(fields=())), "names no field"),
        (
            None,
            ("id",),
            None,
            ReadAccess(scope=RowScope(fields=("body", "target.nope"))),
            "'target.nope' is not a declared field",
        ),
    ],
)
async def test_compiler_reports_bad_relations(
    tessera: TesseraHarness,
    display: str | None,
    fields: tuple[str, ...],
    listing: ListOptions | None,
    access: ReadAccess | None,
    message: str,
) -> None:
    entity = Entity(fqn="bad.note", fields=_NOTE, display=display)
    projection = Projection(
        fqn="bad.note.list", entity="bad.note", fields=fields, listing=listing, access=access
    )
    with pytest.raises(GraphError) as raised:
        await tessera.start(plugins=[], extra=[("bad", _Broken(entity, projection))])
    assert message in str(raised.value)


# --- property: scopes through a reference and OR never reveal a row or a value --------------

reads = st.fixed_dictionaries(
    {
        "tenant": st.sampled_from(TENANTS),
        "actor": st.sampled_from(("olga", "piet", "ann", "bob", "dora", "eve")),
        "roles": st.sets(st.sampled_from(("member", "lead", "clerk"))),
        "projection": st.sampled_from((OWNED, MINE, EITHER, BOARD)),
        "page": st.integers(1, 4),
        "descending": st.booleans(),
    }
)


def expected_rows(
    seeded: Mapping[str, Any], read: Mapping[str, Any]
) -> tuple[set[str], dict[str, Any]]:
    """The ids ``read`` may see and the project key it reads in each."""
    tenant, actor, roles = read["tenant"], read["actor"], set(read["roles"])
    issues = seeded[tenant]["issues"]
    projects = {p["id"]: p for p in seeded[tenant]["projects"].values()}

    def readable(issue: Mapping[str, Any]) -> bool:
        project = projects[issue["project"]]
        return "lead" in roles or ("member" in roles and not project["secret"])

    def owns(issue: Mapping[str, Any]) -> bool:
        return readable(issue) and projects[issue["project"]]["owner"] == actor

    fqn = read["projection"]
    if fqn == OWNED:
        visible = {i["id"] for i in issues if "lead" in roles or owns(i)}
    elif fqn == MINE:
        visible = {i["id"] for i in issues if actor in (i["reporter"], i["assignee"])}
    elif fqn == EITHER:
        visible = {i["id"] for i in issues if i["reporter"] == actor or owns(i)}
    else:
        visible = {i["id"] for i in issues}
    keys = {i["id"]: (i["key"] if readable(i) else None) for i in issues}
    return visible, keys


async def test_property_relations_no_row_or_value_outside_scope(tessera: TesseraHarness) -> None:
    host = await start(tessera)
    seeded = await seed(host)
    loop = asyncio.get_running_loop()
    checked = {"reads": 0}

    async def check_one(read: dict[str, Any]) -> None:
        client = host.client(tenant=read["tenant"], actor=read["actor"], roles=read["roles"])
        fqn = read["projection"]
        query = {"pageSize": str(read["page"])}
        if fqn == BOARD:
            query["sort"] = "-project.key" if read["descending"] else "project.key"
        else:
            query["sort"] = "-title" if read["descending"] else "title"
        got = await pages(client, fqn, query)
        visible, keys = expected_rows(seeded, read)
        ids = [item["id"] for item in got]
        assert len(ids) == len(set(ids))
        assert set(ids) == visible
        for item in got:
            if "project.key" in item:
                assert item["project.key"] == keys[item["id"]]
            if "project.owner" in item and keys[item["id"]] is None:
                assert item["project.owner"] is None
        if fqn == BOARD:
            issues = seeded[read["tenant"]]["issues"]
            assert ids == board_order(issues, keys, read["descending"])
        counted = await client.projection(fqn, query={"count": "true"})
        assert counted.json["data"]["count"]["value"] == len(visible)
        exported = await client.projection(fqn, query={"format": "ndjson"})
        lines = exported.body.decode().splitlines()
        assert {json.loads(line)["id"] for line in lines} == visible
        checked["reads"] += 1

    @settings(
        max_examples=30,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(read=reads)
    def prop(read: dict[str, Any]) -> None:
        asyncio.run_coroutine_threadsafe(check_one(read), loop).result(timeout=120)

    await asyncio.to_thread(prop)
    assert checked["reads"] > 0


async def test_a_sortable_followed_field_is_indexed_on_its_own_table(
    tessera: TesseraHarness,
) -> None:
    host = await start(tessera)
    storage = Storage(Settings(database_url=host.database_url))
    await storage.connect()
    try:
        catalog = (
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?"
            if storage.dialect.embedded
            else "SELECT indexname FROM pg_indexes WHERE tablename = $1"
        )
        found = {str(row[0]) for row in await storage.rows(catalog, [_table(PROJECT)])}
        issue_indexes = {str(row[0]) for row in await storage.rows(catalog, [_table(ISSUE)])}
    finally:
        await storage.disconnect()
    # project.key is sortable on the board: (tenant, key, id) on the project table; the
    # reference column keeps its (tenant, project) index on the issue table.
    assert any(name.startswith(f"{_table(PROJECT)}___key___lst_") for name in found), found
    assert f"{_table(ISSUE)}___project___ref" in issue_indexes
