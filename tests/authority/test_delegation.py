"""Delegation is explicit (issue 39), through HTTP on the backend of the run: another
plugin's effect runs purchasing's action only as declared (its own system identity with the
roles it declares, or the caller where the action accepts delegation), a plugin requiring
plugin API 1.9 that declared nothing is refused, an older plugin keeps borrowing the caller's
roles (with a warning); the audit record of the nested action names the chain."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from plugin_api.testing import Client, SharedHarness, TenantHost

from ._plugins import PLUGINS, REQUEST


async def start(tessera_shared: SharedHarness) -> TenantHost:
    return await tessera_shared.start(plugins=[], extra=PLUGINS, entry_points=False)


async def request(host: TenantHost, requester: str = "alice") -> str:
    made = await host.client(actor=requester, roles=["buyer"]).action(
        f"{REQUEST}.create", inputs={"title": "Laptop"}
    )
    assert made.status == 200, made.json
    return str(made.outputs["id"])


async def state(host: TenantHost, row: str) -> Any:
    auditor = host.client(actor="audrey", roles=["approver"])
    found = await auditor.projection(f"{REQUEST}.detail", subject=row)
    return found.item


async def job(client: Client, plugin: str, what: str, target: str) -> Any:
    return await client.action(f"{plugin}.job.{what}", inputs={"target": target})


async def test_a_plugin_that_declared_nothing_cannot_run_another_plugins_action(
    tessera_shared: SharedHarness,
) -> None:
    host = await start(tessera_shared)
    row = await request(host)
    approver = host.client(actor="carol", roles=["approver"])

    refused = await job(approver, "sneaky", "approve", row)
    assert refused.status == 403, refused.json
    assert refused.error_kind == "PolicyDenied"
    assert (
        "'sneaky' has not declared that it runs action 'purchasing.request.approve'"
        in (refused.json["error"]["message"])
    )
    assert (await state(host, row))["state"] == "open"  # nothing was written


async def test_a_declared_run_acts_as_the_plugin_and_the_record_names_the_chain(
    tessera_shared: SharedHarness,
) -> None:
    host = await start(tessera_shared)
    row = await request(host)
    nobody = host.client(actor="dave", roles=[])  # holds no role at all

    done = await job(nobody, "helper", "approve", row)
    assert done.status == 200, done.json
    item = await state(host, row)
    assert (item["state"], item["approver"]) == ("approved", "plugin:helper")

    history = await host.client(actor="audrey", roles=["approver"]).history(
        f"{REQUEST}.detail", row
    )
    newest = history.json["data"]["items"][0]
    assert newest["action"] == f"{REQUEST}.approve"
    assert newest["actor"] == {"id": "plugin:helper", "roles": ["approver"]}
    assert newest["via"] == [{"action": "helper.job.approve", "plugin": "helper"}]
    assert "via" not in history.json["data"]["items"][1]  # the create a client asked for


async def test_delegation_runs_as_the_caller_only_where_the_action_accepts_it(
    tessera_shared: SharedHarness,
) -> None:
    host = await start(tessera_shared)
    row = await request(host)

    refused = await job(host.client(actor="dave", roles=[]), "helper", "cancel", row)
    assert refused.status == 403 and refused.error_kind == "PolicyDenied", refused.json
    assert "requires one of the roles: buyer" in refused.json["error"]["message"]

    done = await job(host.client(actor="alice", roles=["buyer"]), "helper", "cancel", row)
    assert done.status == 200, done.json
    history = await host.client(actor="audrey", roles=["approver"]).history(
        f"{REQUEST}.detail", row
    )
    newest = history.json["data"]["items"][0]
    assert newest["actor"]["id"] == "alice"
    assert newest["via"] == [{"action": "helper.job.cancel", "plugin": "helper"}]


async def test_an_older_plugin_keeps_borrowing_the_callers_roles_with_a_warning(
    tessera_shared: SharedHarness, caplog: pytest.LogCaptureFixture
) -> None:
    host = await start(tessera_shared)
    row = await request(host)
    with caplog.at_level(logging.WARNING, logger="tessera.runtime"):
        done = await job(host.client(actor="carol", roles=["approver"]), "legacy", "approve", row)
    assert done.status == 200, done.json
    item = await state(host, row)
    assert (item["state"], item["approver"]) == ("approved", "carol")
    warned = [r.getMessage() for r in caplog.records if "older than 1.9" in r.getMessage()]
    assert len(warned) <= 1  # once per plugin and action in a process (shared host)
