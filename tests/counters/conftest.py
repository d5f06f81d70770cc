"""A host with the in-test ``tracker`` plugin (counters, state events) on the test's
database (SQLite file or PostgreSQL, see ``plugin_api.testing``)."""

from __future__ import annotations

import pytest

from plugin_api.testing import Client, Host, TesseraHarness

from .tracker import PROJECT, TrackerPlugin


@pytest.fixture
def tracker() -> TrackerPlugin:
    return TrackerPlugin()


@pytest.fixture
async def host(tessera: TesseraHarness, tracker: TrackerPlugin) -> Host:
    return await tessera.start(
        plugins=[], extra=[("tracker", tracker)], events_poll_s=0.05, events_backoff_s=0.05
    )


@pytest.fixture
def client(host: Host) -> Client:
    return host.client(tenant="t1", actor="ann")


async def new_project(client: Client, name: str = "Apollo", **inputs: object) -> str:
    result = await client.action(f"{PROJECT}.create", inputs={"name": name, **inputs})
    return str(result.outputs["id"])
