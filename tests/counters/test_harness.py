"""The plugin test harness (plugin API 1.8), on both backends: waiting for deliveries, a
row's audit trail, a plugin's migration from version 1 to 2 in one test file, and the
settings it takes described in ``plugin_api.settings`` (checked against the host's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields

import pytest

from host.config import SETTINGS
from plugin_api import (
    Action,
    CreateAction,
    Entity,
    EventContext,
    Field,
    FieldType,
    MapOptions,
    Migration,
    Projection,
    Subscriber,
    UpdateAction,
    hookimpl,
)
from plugin_api.settings import HARNESS_SETTINGS, setting_info
from plugin_api.testing import TesseraHarness

from .conftest import new_project
from .tracker import ISSUE, PROJECT, TrackerPlugin

ORDER = "shop.order"


class ShopV1:
    """Version 1: an order's size is ``S``, ``M`` or ``XL``."""

    SIZES: tuple[str, ...] = ("S", "M", "XL")

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        size = Field(name="size", type=FieldType.ENUM, options=self.SIZES)
        return (Entity(fqn=ORDER, fields=(Field(name="item", type=FieldType.STRING), size)),)

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{ORDER}.create", entity=ORDER, inputs=("item", "size")),
            UpdateAction(fqn=f"{ORDER}.edit", entity=ORDER, patchable=("size",)),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (Projection(fqn=f"{ORDER}.detail", entity=ORDER, fields=("id", "size", "_version")),)


class ShopV2(ShopV1):
    """Version 2: ``XL`` is gone, its orders become ``L``."""

    SIZES = ("S", "M", "L")

    @hookimpl
    def tessera_migrations(self) -> Sequence[Migration]:
        return (MapOptions(entity=ORDER, field="size", mapping={"XL": "L"}),)


async def test_a_migration_from_version_1_to_2_in_one_test(tessera: TesseraHarness) -> None:
    old = await tessera.start(plugins=[], extra=[("shop", ShopV1())])
    client = old.client(tenant="t1", actor="ann")
    created = await client.action(f"{ORDER}.create", inputs={"item": "coat", "size": "XL"})
    order = created.outputs["id"]
    kept = await client.action(f"{ORDER}.create", inputs={"item": "hat", "size": "S"})
    await old.stop()

    with pytest.raises(Exception, match="enum-option-removed"):
        await tessera.migrate(plugins=[], extra=[("shop", ShopV2())])  # not allowed
    applied = await tessera.migrate(
        plugins=[], extra=[("shop", ShopV2())], allow=("enum-option-removed",)
    )
    assert any("enum-option-removed" in line for line in applied)

    new = await tessera.start(plugins=[], extra=[("shop", ShopV2())])
    client = new.client(tenant="t1", actor="ann")
    detail = await client.projection(f"{ORDER}.detail", subject=order)
    assert detail.item is not None and detail.item["size"] == "L"
    migrated, first = await new.audit_trail(ORDER, order)
    assert (migrated.action, migrated.actor_id) == ("migration:shop", "system")
    assert migrated.changes == {"size": ("XL", "L")}
    assert migrated.version_before == first.version_after
    assert migrated.version_after == detail.item["_version"]
    assert len(await new.audit_trail(ORDER, kept.outputs["id"])) == 1  # not rewritten
    edited = await client.action(f"{ORDER}.edit", subject=order, inputs={"size": "M"})
    assert edited.status == 200


async def test_history_through_http_and_the_audit_trail_agree(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=[], extra=[("tracker", TrackerPlugin())])
    client = host.client(tenant="t1", actor="ann")
    apollo = await new_project(client)
    issue = await client.action(f"{ISSUE}.create", inputs={"title": "x", "project": apollo})
    assert issue.status == 200
    trail = await host.audit_trail(PROJECT, apollo)
    history = await client.history(f"{PROJECT}.detail", apollo)
    assert [r.event_id for r in trail] == [item["eventId"] for item in history.items]
    assert [r.action for r in trail] == [f"{ISSUE}.create", f"{PROJECT}.create"]
    assert await host.audit_trail(PROJECT, apollo, tenant="t2") == []


class _Failing:
    @hookimpl
    def tessera_subscribers(self) -> Sequence[Subscriber]:
        async def fail(ctx: EventContext) -> None:
            raise RuntimeError("always")

        return (Subscriber(name="failing.one", handler=fail, actions=(f"{PROJECT}.create",)),)


async def test_deliveries_settled_reports_dead_ones_and_times_out_on_waiting_ones(
    tessera: TesseraHarness,
) -> None:
    plugins = [("tracker", TrackerPlugin()), ("failing", _Failing())]
    host = await tessera.start(plugins=[], extra=plugins, events_poll_s=0.02, events_max_attempts=1)
    await new_project(host.client(tenant="t1", actor="ann"))
    assert await host.deliveries_settled() == {"failing.one": 1}
    await host.stop()
    idle = await tessera.start(plugins=[], extra=plugins, events_dispatch=False)
    await new_project(idle.client(tenant="t1", actor="ann"))
    with pytest.raises(AssertionError, match=r"failing\.one"):
        await idle.deliveries_settled(timeout=0.2)


def test_the_harness_settings_are_the_hosts() -> None:
    host = {s.name: s for s in SETTINGS}
    kinds: Mapping[str, type] = {"bool": bool, "int": int, "float": float, "str": str}
    for info in HARNESS_SETTINGS:
        assert info.keyword in host, info.keyword
        assert host[info.keyword].env_var == info.env_var
        assert host[info.keyword].default == info.default, info.keyword
        expected = tuple if info.type == "names" else kinds[info.type]
        assert type(info.default) is expected, info.keyword
        assert info.meaning.endswith("."), info.keyword
    assert setting_info("events_poll_s").default == 0.5
    assert len({f.name for f in fields(type(HARNESS_SETTINGS[0]))}) == 4
