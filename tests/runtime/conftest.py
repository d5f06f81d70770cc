"""Fixtures of the runtime tests: hosts on the test's fresh database (SQLite file or
PostgreSQL, see ``plugin_api.testing``)."""

from __future__ import annotations

import pytest

from plugin_api.testing import Host, TesseraHarness

from ._support import LabPlugin


@pytest.fixture
def lab() -> LabPlugin:
    """The in-test plugin (its policy and effect are set by the test)."""
    return LabPlugin()


@pytest.fixture
async def lab_host(tessera: TesseraHarness, lab: LabPlugin) -> Host:
    """A host with both sample plugins and the in-test ``lab`` plugin."""
    return await tessera.start(plugins=["helpdesk", "billing"], extra=[("lab", lab)])
