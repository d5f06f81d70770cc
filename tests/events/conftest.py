"""Fixtures of the event tests: a host with both sample plugins and the recording plugin,
on the test's fresh database (SQLite file or PostgreSQL, see ``plugin_api.testing``)."""

from __future__ import annotations

import pytest

from plugin_api.testing import Host, TesseraHarness

from ._support import FAST, Recorder


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def events_host(tessera: TesseraHarness, recorder: Recorder) -> Host:
    return await tessera.start(plugins=["helpdesk", "billing"], extra=[("lab", recorder)], **FAST)
