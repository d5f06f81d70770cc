"""Fixtures of the entity-rules tests: the tracker story's two plugins on the test's fresh
database (SQLite file or PostgreSQL, see ``plugin_api.testing``)."""

from __future__ import annotations

from typing import Any

import pytest

from plugin_api.testing import Host, SharedHarness, TenantHost, TesseraHarness

from ._purchasing import EXTRA
from ._tracker import Reports, Tracker

FAST: dict[str, Any] = {
    "events_poll_s": 0.02,
    "events_backoff_s": 0.01,
    "events_backoff_max_s": 0.05,
}


@pytest.fixture
def tracker() -> Tracker:
    return Tracker()


@pytest.fixture
def reports() -> Reports:
    return Reports()


@pytest.fixture
async def rules_host(tessera: TesseraHarness, tracker: Tracker, reports: Reports) -> Host:
    return await tessera.start(
        plugins=[], extra=[("tracker", tracker), ("reports", reports)], **FAST
    )


@pytest.fixture
async def purchasing_host(tessera_shared: SharedHarness) -> TenantHost:
    """The samples (with billing's helpdesk part) and the purchasing and desk plugins
    (``_purchasing.py``, issue 38) on the session's shared host, in a tenant of the test's own."""
    return await tessera_shared.start(
        plugins=["helpdesk", "billing", "billing_helpdesk"], extra=EXTRA
    )
