"""Timers armed by data-API writes (issue 41): a plugin's effect creating and patching rows
with ``ctx.data`` arms and re-arms their timers in the action's transaction, as an action's
own write does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from host.timers.queries import list_timers
from plugin_api import (
    Action,
    ActionContext,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldTimer,
    FieldType,
    SystemActor,
    Timer,
    UpdateAction,
    hookimpl,
)
from plugin_api.testing import SharedHarness

CHORE = "chores.chore"
LOG = "chores.log"


async def spawn(ctx: ActionContext) -> None:
    """Create a chore due at the given instant, then move it later (both through the data
    API)."""
    chore = await ctx.data.create(CHORE, {"due": "2031-01-01T00:00:00Z"})
    await ctx.data.patch(CHORE, chore["id"], {"due": "2032-01-01T00:00:00Z"})


class Chores:
    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(fqn=CHORE, fields=(Field(name="due", type=FieldType.DATETIME, nullable=True),)),
            Entity(fqn=LOG, fields=(Field(name="note", type=FieldType.STRING, nullable=True),)),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{LOG}.spawn", entity=LOG, inputs=(), effect="chores.spawn"),
            UpdateAction(fqn=f"{CHORE}.touch", entity=CHORE, patchable=()),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"chores.spawn": spawn}

    @hookimpl
    def tessera_timers(self) -> Sequence[Timer]:
        actor = SystemActor(name="chores.clock")
        return (
            FieldTimer(
                name=f"{CHORE}.due", entity=CHORE, field="due", action=f"{CHORE}.touch", actor=actor
            ),
        )


async def test_data_api_writes_arm_and_rearm_timers(tessera_shared: SharedHarness) -> None:
    host = await tessera_shared.start(plugins=[], extra=[("chores", Chores())])
    service = host.app.extensions["tessera.service"]()
    answer = await host.client(actor="ann").action(f"{LOG}.spawn")
    assert answer.status == 200, answer.json
    (armed,) = await list_timers(service.storage, tenant=host.tenant)
    assert (armed.timer, armed.due_at[:10]) == (f"{CHORE}.due", "2032-01-01")
    (cancelled,) = await list_timers(service.storage, tenant=host.tenant, states=["cancelled"])
    assert cancelled.due_at[:10] == "2031-01-01"
