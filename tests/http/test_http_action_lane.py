"""The action lane (host/http/action_lane.py) answers what Quart's action route answers, byte
for byte: each request is sent plainly (the lane takes it) and with ``acceptSchemaVersions=
1.0.0`` (the same request for v0.1's answer, which the lane leaves to Quart's route), and the
two answers' status, header lines and bodies are compared. Quart's ``request_started`` signal
tells which of the two served each request, so the comparison cannot be of one path with
itself. On the session's shared host, in a tenant of the test's own; the same comparison over
a real socket, with a ``Content-Length``, is in tests/server/test_server_protocol.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from quart import Quart, request, request_started

from plugin_api.testing import TenantHost

ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
QUART = "?acceptSchemaVersions=1.0.0"
"""What sends a request to Quart's route: a query string (the answer is v0.1's either way)."""


@contextmanager
def served_by_quart(app: Quart) -> Iterator[list[str]]:
    """The paths of the requests Quart's own machinery served while the block ran."""
    seen: list[str] = []

    async def started(sender: Quart, **_: Any) -> None:
        seen.append(request.full_path.rstrip("?"))

    request_started.connect(started, app)
    try:
        yield seen
    finally:
        request_started.disconnect(started, app)


Answer = tuple[int, list[tuple[str, str]], bytes]


async def send(
    host: TenantHost, path: str, body: bytes, headers: Sequence[tuple[str, str]]
) -> Answer:
    client = host.app.test_client()
    response = await client.post(path, headers=list(headers), data=body)
    lines = [(k, v) for k, v in response.headers.items() if k.lower() != "x-request-id"]
    return response.status_code, lines, await response.get_data()


def same_shape(answer: Answer) -> Answer:
    """``answer`` with the ids and times of its body replaced (two creates make different
    ones)."""
    status, lines, body = answer
    return status, lines, TIMESTAMP.sub("<time>", ULID.sub("<ulid>", body.decode())).encode()


async def both(
    host: TenantHost,
    action: str,
    body: bytes,
    headers: Sequence[tuple[str, str]],
    *,
    fresh: bool = False,
) -> tuple[Answer, Answer]:
    """(the lane's answer, Quart's) to the same request; ``fresh``: ids and times in the
    bodies are masked (each request made its own)."""
    path = f"/api/actions/{action}"
    with served_by_quart(host.app) as seen:
        lane = await send(host, path, body, headers)
        route = await send(host, path + QUART, body, headers)
    assert seen == [path + QUART], seen  # the lane took the first, Quart the second
    return (same_shape(lane), same_shape(route)) if fresh else (lane, route)


def identity(host: TenantHost, actor: str, roles: str) -> list[tuple[str, str]]:
    return [
        ("X-Tenant-ID", host.tenant),
        ("X-Actor-Id", actor),
        ("X-Actor-Roles", roles),
        ("Content-Type", "application/json"),
    ]


def create_body(title: str = "Printer on fire") -> bytes:
    return json.dumps({"subject": None, "inputs": {"title": title}}).encode()


def start_body(host: TenantHost, ticket: str) -> bytes:
    subject = {"tenantId": host.tenant, "entityFqn": "helpdesk.ticket", "identityHandle": ticket}
    return json.dumps({"subject": subject, "inputs": {}}).encode()


async def test_writes_and_their_answers_are_quarts(samples: TenantHost) -> None:
    rita = identity(samples, "rita", "requester")
    lane, route = await both(samples, "helpdesk.ticket.create", create_body(), rita, fresh=True)
    assert lane[0] == 200 and json.loads(lane[2])["outputs"]["state"] == "open"
    assert lane == route

    tickets = [
        (
            await samples.client(actor="rita", roles=["requester"]).action(
                "helpdesk.ticket.create", inputs={"title": f"t{n}"}
            )
        ).outputs["id"]
        for n in range(2)
    ]
    alice = identity(samples, "alice", "agent")
    path = "/api/actions/helpdesk.ticket.start"
    with served_by_quart(samples.app) as seen:
        lane = await send(samples, path, start_body(samples, tickets[0]), alice)
        route = await send(samples, path + QUART, start_body(samples, tickets[1]), alice)
    assert seen == [path + QUART]
    assert lane[0] == 200, lane
    assert json.loads(lane[2])["outputs"]["state"] == "in_progress"
    assert same_shape(lane) == same_shape(route)


REFUSALS = (
    "unknown action",
    "not permitted",
    "not JSON",
    "not an object",
    "empty body",
    "no media type",
    "wrong media type",
    "invalid input",
    "unknown subject",
    "bad tenant",
    "body too large",
)


def _refusal(host: TenantHost, name: str) -> tuple[str, bytes, list[tuple[str, str]]]:
    """(action, body, header lines) of the refused request ``name``."""
    rita = identity(host, "rita", "requester")
    create = "helpdesk.ticket.create"
    return {
        "unknown action": ("helpdesk.ticket.nothing", create_body(), rita),
        "not permitted": ("helpdesk.ticket.start", b'{"subject": null}', rita),
        "not JSON": (create, b"{nope", rita),
        "not an object": (create, b"[1, 2]", rita),
        "empty body": (create, b"", rita),
        "no media type": (create, create_body(), rita[:3]),
        "wrong media type": (create, create_body(), [*rita[:3], ("Content-Type", "text/plain")]),
        "invalid input": (create, b'{"inputs": {"title": 5}}', rita),
        "unknown subject": (
            "helpdesk.ticket.start",
            start_body(host, "01J00000000000000000000000"),
            identity(host, "alice", "agent"),
        ),
        "bad tenant": (create, create_body(), [("X-Tenant-ID", ""), *rita[1:]]),
        # No Content-Length through the test client: the lane counts the bytes as Quart does.
        "body too large": (create, b" " * (1024 * 1024 + 1), rita),
    }[name]


@pytest.mark.parametrize("name", REFUSALS)
async def test_refusals_are_quarts_to_the_byte(samples: TenantHost, name: str) -> None:
    action, body, headers = _refusal(samples, name)
    lane, route = await both(samples, action, body, headers)
    assert lane[0] >= 400, lane
    assert lane == route


async def test_idempotent_replays_are_quarts(samples: TenantHost) -> None:
    keyed = [*identity(samples, "rita", "requester"), ("Idempotency-Key", "lane-1")]
    body = create_body("once")
    path = "/api/actions/helpdesk.ticket.create"
    with served_by_quart(samples.app) as seen:
        first = await send(samples, path, body, keyed)  # the lane runs it
        replayed = [await send(samples, p, body, keyed) for p in (path, path + QUART, path)]
    assert seen == [path + QUART]
    assert first[0] == 200 and ("idempotent-replayed", "true") not in first[1]
    lane, route, lane_again = replayed
    assert ("idempotent-replayed", "true") in lane[1]
    assert lane == route == lane_again
    assert lane[2] == first[2]  # the one write's answer, replayed


def test_the_lane_passes_by_no_hook_of_the_app(samples: TenantHost) -> None:
    """The lane answers without Quart's request hooks: the app may have none but the body
    limit (which the lane applies itself). A new hook must be applied by the lane too, or
    the comparisons above miss what it adds."""
    app = samples.app
    before = [f.__name__ for funcs in app.before_request_funcs.values() for f in funcs]
    after = [f.__name__ for funcs in app.after_request_funcs.values() for f in funcs]
    preprocessors = [f for funcs in app.url_value_preprocessors.values() for f in funcs]
    assert (before, after, preprocessors) == (["limit_body"], [], [])
