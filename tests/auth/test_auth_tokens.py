"""Token mode through the real HTTP surface, against an issuer whose JWKS a real HTTP server
serves: a valid token acts; every forged, stale or misdirected one is refused with 401
``Unauthenticated`` and ``WWW-Authenticate: Bearer error="invalid_token"`` and nothing written;
identity headers beside a token are refused; a key rotated in at the issuer is picked up
without a restart; the issuer down does not fail requests signed with keys already known."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from plugin_api.testing import Host, Result, TesseraHarness

from .conftest import Issuer, JwksServer, token_settings

CREATE = "helpdesk.ticket.create"
LIST = "helpdesk.ticket.detail"
INVALID = 'Bearer error="invalid_token"'


async def act(
    host: Host, token: str | None, *, headers: dict[str, str] | None = None, title: str = "t"
) -> Result:
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    body = json.dumps({"subject": None, "inputs": {"title": title}}).encode()
    return await host.client(tenant=None).request(
        "POST", f"/actions/{CREATE}", body=body, headers=sent
    )


async def read(host: Host, token: str, headers: dict[str, str] | None = None) -> Result:
    sent = {"Authorization": f"Bearer {token}", **(headers or {})}
    return await host.client(tenant=None).request("GET", f"/projections/{LIST}", headers=sent)


def assert_refused(result: Result, challenge: str = INVALID) -> None:
    assert result.status == 401, result.json
    assert result.json == {
        "ok": False,
        "error": {
            "kind": "Unauthenticated",
            "message": "The bearer token is not valid"
            if "error=" in challenge
            else "A valid bearer token is required",
        },
    }
    assert result.headers["www-authenticate"] == challenge


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _tamper(token: str, **changes: Any) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims.update(changes)
    return ".".join((header, _b64(json.dumps(claims).encode()), signature))


async def test_a_valid_token_acts_as_its_claims(token_host: Host, jwks_server: JwksServer) -> None:
    issuer = jwks_server.issuer
    created = await act(token_host, issuer.token(sub="alice", tenant_id="t1"))
    assert created.status == 200, created.json
    listed = await read(token_host, issuer.token(tenant_id="t1"))
    assert listed.status == 200
    assert [item["requester"] for item in listed.items] == ["alice"]
    other = await read(token_host, issuer.token(tenant_id="t2"))
    assert other.status == 200 and other.items == []
    # Roles come from the token: without 'requester' or 'agent' the policy refuses.
    denied = await act(token_host, issuer.token(roles=["clerk"]))
    assert denied.status == 403 and denied.error_kind == "PolicyDenied"


def _forgeries(issuer: Issuer) -> dict[str, tuple[str, str]]:
    now = int(time.time())
    good = issuer.token()
    header = {"alg": "none", "typ": "JWT", "kid": issuer.current}
    unsigned = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(issuer.claims()).encode())}."
    # HS256 "signed" with the issuer's public key, the classic algorithm confusion: PyJWT
    # itself refuses a PEM key as an HMAC secret, so the MAC is computed by hand.
    confused_header = _b64(
        json.dumps({"alg": "HS256", "typ": "JWT", "kid": issuer.current}).encode()
    )
    confused_body = _b64(json.dumps(issuer.claims()).encode())
    signing_input = f"{confused_header}.{confused_body}".encode()
    mac = hmac.new(issuer.public_pem(), signing_input, hashlib.sha256).digest()
    other_key = ec.generate_private_key(ec.SECP256R1())
    return {
        "expired": ("expired", issuer.token(exp=now - 60, iat=now - 400, nbf=now - 400)),
        "not yet valid": ("not_yet_valid", issuer.token(nbf=now + 120)),
        "wrong issuer": ("issuer", issuer.token(iss="https://elsewhere.test/")),
        "wrong audience": ("audience", issuer.token(aud="another-api")),
        "no expiry": ("claims", issuer.token(exp=None)),
        "alg none": ("algorithm", unsigned),
        "HS256 with the public key": ("algorithm", f"{signing_input.decode()}.{_b64(mac)}"),
        "not an allowed algorithm": (
            "algorithm",
            jwt.encode(issuer.claims(), other_key, algorithm="ES256", headers={"kid": "nobody"}),
        ),
        "unknown key id": (
            "unknown_key",
            jwt.encode(
                issuer.claims(),
                issuer.keys[issuer.current],
                algorithm="RS256",
                headers={"kid": "k9"},
            ),
        ),
        "tampered payload": ("signature", _tamper(good, tenant_id="t2")),
        "tampered roles": ("signature", _tamper(good, roles=["agent", "admin"])),
        "not a JWT": ("malformed", "not-a-token"),
        "no actor": ("claims", issuer.token(sub=None)),
        "no tenant": ("claims", issuer.token(tenant_id=None)),
        "roles not role names": ("claims", issuer.token(roles=["agent", "has space"])),
    }


async def test_forged_and_stale_tokens_are_refused_and_write_nothing(
    tessera: TesseraHarness, jwks_server: JwksServer, caplog: pytest.LogCaptureFixture
) -> None:
    # HS256 is allowed too: a token "signed" with the RSA public key must still fail on the
    # key's type, not only on the allow-list.
    host = await tessera.start(
        plugins=["helpdesk"],
        **token_settings(jwks_server.url, auth_leeway_s=0.0, auth_algorithms=("RS256", "HS256")),
    )
    issuer = jwks_server.issuer
    caplog.set_level(logging.INFO, logger="tessera.auth")
    for name, (reason, token) in _forgeries(issuer).items():
        caplog.clear()
        result = await act(host, token, title=name)
        assert result.status == 401, (name, result.json)
        assert_refused(result)
        assert [r.getMessage().split(" ")[2] for r in caplog.records] == [reason], name
    for tenant in ("t1", "t2"):
        listed = await read(host, issuer.token(tenant_id=tenant))
        assert listed.status == 200 and listed.items == []


async def test_a_missing_token_is_a_bare_challenge(token_host: Host) -> None:
    # The spec's gateway smoke test: forged identity headers and no token must be 401.
    forged = {"X-Tenant-ID": "t1", "X-Actor-Id": "mallory", "X-Actor-Roles": "agent"}
    assert_refused(await act(token_host, None, headers=forged), "Bearer")
    assert_refused(await act(token_host, None, headers={"Authorization": "Basic YTpi"}), "Bearer")
    result = await token_host.client(tenant="t1").projection(LIST)
    assert_refused(result, "Bearer")


async def test_identity_headers_beside_a_valid_token(
    tessera: TesseraHarness, jwks_server: JwksServer
) -> None:
    host = await tessera.start(
        plugins=["helpdesk"], **token_settings(jwks_server.url, auth_tenants_claim="/tenants")
    )
    issuer = jwks_server.issuer
    token = issuer.token(tenant_id="t1", tenants=["t1", "t2"])
    for name, value in (("X-Actor-Id", "mallory"), ("X-Actor-Roles", "admin")):
        refused = await act(host, token, headers={name: value})
        assert refused.status == 400 and refused.error_kind == "BadRequest", refused.json
        assert name in refused.json["error"]["message"]
    # X-Tenant-ID may choose among the tenants the token lists, and nothing else.
    chosen = await act(host, token, headers={"X-Tenant-ID": "t2"})
    assert chosen.status == 200, chosen.json
    outside = await act(host, token, headers={"X-Tenant-ID": "t3"})
    assert outside.status == 403 and outside.error_kind == "TenantBoundaryViolation"
    counts = {t: len((await read(host, issuer.token(tenant_id=t))).items) for t in ("t1", "t2")}
    assert counts == {"t1": 0, "t2": 1}
    # Without a tenants claim, X-Tenant-ID names the token's own tenant or is refused.
    plain = issuer.token(tenant_id="t1")
    assert (await act(host, plain, headers={"X-Tenant-ID": "t1"})).status == 200
    elsewhere = await act(host, plain, headers={"X-Tenant-ID": "t2"})
    assert elsewhere.status == 403


async def test_key_rotation_is_picked_up_without_a_restart(
    token_host: Host, jwks_server: JwksServer
) -> None:
    issuer = jwks_server.issuer
    assert (await act(token_host, issuer.token())).status == 200
    fetched = issuer.requests
    issuer.rotate("k2")
    await asyncio.sleep(0.3)  # past TESSERA_AUTH_JWKS_REFRESH_S (0.2 here)
    tried = time.monotonic()
    assert (await act(token_host, issuer.token(kid="k2"))).status == 200
    assert issuer.requests == fetched + 1
    # Unknown key ids do not make the host fetch on every request: at most once per 0.2 s
    # since the fetch above (however slow a loaded machine makes the requests).
    for _ in range(10):
        token = jwt.encode(
            issuer.claims(), issuer.keys["k2"], algorithm="RS256", headers={"kid": "unheard-of"}
        )
        assert_refused(await act(token_host, token))
    allowed = int((time.monotonic() - tried) / 0.2)
    assert issuer.requests - (fetched + 1) <= min(allowed, 9), (issuer.requests, allowed)
    # The old key still verifies while the issuer publishes it.
    assert (await act(token_host, issuer.token(kid="k1"))).status == 200


async def test_the_issuer_down_does_not_fail_known_keys(
    tessera: TesseraHarness, jwks_server: JwksServer
) -> None:
    # Keys older than max age are refreshed in the background on every request that may:
    # with the issuer down each refresh fails, and the keys in hand keep verifying.
    host = await tessera.start(
        plugins=["helpdesk"],
        **token_settings(jwks_server.url, auth_jwks_max_age_s=0.05, auth_jwks_refresh_s=0.05),
    )
    issuer = jwks_server.issuer
    assert (await act(host, issuer.token())).status == 200
    issuer.up = False  # answers 503
    deadline = time.monotonic() + 1.0
    statuses = []
    while time.monotonic() < deadline:
        statuses.append((await act(host, issuer.token())).status)
        await asyncio.sleep(0.02)
    jwks_server.stop()  # now connections are refused
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        statuses.append((await act(host, issuer.token())).status)
        await asyncio.sleep(0.02)
    assert set(statuses) == {200}
    assert issuer.requests > 3  # refreshes were tried (and failed) meanwhile


async def test_no_key_known_and_the_issuer_down_is_503(
    tessera: TesseraHarness, jwks_server: JwksServer
) -> None:
    jwks_server.issuer.up = False
    settings = token_settings(jwks_server.url, auth_jwks_refresh_s=2.0)
    host = await tessera.start(plugins=["helpdesk"], **settings)
    started = time.monotonic()
    for _ in range(5):
        result = await act(host, jwks_server.issuer.token())
        assert result.status == 503 and result.error_kind == "ServiceUnavailable"
    # Within TESSERA_AUTH_JWKS_REFRESH_S (2 s here) the issuer is asked once, not per request.
    assert time.monotonic() - started < 2
    assert jwks_server.issuer.requests == 1
    await asyncio.sleep(2.1)
    jwks_server.issuer.up = True
    assert (await act(host, jwks_server.issuer.token())).status == 200


async def test_a_static_key_file(
    tessera: TesseraHarness, jwks_server: JwksServer, tmp_path: Any
) -> None:
    issuer = jwks_server.issuer
    path = tmp_path / "issuer.pem"
    path.write_bytes(issuer.public_pem())
    settings = token_settings("", auth_key_file=str(path))
    host = await tessera.start(plugins=["helpdesk"], **settings)
    assert (await act(host, issuer.token())).status == 200
    issuer.rotate("k2")
    assert_refused(await act(host, issuer.token(kid="k2")))


async def test_cors_allows_the_authorization_header_in_token_mode(token_host: Host) -> None:
    result = await token_host.client(tenant=None).request("OPTIONS", "/actions/x")
    assert result.status == 204
    allowed = result.headers["access-control-allow-headers"]
    assert allowed == "Content-Type, X-Tenant-ID, X-Actor-Id, X-Actor-Roles, Authorization"
    assert result.headers["vary"] == "X-Tenant-ID, X-Actor-Id, X-Actor-Roles, Authorization"


async def test_header_mode_stays_the_default(host: Host) -> None:
    result = await host.client(tenant=None).request("OPTIONS", "/actions/x")
    allowed = result.headers["access-control-allow-headers"]
    assert allowed == "Content-Type, X-Tenant-ID, X-Actor-Id, X-Actor-Roles"
    client = host.client(tenant="t1", actor="bob", roles=["requester"])
    created = await client.action(CREATE, inputs={"title": "x"})
    assert created.status == 200
    # A bearer token means nothing in header mode.
    listed = await host.client(tenant="t1").request(
        "GET", f"/projections/{LIST}", headers={"Authorization": "Bearer whatever"}
    )
    assert listed.status == 200 and len(listed.items) == 1


@pytest.mark.parametrize(
    "settings",
    [
        {"auth_issuer": ""},
        {"auth_audience": ""},
        {"auth_jwks_url": ""},
        {"auth_key_file": "/nonexistent.pem"},
    ],
)
async def test_token_mode_refuses_to_start_half_configured(
    tessera: TesseraHarness, settings: dict[str, Any]
) -> None:
    from host.errors import StartupError

    with pytest.raises(StartupError, match="TESSERA_AUTH"):
        await tessera.start(plugins=["helpdesk"], **token_settings("http://x", **settings))
