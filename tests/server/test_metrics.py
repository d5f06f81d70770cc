"""Prometheus metrics (``TESSERA_METRICS=1``) of two Hypercorn workers add up."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from .conftest import run_server

pytestmark = pytest.mark.slow

IDENTITY = {"X-Tenant-ID": "m", "X-Actor-Id": "bob", "X-Actor-Roles": "requester"}


def sample(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        match = re.fullmatch(rf"{name}(?:\{{(.*)\}})? (\S+)", line)
        if match is None:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match.group(2))
    return total


def test_metrics_of_two_workers_add_up(tmp_path: Path, reset_database: str) -> None:
    directory = tmp_path / "prom"
    env = {"TESSERA_METRICS": "1", "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    with run_server(tmp_path, workers=2, env=env, database=reset_database) as server:
        pids: set[str] = set()
        health = 40
        for _ in range(health):  # a new connection each time: both workers answer
            assert httpx.get(f"{server.base_url}/api/_health", timeout=10).status_code == 200
        with server.client() as http:
            url = "/api/actions/helpdesk.ticket.create"
            for n in range(3):
                ok = http.post(url, json={"inputs": {"title": f"t{n}"}}, headers=IDENTITY)
                assert ok.status_code == 200
            # Resolving a ticket is an event for helpdesk.notify_requester.
            ticket = {
                "entity": "helpdesk.ticket",
                "tenantId": "m",
                "identityHandle": ok.json()["outputs"]["id"],
            }
            for step in ("start", "resolve"):
                done = http.post(
                    f"/api/actions/helpdesk.ticket.{step}",
                    json={"subject": ticket, "inputs": {}},
                    headers={**IDENTITY, "X-Actor-Roles": "agent"},
                )
                assert done.status_code == 200, done.text
            # A ticket due in a second: the helpdesk's overdue timer fires (issue 41).
            soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2))
            due = http.post(
                url, json={"inputs": {"title": "due", "due_at": soon}}, headers=IDENTITY
            )
            assert due.status_code == 200, due.text
            refused = http.post(url, json={"inputs": {}}, headers=IDENTITY)
            assert refused.status_code == 400
            unknown = http.post("/api/actions/no.such.thing", json={}, headers=IDENTITY)
            assert unknown.status_code == 404
        pids = {p.stem.rsplit("_", 1)[1] for p in directory.glob("counter_*.db")}
        notify = {"subscriber": "helpdesk.notify_requester"}
        deadline = time.monotonic() + 30
        while True:  # the event is delivered after the commit, by either worker
            scraped = httpx.get(f"{server.base_url}/metrics", timeout=10)
            delivered = sample(scraped.text, "tessera_event_deliveries_total", **notify)
            fired = sample(scraped.text, "tessera_timer_firings_total", outcome="fired")
            if (delivered and fired) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    text = scraped.text
    assert len(pids) == 2, pids  # both workers counted requests
    # The readiness probes of run_server count too: at least the 40 sent here.
    assert sample(text, "tessera_http_requests_total", route="_health", status="200") >= health
    create = "helpdesk.ticket.create"
    assert sample(text, "tessera_http_requests_total", action=create, status="200") == 4
    assert sample(text, "tessera_action_outcomes_total", action=create, outcome="ok") == 4
    assert sample(text, "tessera_action_outcomes_total", action=create, outcome="BadRequest") == 1
    assert sample(text, "tessera_action_outcomes_total", action="unknown") == 1
    assert sample(text, "tessera_db_transaction_seconds_count") >= 3
    assert sample(text, "tessera_http_request_duration_seconds_count", route="actions") == 8
    assert "tessera_db_connections_in_use" in text
    assert sample(text, "tessera_event_deliveries_total", **notify, outcome="delivered") == 1
    assert sample(text, "tessera_event_delivery_lag_seconds_count", **notify) == 1
    assert sample(text, "tessera_timer_firings_total", outcome="fired") == 1
    assert sample(text, "tessera_timer_lag_seconds_count") == 1
    assert "tessera_timers_pending" in text


def test_metrics_are_off_by_default(tmp_path: Path, reset_database: str) -> None:
    with run_server(tmp_path, database=reset_database) as server:
        assert httpx.get(f"{server.base_url}/metrics", timeout=10).status_code == 404


def test_token_mode_counts_refusals_by_reason(tmp_path: Path, reset_database: str) -> None:
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "issuer.pem").write_bytes(pem)
    env = {
        "TESSERA_METRICS": "1",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "prom"),
        "TESSERA_AUTH_MODE": "token",
        "TESSERA_AUTH_KEY_FILE": str(tmp_path / "issuer.pem"),
        "TESSERA_AUTH_ISSUER": "https://issuer.test/",
        "TESSERA_AUTH_AUDIENCE": "api",
    }
    now = int(time.time())
    claims: dict[str, object] = {"iss": "https://issuer.test/", "aud": "api", "sub": "bob"}
    claims["tenant_id"] = "m"
    claims.update({"roles": ["requester"], "exp": now + 300})

    def token(**changes: object) -> dict[str, str]:
        return {"Authorization": "Bearer " + jwt.encode({**claims, **changes}, key, "RS256")}

    url = "/api/actions/helpdesk.ticket.create"
    body = {"inputs": {"title": "t"}}
    with run_server(tmp_path, env=env, database=reset_database) as server:
        with server.client() as http:
            assert http.post(url, json=body, headers=token()).status_code == 200
            assert http.post(url, json=body, headers=IDENTITY).status_code == 401
            for _ in range(2):
                assert http.post(url, json=body, headers=token(exp=now - 60)).status_code == 401
            assert http.post(url, json=body, headers=token(aud="x")).status_code == 401
            forged = {**token(), "X-Actor-Roles": "agent"}
            assert http.post(url, json=body, headers=forged).status_code == 400
        text = httpx.get(f"{server.base_url}/metrics", timeout=10).text
    counts = {
        reason: sample(text, "tessera_auth_failures_total", reason=reason)
        for reason in ("missing", "expired", "audience", "identity_headers", "signature")
    }
    assert counts == {
        "missing": 1,
        "expired": 2,
        "audience": 1,
        "identity_headers": 1,
        "signature": 0,
    }
