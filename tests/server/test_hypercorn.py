"""End to end: real Hypercorn processes serving the sample plugins over loopback HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from .conftest import Responses, run_server

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


@pytest.mark.parametrize(
    "identity",
    [
        "X-Actor-Roles: agent\r\n",  # no X-Tenant-ID
        "X-Tenant-ID: t1\r\nX-Actor-Id: a\r\nX-Actor-Id: b\r\n",  # duplicated actor
    ],
)
def test_a_refused_action_keeps_the_connection_usable(
    tmp_path: Path, reset_database: str, identity: str
) -> None:
    """A request refused for its headers is answered after its body has arrived, so the
    keep-alive connection serves the next request (it used to be dropped when the answer
    went out before the body came in)."""
    body = json.dumps({"subject": None, "inputs": {"title": "x"}}).encode()
    head = (
        "POST /api/actions/helpdesk.ticket.create HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\n{identity}Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with run_server(tmp_path, database=reset_database) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(head)
            time.sleep(0.5)  # room for an early answer: the body is not there yet
            sock.sendall(body + b"GET /api/_health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            responses = Responses(sock)
            status, _, refused = responses.next()
            assert status == 400, refused
            assert json.loads(refused)["error"]["kind"] == "BadRequest"
            status, _, health = responses.next()
            assert status == 200, "the connection was closed after the refused request"
            assert json.loads(health)["ok"] is True


@pytest.mark.parametrize(
    ("path", "length", "status"),
    [
        ("/api/nowhere", 20, 404),  # unknown route
        ("/api/_health", 20, 405),  # wrong method
        ("/api/actions/helpdesk.ticket.create", 2_000_000, 413),  # announced too large
    ],
)
def test_an_answer_before_the_body_says_connection_close(
    tmp_path: Path, reset_database: str, path: str, length: int, status: int
) -> None:
    """Answered without reading the body, the server cannot reuse the connection: the
    response says ``Connection: close`` (a client then opens a new one) instead of the
    connection being dropped silently under the client's next request."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tenant-ID: t1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()
    with run_server(tmp_path, database=reset_database) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(head)  # and never the body
            received = b""
            while chunk := sock.recv(65536):  # the server closes after the answer
                received += chunk
        answer, _, body = received.partition(b"\r\n\r\n")
        lines = answer.decode("latin-1").split("\r\n")
        assert int(lines[0].split()[1]) == status, received
        headers = {
            k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])
        }
        assert headers.get("connection", "").lower() == "close", headers
        assert headers["access-control-allow-origin"] == "*"
        assert json.loads(body)["ok"] is False

        # A request whose body was read keeps its keep-alive connection.
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(b"GET /api/_health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 2)
            responses = Responses(sock)
            assert responses.next()[0] == 200
            assert responses.next()[0] == 200


def test_bad_configuration_refuses_to_start(tmp_path: Path) -> None:
    with (
        pytest.raises(AssertionError, match="unsupported scheme"),
        run_server(tmp_path, database="mysql://localhost/x"),
    ):
        pass


def _create_request(title: str) -> tuple[bytes, bytes]:
    """The head and body of a ticket create, to be sent in parts on a raw socket."""
    body = json.dumps({"subject": None, "inputs": {"title": title}}).encode()
    head = (
        "POST /api/actions/helpdesk.ticket.create HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nX-Tenant-ID: t1\r\nX-Actor-Id: alice\r\n"
        f"X-Actor-Roles: requester\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head, body


def test_a_response_after_shutdown_began_says_connection_close(
    tmp_path: Path, reset_database: str
) -> None:
    """A request in flight when the server is told to stop is finished, and its response
    says ``Connection: close``: Hypercorn closes the connection right after it, and a
    keep-alive client that was not told would send its next request into the closing
    socket. A response before the stop keeps the connection open."""
    head, body = _create_request("late")
    with run_server(tmp_path, database=reset_database) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(head + body)
            responses = Responses(sock)
            status, headers, before = responses.next()
            assert status == 200, before
            assert "connection" not in headers

            sock.sendall(head + body[:10])  # in flight: the app waits for the rest
            time.sleep(0.3)
            server.process.terminate()  # SIGTERM: Hypercorn's graceful stop
            time.sleep(0.6)  # the worker polls its stop event every 0.1 s
            sock.sendall(body[10:])
            status, headers, after = responses.next()
            assert status == 200, after
            assert json.loads(after)["outputs"]["title"] == "late"
            assert headers.get("connection") == "close"
            assert sock.recv(1) == b"", "the server closes the connection after it"
        server.process.wait(15)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_sigterm_to_every_process_stops_gracefully(tmp_path: Path, reset_database: str) -> None:
    """``KillMode=control-group`` (systemd's default) sends SIGTERM to the master and every
    worker at once. Hypercorn's workers leave SIGTERM at its default, so they used to die
    mid-request; a Tessera worker turns it into the graceful stop: the request in flight is
    answered and the server exits 0."""
    head, body = _create_request("in flight")
    with run_server(tmp_path, database=reset_database, workers=2) as server:
        master = server.process.pid
        host, port = server.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(head + body[:10])
            time.sleep(0.3)
            for pid in [master, *_children(master)]:
                os.kill(pid, signal.SIGTERM)
            time.sleep(0.6)
            sock.sendall(body[10:])
            status, headers, answer = Responses(sock).next()
            assert status == 200, answer
            assert json.loads(answer)["outputs"]["title"] == "in flight"
            assert headers.get("connection") == "close"
        assert server.process.wait(15) == 0, server.log.read_text()
