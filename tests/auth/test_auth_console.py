"""The console in token mode: pages show (and act as) the bearer token's identity, resolved by
the API's own identity object; a page without a valid token says why; "act as" is off, on a
loopback bind too, so a cookie cannot stand in for a token."""

from __future__ import annotations

from plugin_api.testing import TesseraHarness

from ..console.conftest import LOOPBACK, Console
from .conftest import JwksServer, token_settings


async def test_console_pages_use_the_token_identity_and_act_as_is_off(
    tessera: TesseraHarness, jwks_server: JwksServer
) -> None:
    host = await tessera.start(
        plugins=["helpdesk"],
        console="on",
        serve_bind=LOOPBACK,
        **token_settings(jwks_server.url, auth_leeway_s=0.0),
    )
    token = jwks_server.issuer.token(sub="carol", tenant_id="t7", roles=["agent"])
    home = await Console(host, {"Authorization": f"Bearer {token}"}).get("/")
    assert home.status == 200, home.text
    assert "tenant <strong>t7</strong>" in home.text
    assert "actor <strong>carol</strong>" in home.text
    assert "Act as" not in home.text

    refused = await Console(host).get("/as")
    assert refused.status == 403

    forged = await Console(host, {"Authorization": "Bearer not-a-token"}).get("/")
    assert forged.status == 200
    assert "actor <strong>" not in forged.text
    assert "bearer token is not valid" in forged.text

    spoofed = await Console(host, {"X-Tenant-ID": "t7", "X-Actor-Id": "mallory"}).get("/")
    assert "actor <strong>mallory</strong>" not in spoofed.text
