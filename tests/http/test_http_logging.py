"""500s carry a generic message and a request id; the cause and an access line go to the log."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import pytest

from plugin_api import (
    Action,
    ActionContext,
    CreateAction,
    Entity,
    Field,
    FieldType,
    PolicyHandler,
    hookimpl,
)


class BrokenPolicyPlugin:
    """A plugin whose custom policy has a bug."""

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (Entity(fqn="lab.note", fields=(Field(name="text", type=FieldType.STRING),)),)

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(
                fqn="lab.note.create", entity="lab.note", inputs=("text",), policies=("lab.buggy",)
            ),
        )

    @hookimpl
    def tessera_policies(self) -> Mapping[str, PolicyHandler]:
        def buggy(ctx: ActionContext) -> bool:
            raise RuntimeError("secret internals: password=hunter2")

        return {"lab.buggy": buggy}


async def test_unexpected_error_is_a_generic_500_with_request_id_in_log(
    tessera, caplog: pytest.LogCaptureFixture
) -> None:
    host = await tessera.start(plugins=[], extra=[("lab", BrokenPolicyPlugin())])
    with caplog.at_level(logging.ERROR):
        result = await host.client().action("lab.note.create", inputs={"text": "hi"})
    assert result.status == 500
    assert result.error_kind == "InternalError"
    message = result.json["error"]["message"]
    assert "hunter2" not in message and "RuntimeError" not in message
    request_id = result.headers["x-request-id"]
    assert request_id in message
    logged = "\n".join(record.getMessage() + str(record.exc_info) for record in caplog.records)
    assert request_id in logged and "hunter2" in logged
    assert result.headers["access-control-allow-origin"] == "*"


async def test_one_access_log_line_per_request(tessera, caplog: pytest.LogCaptureFixture) -> None:
    host = await tessera.start(plugins=["helpdesk"], access_log=True)
    client = host.client(tenant="acme", actor="bob", roles=["agent"])
    with caplog.at_level(logging.INFO, logger="tessera.access"):
        await client.projection("helpdesk.ticket.queue")
        await client.action("helpdesk.ticket.create", inputs={})
    lines = [r.getMessage() for r in caplog.records if r.name == "tessera.access"]
    assert len(lines) == 2
    assert lines[0].startswith("GET /api/projections/helpdesk.ticket.queue tenant=acme actor=bob")
    assert "status=200" in lines[0]
    assert lines[1].startswith("POST /api/actions/helpdesk.ticket.create")
    assert "status=400" in lines[1] and lines[1].endswith("ms")
