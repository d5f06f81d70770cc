"""End to end: real Hypercorn processes serving the sample plugins over loopback HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import run_server

pytestmark = pytest.mark.slow

AGENT = {"X-Tenant-ID": "t1", "X-Actor-Id": "alice", "X-Actor-Roles": "agent"}


def test_real_server_round_trip(tmp_path: Path, reset_database: str) -> None:
    with run_server(tmp_path, database=reset_database) as server, server.client() as http:
        health = http.get("/api/_health")
        assert health.status_code == 200 and health.json()["ok"] is True
        assert health.headers["access-control-allow-origin"] == "*"

        created = http.post(
            "/api/actions/helpdesk.ticket.create",
            json={"subject": None, "inputs": {"title": "Printer on fire"}},
            headers=AGENT,
        )
        assert created.status_code == 200, created.text
        ticket = created.json()["outputs"]["id"]

        queue = http.get("/api/projections/helpdesk.ticket.queue", headers=AGENT)
        assert queue.status_code == 200
        assert [item["id"] for item in queue.json()["data"]["items"]] == [ticket]

        preflight = http.options("/api/actions/helpdesk.ticket.create")
        assert preflight.status_code == 204 and preflight.content == b""
        assert preflight.headers["access-control-max-age"] == "600"

        error = http.post("/api/actions/helpdesk.ticket.start", json={"inputs": {}}, headers=AGENT)
        assert error.status_code == 400
        assert error.json()["error"]["kind"] == "BadRequest"
        assert error.headers["content-type"].startswith("application/json")
        assert server.stop() < 10


def test_two_processes_report_the_same_graph_hash(tmp_path: Path, reset_database: str) -> None:
    with (
        run_server(tmp_path, database=reset_database) as first,
        run_server(tmp_path, database=reset_database) as second,
        first.client() as a,
        second.client() as b,
    ):
        hash_a = a.get("/api/_health").json()["graphHash"]
        hash_b = b.get("/api/_health").json()["graphHash"]
        assert hash_a == hash_b


def test_bad_configuration_refuses_to_start(tmp_path: Path) -> None:
    with (
        pytest.raises(AssertionError, match="unsupported scheme"),
        run_server(tmp_path, database="mysql://localhost/x"),
    ):
        pass
