"""Data-API reads keep the target's read floor (issue 39), through HTTP on the backend of the
run: a plugin requiring plugin API 1.9 reads another plugin's rows as the acting identity
may (``find``, ``get`` and ``history`` alike), unless it declares a system read; an older
plugin keeps reading the whole tenant."""

from __future__ import annotations

from typing import Any

from plugin_api.testing import SharedHarness

from ._plugins import PLUGINS, REQUEST


async def survey(host: Any, plugin: str, actor: str, roles: list[str], target: str) -> Any:
    done = await host.client(actor=actor, roles=roles).action(
        f"{plugin}.job.survey", inputs={"target": target}
    )
    assert done.status == 200, done.json
    return {name: done.outputs[name] for name in ("seen", "found", "history")}


async def test_reads_keep_the_floor_unless_owned_or_declared(
    tessera_shared: SharedHarness,
) -> None:
    host = await tessera_shared.start(plugins=[], extra=PLUGINS, entry_points=False)
    rows = []
    for requester in ("alice", "erin"):
        made = await host.client(actor=requester, roles=["buyer"]).action(
            f"{REQUEST}.create", inputs={"title": "Laptop"}
        )
        assert made.status == 200, made.json
        rows.append(str(made.outputs["id"]))
    alices = rows[0]

    nothing = {"seen": 0, "found": False, "history": 0}
    assert await survey(host, "sneaky", "bob", [], alices) == nothing
    assert await survey(host, "sneaky", "alice", [], alices) == {
        "seen": 1,
        "found": True,
        "history": 1,
    }
    everything = {"seen": 2, "found": True, "history": 1}
    assert await survey(host, "sneaky", "audrey", ["approver"], alices) == everything
    assert await survey(host, "helper", "bob", [], alices) == everything  # SystemRead
    assert await survey(host, "legacy", "bob", [], alices) == everything  # plugin API < 1.9
