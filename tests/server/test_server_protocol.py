"""What Hypercorn does on the service port (issue 20), through real processes and raw sockets:
HTTP/1.1 only unless ``TESSERA_HTTP2`` is set, no ``Upgrade``, no ``Server`` banner, and no
``100 Continue`` for a body announced over the limit."""

from __future__ import annotations

import json
import re
import shutil
import socket
import ssl
import subprocess
from pathlib import Path

import h2.connection
import h2.events
import pytest

from .conftest import Responses, Server, run_server

# The protocol on the service port, not storage: a SQLite file of the test's own on every
# backend, so the module runs once, in the SQLite environments.
pytestmark = [pytest.mark.slow, pytest.mark.backend_neutral]


def own_database(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'protocol.db'}"


HEALTH = b"GET /api/_health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
H2C_UPGRADE = (
    HEALTH + b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
    b"HTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"
)
WEBSOCKET_UPGRADE = (
    HEALTH + b"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
)
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS_FRAME = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def connect(server: Server) -> socket.socket:
    host, port = server.base_url.split("://")[1].split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def read_until_closed(sock: socket.socket) -> bytes:
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_upgrade_is_never_honoured_and_http2_is_off(tmp_path: Path) -> None:
    with run_server(tmp_path, database=own_database(tmp_path)) as server:
        # Upgrade: h2c and Upgrade: websocket are served as the HTTP/1.1 requests they are,
        # and the connection stays HTTP/1.1 for the next request.
        for upgrade in (H2C_UPGRADE, WEBSOCKET_UPGRADE):
            with connect(server) as sock:
                sock.sendall(upgrade + HEALTH + b"\r\n")
                responses = Responses(sock)
                for _ in range(2):
                    status, headers, body = responses.next()
                    assert status == 200, (upgrade, status)
                    assert "upgrade" not in headers
                    assert "server" not in headers
                    assert headers["access-control-allow-origin"] == "*"
                    assert headers["cache-control"] == "no-store"
                    assert headers["x-content-type-options"] == "nosniff"
                    assert json.loads(body)["ok"] is True

        # Prior-knowledge HTTP/2: refused in HTTP/1.1, connection closed, no SETTINGS frame.
        with connect(server) as sock:
            sock.sendall(PREFACE + EMPTY_SETTINGS_FRAME)
            received = read_until_closed(sock)
        assert received.startswith(b"HTTP/1.1 505 "), received
        assert b"\r\nserver:" not in received.lower()

        # A request line Hypercorn refuses itself carries no banner either.
        with connect(server) as sock:
            sock.sendall(b"NOT A REQUEST\r\n\r\n")
            received = read_until_closed(sock)
        assert received.startswith(b"HTTP/1.1 400 "), received
        assert b"\r\nserver:" not in received.lower()


