"""An entity's read floor (``Entity(access=ReadAccess(...))``): every projection of the entity
requires its roles and applies its row scope, on top of the projection's own access; the
compiler warns when one projection of an entity without a floor restricts and another does
not."""

from __future__ import annotations

from types import SimpleNamespace

from host.config import Settings
from host.graph import Graph, compile_graph
from host.plugins import load_plugins
from plugin_api import (
    CreateAction,
    Entity,
    Field,
    FieldType,
    Projection,
    ReadAccess,
    RowScope,
    Stamp,
    hookimpl,
)
from plugin_api.testing import TesseraHarness

NOTE = "lab.note"
SHOWN = ("id", "text", "owner")


def _plugin(
    floor: ReadAccess | None, everyone: ReadAccess | None = None, api: str = "1.0"
) -> SimpleNamespace:
    entity = Entity(
        fqn=NOTE,
        fields=(
            Field(name="text", type=FieldType.STRING),
            Field(name="owner", type=FieldType.STRING, nullable=True),
        ),
        access=floor,
    )
    create = CreateAction(
        fqn=f"{NOTE}.create", entity=NOTE, inputs=("text",), stamps=(Stamp.actor("owner"),)
    )
    projections = [
        Projection(fqn=f"{NOTE}.all", entity=NOTE, fields=SHOWN, access=everyone),
        Projection(
            fqn=f"{NOTE}.desk", entity=NOTE, fields=SHOWN, access=ReadAccess(roles=("boss",))
        ),
    ]
    return SimpleNamespace(
        TESSERA_PLUGIN_API=api,
        tessera_entities=hookimpl(lambda: [entity]),
        tessera_actions=hookimpl(lambda: [create]),
        tessera_projections=hookimpl(lambda: projections),
    )


FLOOR = ReadAccess(roles=("staff", "boss"), scope=RowScope(field="owner", exempt=("boss",)))


async def test_every_projection_inherits_the_floor(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=[], extra=[("lab", _plugin(FLOOR))], entry_points=False)
    for actor in ("ann", "bob"):
        made = await host.client(actor=actor).action(f"{NOTE}.create", inputs={"text": actor})
        assert made.status == 200
    ann = host.client(actor="ann", roles=["staff"])
    listed = await ann.projection(f"{NOTE}.all")
    assert listed.status == 200 and [i["owner"] for i in listed.items] == ["ann"]
    boss = host.client(actor="zed", roles=["boss"])
    for fqn in (f"{NOTE}.all", f"{NOTE}.desk"):
        every = await boss.projection(fqn)
        assert sorted(i["owner"] for i in every.items) == ["ann", "bob"]
    # The floor's roles, then the projection's own.
    for client, fqn in (
        (host.client(actor="eve"), f"{NOTE}.all"),
        (host.client(actor="eve", roles=["other"]), f"{NOTE}.all"),
        (ann, f"{NOTE}.desk"),
    ):
        refused = await client.projection(fqn)
        assert (refused.status, refused.error_kind) == (403, "PolicyDenied"), refused.json
    detail = await ann.projection(f"{NOTE}.all", subject=every.items[0]["id"])
    mine = [i["id"] for i in listed.items]
    assert (detail.json["data"]["item"] is not None) == (every.items[0]["id"] in mine)


def test_the_compiler_warns_when_projections_of_an_entity_disagree() -> None:
    def compiled(
        floor: ReadAccess | None, everyone: ReadAccess | None = None, api: str = "1.0"
    ) -> Graph:
        plugin = _plugin(floor, everyone, api)
        return compile_graph(load_plugins(Settings(), extra=[("lab", plugin)], entry_points=False))

    (warning,) = compiled(None).warnings
    assert f"entity {NOTE!r}" in warning and f"'{NOTE}.desk' restrict" in warning
    assert f"'{NOTE}.all' show the same rows without a restriction" in warning
    assert "declare the open ones open on purpose (access=ReadAccess())" in warning
    assert compiled(FLOOR).warnings == ()
    # Plugin API 1.11: an empty ReadAccess() is open on purpose (no gate, no warning); an
    # older plugin's stays a guarded read (docs/compatibility.md).
    modern = compiled(None, ReadAccess(), "1.11")
    assert modern.warnings == () and modern.projections[f"{NOTE}.all"].definition.access is None
    older = compiled(None, ReadAccess(), "1.10")
    assert older.projections[f"{NOTE}.all"].definition.access == ReadAccess()
