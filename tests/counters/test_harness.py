"""The plugin test harness (plugin API 1.8), on both backends: waiting for deliveries, a
row's audit trail, and the settings it takes described in ``plugin_api.settings`` (checked
against the host's). A plugin's migration from version 1 to 2 in one test file:
``sample_plugins/helpdesk/tests/test_harness_examples.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields

import pytest

from host.config import SETTINGS
from plugin_api import (
    EventContext,
    Subscriber,
    hookimpl,
)
from plugin_api.settings import HARNESS_SETTINGS, setting_info
from plugin_api.testing import TesseraHarness

from .conftest import new_project
from .tracker import ISSUE, PROJECT, TrackerPlugin


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
