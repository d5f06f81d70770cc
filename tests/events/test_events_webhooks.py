"""Webhooks: the sample receiver (sample_plugins/billing/examples/webhook_receiver.py), run as
a real process, verifies every signature and sees every billing event, including those sent
while it was down; forged and stale signatures are refused."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from host.config import Settings
from host.errors import StartupError
from host.events.setup import targets
from host.events.webhooks import sign
from host.graph import build_graph
from host.webhook_settings import parse_webhooks
from plugin_api.testing import TesseraHarness

from ._support import FAST, rows, until

RECEIVER = (
    Path(__file__).resolve().parents[2] / "sample_plugins/billing/examples/webhook_receiver.py"
)
SECRET = "whsec-0123456789abcdef"
INVOICE = "billing.invoice"
USD = {"amount": "5.00", "currency": "USD"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Receiver:
    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log = port, log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(RECEIVER), "--port", str(self.port), "--log", str(self.log)],
            env={**os.environ, "WEBHOOK_SECRET": SECRET},
            stderr=subprocess.PIPE,
        )
        assert self.process.stderr is not None
        assert b"listening" in self.process.stderr.readline()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            assert self.process.stderr is not None
            self.process.stderr.close()
            self.process = None

    def events(self) -> list[dict[str, object]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    running = Receiver(free_port(), tmp_path / "events.jsonl")
    yield running
    running.stop()


async def test_the_receiver_verifies_and_sees_every_billing_event(
    tessera: TesseraHarness, receiver: Receiver
) -> None:
    hooks = parse_webhooks(
        json.dumps(
            [
                {
                    "url": f"http://127.0.0.1:{receiver.port}/",
                    "secret": SECRET,
                    "events": ["billing.*"],
                }
            ]
        )
    )
    settings = {**FAST, "events_max_attempts": 1000}
    host = await tessera.start(plugins=["helpdesk", "billing"], webhooks=hooks, **settings)
    clerk = host.client(actor="carl", roles=["clerk", "accountant"])
    requester = host.client(actor="rita", roles=["requester"])

    async def invoice() -> str:
        result = await clerk.action(f"{INVOICE}.create", inputs={"customer": "c", "amount": USD})
        ticket = await requester.action("helpdesk.ticket.create", inputs={"title": "no hook"})
        assert ticket.status == 200
        return str(result.outputs["id"])

    first = await invoice()  # the receiver is down: the attempts fail and are retried

    async def failed() -> bool:
        found = await rows(host.database_url, "SELECT state FROM tessera_deliveries")
        return [r["state"] for r in found] == ["failed"]

    await until(failed)
    receiver.start()
    second = await invoice()
    for subject in (first, second):
        assert (await clerk.action(f"{INVOICE}.issue", subject=subject)).status == 200
    assert (await clerk.action(f"{INVOICE}.pay", subject=second)).status == 200
    everything = await rows(host.database_url, "SELECT id, action FROM tessera_audit ORDER BY seq")
    audit = [r for r in everything if r["action"].startswith("billing.")]
    assert len(audit) == 5

    async def all_seen() -> bool:
        return {e["id"] for e in receiver.events()} >= {r["id"] for r in audit}

    await until(all_seen)
    events = receiver.events()
    assert {e["id"] for e in events} == {r["id"] for r in audit}  # no helpdesk event
    assert all(e["duplicate"] is False for e in events)
    by_id = {e["id"]: e for e in events}
    attempt = by_id[audit[0]["id"]]["attempt"]
    assert isinstance(attempt, int) and attempt > 1  # sent again until the receiver was up
    assert {e["action"] for e in events} == {f"{INVOICE}.{a}" for a in ("create", "issue", "pay")}
    assert set(events[0]) == {
        "id", "tenantId", "actorId", "action", "entity", "subjectId", "outputs",
        "graphHash", "occurredAt", "attempt", "duplicate",
    }  # fmt: skip

    # Forged and stale signatures are refused; a good one is accepted (and seen as a duplicate).
    body = json.dumps(events[0]).encode()
    url = f"http://127.0.0.1:{receiver.port}/"
    now = int(time.time())
    stale = sign(SECRET, body, now - 3600)
    forged = "t={},v1={}".format(
        now,
        hmac.new(b"wrong-secret-0123456789", f"{now}.".encode() + body, hashlib.sha256).hexdigest(),
    )
    async with httpx.AsyncClient() as client:
        for header, status in (
            (forged, 400),
            (stale, 400),
            ("", 400),
            (sign(SECRET, body, now), 204),
        ):
            answer = await client.post(url, content=body, headers={"Tessera-Signature": header})
            assert answer.status_code == status, header
    await asyncio.sleep(0)
    assert receiver.events()[-1]["duplicate"] is True


def test_webhooks_are_validated_at_startup() -> None:
    def error(raw: str) -> str:
        with pytest.raises(ValueError) as caught:
            Settings.from_env({"TESSERA_WEBHOOKS": raw})
        return str(caught.value)

    assert error("[").startswith("TESSERA_WEBHOOKS: not valid JSON")
    assert error("{}") == "TESSERA_WEBHOOKS: expected a JSON array of {url, secret, events} objects"
    good = {"url": "https://example.com/h", "secret": SECRET, "events": ["billing.*"]}
    assert "url must be an http(s) URL" in error(json.dumps([{**good, "url": "ftp://x"}]))
    assert "at least 16 characters" in error(json.dumps([{**good, "secret": "short"}]))
    assert "not an action FQN" in error(json.dumps([{**good, "events": ["billing.*.x"]}]))
    assert "unknown key(s) retries" in error(json.dumps([{**good, "retries": 3}]))
    assert "two webhooks named" in error(json.dumps([good, good]))
    assert "\n" not in error(json.dumps([{**good, "events": []}]))
    [hook] = Settings.from_env({"TESSERA_WEBHOOKS": json.dumps([good])}).webhooks
    assert hook.wants("billing.invoice.pay") and not hook.wants("billingx.a.b")
    assert SECRET not in repr(hook)  # `tessera config` prints settings

    graph = build_graph(Settings(plugins_only=("helpdesk",)))
    slow = replace(hook, timeout_s=120.0)
    with pytest.raises(StartupError, match="TESSERA_EVENTS_LEASE_S=60 must exceed the timeout"):
        targets(graph, Settings(plugins_only=("helpdesk",), webhooks=(slow,)))
    clash = replace(hook, name="helpdesk.notify_requester")
    with pytest.raises(StartupError, match="already a plugin's subscriber"):
        targets(graph, Settings(plugins_only=("helpdesk",), webhooks=(clash,)))


def test_the_readme_webhook_example_is_valid() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("## Webhooks: telling billing's neighbours") :]
    raw = section.split("TESSERA_WEBHOOKS='", 1)[1].split("'", 1)[0]
    [hook] = parse_webhooks(raw)
    assert hook.wants("billing.charge.create") and not hook.wants("helpdesk.ticket.create")
    assert (
        f"WEBHOOK_SECRET={hook.secret} python {RECEIVER.relative_to(RECEIVER.parents[3])}"
        in section
    )


async def test_webhook_url_query_strings_are_never_shown(
    tessera: TesseraHarness, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    token = "tok-s3cr3t-in-query"
    url = f"http://127.0.0.1:{receiver.port}/hook?token={token}"
    # Signed with another secret: the receiver answers 400, the attempts fail.
    hooks = parse_webhooks(
        json.dumps([{"url": url, "secret": "another-secret-0123456789", "events": ["billing.*"]}])
    )
    receiver.start()
    host = await tessera.start(plugins=["helpdesk", "billing"], webhooks=hooks, **FAST)
    clerk = host.client(actor="carl", roles=["clerk", "accountant"])
    made = await clerk.action(f"{INVOICE}.create", inputs={"customer": "c", "amount": USD})
    assert made.status == 200

    async def failed() -> bool:
        found = await rows(host.database_url, "SELECT * FROM tessera_deliveries")
        return bool(found) and all(r["last_error"] for r in found)

    await until(failed)
    stored = await rows(host.database_url, "SELECT * FROM tessera_deliveries")
    expected = f"webhook:http://127.0.0.1:{receiver.port}/hook?..."
    assert {r["subscriber"] for r in stored} == {expected}
    assert "answered 400" in stored[0]["last_error"]
    assert token not in json.dumps([dict(r) for r in stored], default=str)
    assert expected in caplog.text and token not in caplog.text


def test_webhook_url_credentials_are_refused_in_one_line(tmp_path: Path) -> None:
    hooks = [{"url": "https://hook:pa55w0rd@example.com/h", "secret": SECRET, "events": ["*"]}]
    env = {
        **os.environ,
        "TESSERA_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
        "TESSERA_WEBHOOKS": json.dumps(hooks),
    }
    done = subprocess.run(
        [sys.executable, "-m", "host", "check"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "TESSERA_WEBHOOKS: item 0: url 'https://example.com/h' carries credentials" in (
        done.stderr
    )
    assert "pa55w0rd" not in done.stderr + done.stdout and done.stderr.count("\n") == 1
