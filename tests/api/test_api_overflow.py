"""Values the document bounds are refused as it says, found by fuzzing the routes the document
now describes (issue 40): an audit position or a history cursor longer than 18 digits is a
400, not a broken stream or a database error."""

from __future__ import annotations

from plugin_api.testing import SharedHarness


async def test_an_audit_position_past_18_digits_is_a_400(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(plugins=["helpdesk", "billing"])
    auditor = host.client(actor="olga", roles=["auditor"])
    for after in ("0.10000000000000000000", "1234567890123456789.1"):
        answer = await auditor.request("GET", f"/_audit/export?after={after}")
        assert answer.status == 400, (after, answer.status, answer.body[:200])
        assert answer.json["error"]["kind"] == "BadRequest"
    assert (await auditor.request("GET", "/_audit/export?after=0.1")).status == 200


async def test_a_history_cursor_past_18_digits_is_a_400(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(plugins=["helpdesk", "billing"])
    agent = host.client(actor="ann", roles=["agent"])
    created = await agent.action("helpdesk.ticket.create", inputs={"title": "Printer"})
    ticket = created.json["outputs"]["id"]
    query = {"cursor": "9" * 20}
    answer = await agent.history("helpdesk.ticket.detail", ticket, query=query)
    assert answer.status == 400 and answer.json["error"]["kind"] == "BadRequest"
    assert (await agent.history("helpdesk.ticket.detail", ticket)).status == 200
