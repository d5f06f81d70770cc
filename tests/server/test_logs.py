"""Logs of a real Hypercorn process: one format for Hypercorn's and Tessera's lines, text or
JSON (``TESSERA_LOG_FORMAT``), the access line's fields, inbound and generated request ids,
and the startup and shutdown lines."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_server

pytestmark = pytest.mark.slow

ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
TEXT_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} \[\d+\] \[[A-Z]+\] [\w.]+: .+")
IDENTITY = {"X-Tenant-ID": "acme", "X-Actor-Id": "bob", "X-Actor-Roles": "requester"}


def exercise(
    tmp_path: Path, reset_database: str, log_format: str
) -> tuple[list[str], dict[str, Any]]:
    env = {"TESSERA_LOG_FORMAT": log_format, "TESSERA_ACCESS_LOG": "1"}
    ids: dict[str, Any] = {}
    with run_server(tmp_path, env=env, database=reset_database) as server, server.client() as http:
        body = b'{"subject": null, "inputs": {"title": "logged"}}'
        headers = {**IDENTITY, "Content-Type": "application/json", "X-Request-Id": "gw-1.a:b"}
        created = http.post("/api/actions/helpdesk.ticket.create", content=body, headers=headers)
        assert created.status_code == 200
        ids["inbound"] = created.headers["x-request-id"]
        ids["body"] = (len(body), len(created.content))
        bad_ids: list[bytes] = [b"has space", b"x" * 129, "caf\u00e9".encode()]
        for bad in bad_ids:
            answer = http.get("/api/_health", headers=[(b"X-Request-Id", bad)])
            ids.setdefault("replaced", []).append(answer.headers["x-request-id"])
        ids["generated"] = http.get("/api/_health").headers["x-request-id"]
        server.stop()
    return server.log.read_text().splitlines(), ids


def test_json_logs_one_object_per_line_for_every_logger(
    tmp_path: Path, reset_database: str
) -> None:
    lines, ids = exercise(tmp_path, reset_database, "json")
    records = [json.loads(line) for line in lines]  # every line is a JSON object
    assert all({"time", "level", "logger", "pid", "message"} <= set(r) for r in records)
    loggers = {r["logger"] for r in records}
    assert {"hypercorn.error", "tessera.service", "tessera.access"} <= loggers, loggers

    started = next(r for r in records if r.get("event") == "started")
    assert len(started["graph_hash"]) == 64 and started["version"]
    assert started["dialect"] in {"sqlite", "postgresql"}
    assert started["plugins"]["helpdesk"] and started["plugins"]["billing"]
    assert any(r.get("event") == "stopped" for r in records)

    access = [r for r in records if r["logger"] == "tessera.access"]
    action = next(r for r in access if r["method"] == "POST")
    assert action["request_id"] == ids["inbound"] == "gw-1.a:b"
    assert (action["status"], action["tenant"], action["actor"]) == (200, "acme", "bob")
    assert action["path"] == "/api/actions/helpdesk.ticket.create"
    assert (action["request_bytes"], action["response_bytes"]) == ids["body"]
    assert isinstance(action["duration_ms"], float) and action["incomplete"] is False
    # A malformed or over-long inbound id is not used: a new one is made and echoed.
    for replaced in [*ids["replaced"], ids["generated"]]:
        assert ULID.fullmatch(replaced), replaced
        assert any(r["request_id"] == replaced for r in access)


def test_text_logs_share_one_format(tmp_path: Path, reset_database: str) -> None:
    lines, _ = exercise(tmp_path, reset_database, "text")
    assert all(TEXT_LINE.fullmatch(line) for line in lines), lines
    assert any("hypercorn.error: Running on" in line for line in lines)
    assert any("tessera.service: started: tessera " in line for line in lines)
    assert any("tessera.service: stopped: tessera " in line for line in lines)
    post = next(line for line in lines if "POST /api/actions" in line)
    assert "tenant=acme actor=bob status=200" in post and "id=gw-1.a:b" in post, post
