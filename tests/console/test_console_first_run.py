"""A calm first run: ``/`` leads to the console (and stays the API's 404 when it is off),
the first start summarises the schema it creates in one line, and the first page explains
acting as someone without showing an error."""

from __future__ import annotations

import logging

import pytest

from plugin_api.testing import SharedHarness, TenantHost, TesseraHarness

from .conftest import CONSOLE, Console

EVOLUTION = "tessera.storage.evolution"


async def test_the_root_leads_to_the_console_when_it_is_on(shared_console: TenantHost) -> None:
    response = await shared_console.app.test_client().get("/")
    assert response.status_code == 302
    assert response.headers["Location"] == f"{CONSOLE}/"


async def test_the_root_stays_the_api_404_when_the_console_is_off(
    tessera_shared: SharedHarness,
) -> None:
    host = await tessera_shared.start(plugins=["helpdesk", "billing"])
    response = await host.app.test_client().get("/")
    assert response.status_code == 404
    assert await response.get_json() == {
        "ok": False,
        "error": {"kind": "NotFound", "message": "No route for GET /"},
    }


async def test_the_first_page_explains_acting_as_someone_without_an_error(
    shared_console: TenantHost,
) -> None:
    page = await Console(shared_console).get("/")
    assert page.status == 200
    assert "<h1>Welcome</h1>" in page.text
    assert "Not acting as anyone yet" in page.text
    assert "No identity" not in page.text and "Missing required header" not in page.text
    assert 'role="alert"' not in page.text


async def test_a_first_start_summarises_the_schema_in_one_line(
    tessera: TesseraHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    host = await tessera.start(plugins=["helpdesk", "billing"])
    assert not [r for r in caplog.records if r.name == EVOLUTION]  # each change at DEBUG
    # The samples declare their read access as meant (writing-plugins.md, "Open on purpose").
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == []
    summary = [r.getMessage() for r in caplog.records if r.getMessage().startswith("schema: ")]
    assert len(summary) == 1, summary
    assert "entity-added" in summary[0] and "index-added" in summary[0]
    await host.stop()

    caplog.clear()  # a start that evolves a prepared database keeps its lines at INFO
    await tessera.start(plugins=None)
    evolved = [r for r in caplog.records if r.name == EVOLUTION]
    assert evolved and {r.levelno for r in evolved} == {logging.INFO}
    assert not [r for r in caplog.records if r.getMessage().startswith("schema: ")]
