"""The harness's shared hosts (``tessera_shared``): one host per plugin set and settings for
the whole session, a fresh tenant per test, nothing of one test visible to another."""

from __future__ import annotations

import pytest

from plugin_api.testing import SharedHarness, TenantHost

TICKET = "helpdesk.ticket"
SEEN: dict[str, object] = {}


async def _open(host: TenantHost) -> str:
    rita = host.client(actor="rita", roles=["requester"])
    result = await rita.action(f"{TICKET}.create", inputs={"title": "Printer"})
    return str(result.outputs["id"])


@pytest.mark.parametrize("round_", [1, 2])
async def test_tests_share_the_host_but_not_the_tenant(
    tessera_shared: SharedHarness, round_: int
) -> None:
    host = await tessera_shared.start(plugins=["helpdesk"])
    # The same app serves both rounds; each round has a tenant of its own, empty at first.
    SEEN.setdefault("app", host.app)
    assert host.app is SEEN["app"]
    assert host.tenant not in SEEN.values()
    SEEN[f"tenant{round_}"] = host.tenant
    queue = await host.client(roles=["agent"]).projection(f"{TICKET}.queue")
    assert queue.items == []
    ticket = await _open(host)
    queue = await host.client(roles=["agent"]).projection(f"{TICKET}.queue")
    assert [row["id"] for row in queue.items] == [ticket]
    assert queue.json["metadata"]["tenant"] == host.tenant


async def test_another_tenant_of_the_test_sees_nothing(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(plugins=["helpdesk"])
    await _open(host)
    other = host.new_tenant()
    assert other != host.tenant
    queue = await host.client(tenant=other, roles=["agent"]).projection(f"{TICKET}.queue")
    assert queue.items == []
    trail = await host.audit_trail(TICKET, (await _open(host)))
    assert [record.action for record in trail] == [f"{TICKET}.create"]


async def test_other_settings_get_another_host(tessera_shared: SharedHarness) -> None:
    plain = await tessera_shared.start(plugins=["helpdesk"])
    strict = await tessera_shared.start(plugins=["helpdesk"], require_actor_id=True)
    assert plain.app is not strict.app
    again = await tessera_shared.start(plugins=["helpdesk"], require_actor_id=True)
    assert again.app is strict.app and again.tenant != strict.tenant
    anonymous = await strict.client(roles=["requester"]).action(
        f"{TICKET}.create", inputs={"title": "x"}
    )
    assert (anonymous.status, anonymous.error_kind) == (403, "PolicyDenied")


async def test_no_tenant_header_is_still_a_choice(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(plugins=["helpdesk"])
    missing = await host.client(tenant=None).projection(f"{TICKET}.queue")
    assert (missing.status, missing.error_kind) == (400, "BadRequest")


async def test_a_shared_host_cannot_be_stopped_by_a_test(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(plugins=["helpdesk"])
    with pytest.raises(RuntimeError, match="shared host"):
        await host.stop()
    assert (await host.client().health()).status == 200
