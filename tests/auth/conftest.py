"""Token mode fixtures: an issuer (RSA keys, a JWKS served by a real HTTP server on a free
loopback port, which can rotate its keys or go down) and a way to sign tokens."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from plugin_api.testing import Host, TesseraHarness

ISSUER = "https://issuer.test/"
AUDIENCE = "tessera-api"


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Issuer:
    """Signs tokens and publishes its public keys as a JWKS."""

    keys: dict[str, rsa.RSAPrivateKey] = field(default_factory=dict)
    current: str = ""
    up: bool = True
    requests: int = 0

    def rotate(self, kid: str) -> None:
        """Publish a new key and sign with it from now on (the old ones stay published)."""
        self.keys[kid] = _new_key()
        self.current = kid

    def jwks(self) -> dict[str, Any]:
        entries = []
        for kid, key in self.keys.items():
            entry = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
            entries.append({**entry, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": entries}

    def public_pem(self) -> bytes:
        return (
            self.keys[self.current]
            .public_key()
            .public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
        )

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "alice",
            "tenant_id": "t1",
            "roles": ["requester", "agent"],
            "iat": now,
            "nbf": now,
            "exp": now + 300,
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def token(self, *, kid: str | None = None, **overrides: Any) -> str:
        kid = kid or self.current
        return jwt.encode(
            self.claims(**overrides), self.keys[kid], algorithm="RS256", headers={"kid": kid}
        )


def _handler(issuer: Issuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            issuer.requests += 1
            if not issuer.up:
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = json.dumps(issuer.jwks()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


@dataclass
class JwksServer:
    issuer: Issuer
    url: str
    server: ThreadingHTTPServer

    def stop(self) -> None:
        """The issuer unreachable: connections are refused from now on."""
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def jwks_server() -> Iterator[JwksServer]:
    issuer = Issuer()
    issuer.rotate("k1")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(issuer))
    # A short poll: shutdown() waits for the loop's next turn (0.5 s by default, in every
    # teardown).
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    port = server.server_address[1]
    running = JwksServer(issuer, f"http://127.0.0.1:{port}/.well-known/jwks.json", server)
    yield running
    if thread.is_alive():
        running.stop()
    thread.join(5)


def token_settings(url: str, **overrides: Any) -> dict[str, Any]:
    """The harness settings of token mode against ``url``."""
    return {
        "auth_mode": "token",
        "auth_jwks_url": url,
        "auth_issuer": ISSUER,
        "auth_audience": AUDIENCE,
        "auth_jwks_refresh_s": 0.2,
        **overrides,
    }


@pytest.fixture
async def token_host(tessera: TesseraHarness, jwks_server: JwksServer) -> Host:
    """The sample plugins served in token mode against the local issuer."""
    return await tessera.start(
        plugins=["helpdesk", "billing"], **token_settings(jwks_server.url, auth_leeway_s=0.0)
    )
