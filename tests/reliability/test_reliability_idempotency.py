"""Idempotent retries against real Hypercorn workers and the real database.

* Concurrent duplicates: many copies of one request, with one ``Idempotency-Key``, sent at
  once over separate connections to two workers, have exactly one effect, and every copy
  gets the same answer, byte for byte.
* Retry after ``kill -9``: clients keep sending keyed actions; a worker is killed mid-stream
  (twice) and every request whose answer was lost is retried with its key until answered.
  Each key then has exactly one effect: the retry got the stored answer when the first
  attempt had committed, and ran once when it had not.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import httpx
import pytest

from .conftest import HostProcess, audit_rows, identity, list_items, subject

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

TENANT = "idem"
TICKET = "helpdesk.ticket"
ACTOR = identity(TENANT, "bot", ["agent", "requester"])
COPIES = 12
KEYS = 8


async def send(client: httpx.AsyncClient, fqn: str, body: dict[str, Any], key: str) -> Any:
    return await client.post(
        f"/actions/{fqn}", json=body, headers={**ACTOR, "Idempotency-Key": key}
    )


async def copies(base_url: str, fqn: str, body: dict[str, Any], key: str) -> list[Any]:
    """``COPIES`` identical requests at once, each on a connection of its own."""

    async def one() -> Any:
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            return await send(client, fqn, body, key)

    return list(await asyncio.gather(*(one() for _ in range(COPIES))))


async def test_concurrent_duplicates_of_one_key_have_exactly_one_effect(
    start_host: Any, database: str, figures: dict[str, Any]
) -> None:
    host: HostProcess = start_host(workers=2)
    base_url = host.base_url + "/api"
    replayed = 0
    created: list[str] = []
    for n in range(KEYS):
        answers = await copies(
            base_url, f"{TICKET}.create", {"inputs": {"title": f"c{n}"}}, f"c{n}"
        )
        assert {a.status_code for a in answers} == {200}, [a.text for a in answers]
        assert len({a.content for a in answers}) == 1
        replayed += sum(a.headers.get("idempotent-replayed") == "true" for a in answers)
        created.append(answers[0].json()["outputs"]["id"])
    row = created[0]
    for n in range(KEYS):
        body = {"subject": subject(TENANT, TICKET, row), "inputs": {"title": f"e{n}"}}
        answers = await copies(base_url, f"{TICKET}.edit", body, f"e{n}")
        assert {a.status_code for a in answers} == {200}, [a.text for a in answers]
        assert len({a.content for a in answers}) == 1
        replayed += sum(a.headers.get("idempotent-replayed") == "true" for a in answers)
    body = {"subject": subject(TENANT, TICKET, created[1]), "inputs": {}}
    answers = await copies(base_url, f"{TICKET}.start", body, "s")
    assert {a.status_code for a in answers} == {200}, [a.text for a in answers]
    assert len({a.content for a in answers}) == 1

    audit = await audit_rows(database)
    per_action = Counter(record["action"] for record in audit)
    assert per_action == {
        f"{TICKET}.create": KEYS,
        f"{TICKET}.edit": KEYS,
        f"{TICKET}.start": 1,
    }
    titles = Counter(record["inputs"].get("title") for record in audit)
    assert all(count == 1 for title, count in titles.items() if title is not None), titles
    async with host.client() as client:
        assert len(await list_items(client, f"{TICKET}.detail", TENANT)) == KEYS
    figures.update(
        keys=2 * KEYS + 1,
        requests=(2 * KEYS + 1) * COPIES,
        replayed_answers=replayed,
        audit_records=len(audit),
    )


class Stream:
    """Keyed creates; a lost answer is retried with the same key until one arrives."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.answered: dict[str, str] = {}  # key -> id of the created ticket
        self.retried: set[str] = set()
        self.replayed_after_retry = 0
        self.transport_errors = 0

    async def run_client(self, seed: int, base_url: str) -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=20) as client:
            n = 0
            while not self.stop.is_set():
                key = f"s{seed}-{n}"
                n += 1
                body = {"subject": None, "inputs": {"title": key}}
                while True:
                    try:
                        response = await send(client, f"{TICKET}.create", body, key)
                    except httpx.HTTPError:
                        # The outcome is unknown: retry with the same key.
                        self.transport_errors += 1
                        self.retried.add(key)
                        await asyncio.sleep(0.1)
                        continue
                    assert response.status_code == 200, response.text
                    if key in self.retried and response.headers.get("idempotent-replayed"):
                        self.replayed_after_retry += 1
                    self.answered[key] = response.json()["outputs"]["id"]
                    break


async def test_a_retry_after_kill_9_gets_the_stored_answer_or_runs_once(
    start_host: Any, database: str, figures: dict[str, Any]
) -> None:
    host: HostProcess = start_host(workers=2)
    stream = Stream()
    clients = [
        asyncio.create_task(stream.run_client(seed, host.base_url + "/api")) for seed in range(6)
    ]
    killed = 0
    try:
        await asyncio.sleep(1.5)
        for _ in range(2):
            host.kill_worker()
            killed += 1
            if not await asyncio.to_thread(host.wait_exit, 20):
                await asyncio.to_thread(host.stop)
            started = time.monotonic()
            await asyncio.to_thread(host.start)
            assert time.monotonic() - started < 60
            await asyncio.sleep(1.5)
    finally:
        stream.stop.set()
        await asyncio.wait_for(asyncio.gather(*clients), 120)

    audit = await audit_rows(database)
    creates = Counter(record["inputs"]["title"] for record in audit)
    assert all(count == 1 for count in creates.values()), [k for k, c in creates.items() if c > 1]
    assert set(creates) == set(stream.answered)
    async with host.client() as client:
        rows = {r["id"]: r["title"] for r in await list_items(client, f"{TICKET}.detail", TENANT)}
    assert {key: rows.get(row) for key, row in stream.answered.items()} == {
        key: key for key in stream.answered
    }
    assert stream.retried, "no request lost its answer: the kill hit nothing in flight"
    figures.update(
        faults_injected=killed,
        keys=len(stream.answered),
        transport_errors=stream.transport_errors,
        keys_retried=len(stream.retried),
        retries_answered_from_store=stream.replayed_after_retry,
        retries_run_fresh=len(stream.retried) - stream.replayed_after_retry,
        duplicates=sum(count - 1 for count in creates.values()),
    )