def h2_get(server: Server, path: str) -> tuple[int, dict[str, str], bytes]:
    """One GET over cleartext HTTP/2 with prior knowledge."""
    connection = h2.connection.H2Connection()
    connection.initiate_connection()
    stream = connection.get_next_available_stream_id()
    connection.send_headers(
        stream,
        [(":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "127.0.0.1")],
        end_stream=True,
    )
    headers: dict[str, str] = {}
    body = b""
    with connect(server) as sock:
        sock.sendall(connection.data_to_send())
        ended = False
        while not ended:
            data = sock.recv(65536)
            assert data, "closed before the end of the stream"
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    headers = {k.decode(): v.decode() for k, v in event.headers}
                elif isinstance(event, h2.events.DataReceived):
                    body += event.data
                    connection.acknowledge_received_data(len(event.data), event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    ended = True
            sock.sendall(connection.data_to_send())
    return int(headers.pop(":status")), headers, body


def test_http2_when_configured_still_without_upgrade(tmp_path: Path) -> None:
    with run_server(
        tmp_path, database=own_database(tmp_path), env={"TESSERA_HTTP2": "true"}
    ) as server:
        status, headers, body = h2_get(server, "/api/_health")
        assert status == 200 and json.loads(body)["ok"] is True
        assert headers["access-control-allow-origin"] == "*"
        assert headers["cache-control"] == "no-store"
        assert "server" not in headers
        with connect(server) as sock:
            sock.sendall(H2C_UPGRADE)
            status, _, body = Responses(sock).next()
        assert status == 200, body


def test_an_oversized_body_gets_413_before_any_100_continue(tmp_path: Path) -> None:
    action = (
        b"POST /api/actions/helpdesk.ticket.create HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"X-Tenant-ID: t1\r\nX-Actor-Id: rita\r\nX-Actor-Roles: requester\r\n"
        b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
    )
    env = {"TESSERA_MAX_BODY_BYTES": "1000"}
    with run_server(tmp_path, database=own_database(tmp_path), env=env) as server:
        with connect(server) as sock:
            sock.sendall(action + b"Content-Length: 1001\r\n\r\n")  # and never the body
            received = read_until_closed(sock)
        assert received.startswith(b"HTTP/1.1 413 "), received
        assert b" 100 " not in received.split(b"\r\n", 1)[0]
        head, _, body = received.partition(b"\r\n\r\n")
        assert b"\r\nconnection: close" in head.lower()
        assert b"\r\naccess-control-allow-origin: *" in head.lower()
        assert json.loads(body)["error"]["kind"] == "BadRequest"

        # Within the limit the client is invited, sends its body and gets its answer.
        payload = json.dumps({"subject": None, "inputs": {"title": "x"}}).encode()
        with connect(server) as sock:
            sock.sendall(action + f"Content-Length: {len(payload)}\r\n\r\n".encode())
            interim = b""
            while b"\r\n\r\n" not in interim:
                interim += sock.recv(65536)
            assert interim.startswith(b"HTTP/1.1 100 "), interim
            rest = interim.partition(b"\r\n\r\n")[2]
            sock.sendall(payload)
            status, _, body = Responses(sock, rest).next()
        assert status == 200, body
        assert json.loads(body)["ok"] is True


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_offers_h2_by_alpn_only_when_configured(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    request = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    subject = ["-subj", "/CN=127.0.0.1"]
    subprocess.run(
        [*request, *subject, "-keyout", key, "-out", cert], check=True, capture_output=True
    )
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2", "http/1.1"])
    for http2, expected in (("false", "http/1.1"), ("true", "h2")):
        env = {"TESSERA_HTTP2": http2}
        with (
            run_server(
                tmp_path, database=own_database(tmp_path), env=env, certificate=(cert, key)
            ) as s,
            context.wrap_socket(connect(s)) as tls,
        ):
            assert tls.selected_alpn_protocol() == expected, http2


def _request(path: bytes, body: bytes, *, chunked: bool = False) -> bytes:
    head = (
        b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tenant-ID: t1\r\n"
        b"X-Actor-Id: rita\r\nX-Actor-Roles: requester\r\nContent-Type: application/json\r\n"
    )
    if chunked:
        middle = len(body) // 2
        parts = (body[:middle], body[middle:])
        framed = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts)
        return head + b"Transfer-Encoding: chunked\r\n\r\n" + framed + b"0\r\n\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def _answer(sock: socket.socket, buffer: bytes = b"") -> tuple[bytes, bytes, bytes]:
    """(head without its Date and X-Request-Id lines, body, what followed) of one answer."""
    while b"\r\n\r\n" not in buffer:
        buffer += sock.recv(65536)
    head, _, rest = buffer.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)\r\ncontent-length: (\d+)", head)[1])  # type: ignore[index]
    while len(rest) < length:
        rest += sock.recv(65536)
    kept = [
        line for line in head.split(b"\r\n") if not re.match(rb"(?i)(date|x-request-id):", line)
    ]
    return b"\r\n".join(kept), rest[:length], rest[length:]


ULID_BYTES = re.compile(rb"[0-9A-HJKMNP-TV-Z]{26}")


def test_the_action_lane_sends_quarts_bytes_on_the_wire(tmp_path: Path) -> None:
    """The plain action request (host/http/action_lane.py) and the same request with a query
    string (Quart's route) get the same bytes on one keep-alive connection, with a
    ``Content-Length`` or chunked; a client gone before its body ends harms nothing."""
    create = b"/api/actions/helpdesk.ticket.create"
    unknown = b"/api/actions/helpdesk.ticket.nothing"
    quart = b"?acceptSchemaVersions=1.0.0"
    payload = json.dumps({"subject": None, "inputs": {"title": "wire"}}).encode()
    with run_server(tmp_path, database=own_database(tmp_path)) as server:
        with connect(server) as sock:
            answers = []
            rest = b""
            for path, body, chunked in [
                (create, payload, False),
                (create + quart, payload, False),
                (create, payload, True),
                (unknown, payload, False),
                (unknown + quart, payload, False),
                (create, b"{nope", False),
                (create + quart, b"{nope", False),
            ]:  # fmt: skip
                sock.sendall(_request(path, body, chunked=chunked))
                head, answer, rest = _answer(sock, rest)
                answers.append((head, ULID_BYTES.sub(b"<ulid>", answer)))
        lane, route, chunked_lane, unknown_lane, unknown_route, broken_lane, broken_route = answers
        assert lane[0].startswith(b"HTTP/1.1 200 "), lane
        assert lane == route == chunked_lane
        assert unknown_lane[0].startswith(b"HTTP/1.1 404 ") and unknown_lane == unknown_route
        assert broken_lane[0].startswith(b"HTTP/1.1 400 ") and broken_lane == broken_route

        # A client that leaves halfway through its body: nothing written, nothing logged.
        with connect(server) as sock:
            sock.sendall(_request(create, payload)[:-5])
        with connect(server) as sock:
            sock.sendall(HEALTH + b"\r\n")
            assert Responses(sock).next()[0] == 200
        with server.client() as client:
            listed = client.get(
                "/api/projections/helpdesk.ticket.queue",
                headers={"X-Tenant-ID": "t1", "X-Actor-Id": "rita", "X-Actor-Roles": "requester"},
            ).json()
        assert len(listed["data"]["items"]) == 3, listed  # the three creates above
    assert "Traceback" not in server.log.read_text()
