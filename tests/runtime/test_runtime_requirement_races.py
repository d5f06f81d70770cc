"""A declared condition through a reference holds at commit: a concurrent commit that changes
the referenced row after the check is a ``ConcurrencyConflict`` for a unit that then writes the
row (the billing sample's double-invoice race, seen once in CI on PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest

from plugin_api import (
    Action,
    ActionContext,
    Condition,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    Requirement,
    WorkflowStateMismatch,
    hookimpl,
)
from plugin_api.testing import Result, SharedHarness, TenantHost

from ._support import TICKET, entity_row, is_postgres
from .test_runtime_rules import assert_error, new_ticket

CLAIM = "claims.claim"
URGENT = "The ticket is urgent"


class Claims:
    """``claims.claim.create`` requires the claimed ticket not to be urgent (a condition
    through the ``ticket`` reference); its effect makes the ticket low priority, once the
    test lets it (:attr:`gates`, by ticket id: set when the effect starts, waited for)."""

    TESSERA_PLUGIN_API = "1.10"

    def __init__(self) -> None:
        self.gates: dict[str, tuple[asyncio.Event, asyncio.Event]] = {}

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=CLAIM,
                fields=(Field(name="ticket", type=FieldType.REFERENCE, target=TICKET),),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        not_urgent = Requirement(
            when=Condition(field="ticket.priority", operator="ne", value="urgent"),
            refuse=WorkflowStateMismatch,
            message=URGENT,
        )
        return (
            CreateAction(
                fqn=f"{CLAIM}.create",
                entity=CLAIM,
                inputs=("ticket",),
                effect="claims.lower",
                requires=(not_urgent,),
            ),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"claims.lower": self._lower}

    async def _lower(self, ctx: ActionContext) -> None:
        ticket = str(ctx.changes["ticket"])
        started, go = self.gates[ticket]
        started.set()
        await go.wait()
        await ctx.data.patch(TICKET, ticket, {"priority": "low"})


CLAIMS = Claims()


@pytest.fixture
async def claims_host(tessera_shared: SharedHarness) -> TenantHost:
    return await tessera_shared.start(plugins=["helpdesk"], extra=[("claims", CLAIMS)])


@pytest.mark.skipif(
    not is_postgres(),
    reason="two interleaved writers in one process: SQLite serialises them (one writer lock)",
)
async def test_a_commit_after_a_reference_condition_is_a_conflict_for_its_write(
    claims_host: TenantHost,
) -> None:
    """The claim's condition reads the ticket (not urgent); an HTTP edit then makes it urgent
    and commits; the effect's patch of the ticket is refused with a 409, because it is guarded
    by the version the condition held on, and the urgent edit is not overwritten."""
    client = claims_host.client(actor="alice", roles=["agent"])
    ticket = await new_ticket(client)
    started, go = CLAIMS.gates[ticket] = (asyncio.Event(), asyncio.Event())

    async def edit() -> Result:
        await started.wait()
        result = await client.action(
            f"{TICKET}.edit", subject=ticket, inputs={"priority": "urgent"}
        )
        go.set()
        return result

    try:
        claim, edited = await asyncio.gather(
            client.action(f"{CLAIM}.create", inputs={"ticket": ticket}), edit()
        )
    finally:
        go.set()
        del CLAIMS.gates[ticket]
    assert edited.status == 200, edited.json
    assert_error(claim, 409, "ConcurrencyConflict")
    row = await entity_row(claims_host.database_url, TICKET, ticket)
    assert row is not None and row["priority"] == "urgent"
    # Asked again, the condition sees the urgent ticket and refuses with its declared kind.
    CLAIMS.gates[ticket] = (asyncio.Event(), asyncio.Event())
    CLAIMS.gates[ticket][1].set()
    again = await client.action(f"{CLAIM}.create", inputs={"ticket": ticket})
    assert assert_error(again, 409, "WorkflowStateMismatch") == URGENT
