"""Shared fixtures. The ``tessera`` harness fixture comes from ``plugin_api.testing``."""

from __future__ import annotations

import pytest

from plugin_api.testing import Host, TesseraHarness


@pytest.fixture
async def host(tessera: TesseraHarness) -> Host:
    """A host with the two sample plugins installed as distributions."""
    return await tessera.start(plugins=["helpdesk", "billing"])
