"""Examples of the plugin guide (docs/writing-plugins.md), run as tests: a counter kept with
``ctx.data.increment``, a subscriber of state changes, and a plugin's migration from one
version to the next tested in one file. Only ``plugin_api``, as a third-party author."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugin_api import (
    Action,
    ActionContext,
    CreateAction,
    EffectHandler,
    Entity,
    EventContext,
    Field,
    FieldType,
    MapOptions,
    Migration,
    Projection,
    Subscriber,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    dry_run_safe,
    hookimpl,
)
from plugin_api.testing import TesseraHarness

PROJECT, ISSUE, NOTICE = "board.project", "board.issue", "board.notice"


# docs:start counter-effect
@dry_run_safe
async def count_done(ctx: ActionContext) -> None:
    """A finished issue counts on its project: never a 409, whatever runs at once."""
    assert ctx.subject is not None
    await ctx.data.increment(PROJECT, ctx.subject["project"], "done")


# docs:end counter-effect


# docs:start state-subscriber
async def notify_done(ctx: EventContext) -> None:
    """Every issue that reaches ``done``, whoever moved it (an action, or another plugin's
    effect through ``ctx.data.transition``)."""
    if ctx.event.outputs.get("state") == "done":
        await ctx.data.create(NOTICE, {"issue": ctx.event.subject_id, "cause": ctx.event.action})


DONE_SUBSCRIBER = Subscriber(
    name="board.notify_done",
    handler=notify_done,
    states=(ISSUE,),  # every change of an issue's workflow state
    timeout_s=2.0,
    transactional=True,
)
# docs:end state-subscriber


class Board:
    """Projects counting their finished issues; a notice per finished issue."""

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=PROJECT,
                fields=(
                    Field(name="name", type=FieldType.STRING),
                    Field(name="done", type=FieldType.INTEGER, default=0),
                ),
            ),
            Entity(
                fqn=ISSUE,
                fields=(
                    Field(name="project", type=FieldType.REFERENCE, target=PROJECT),
                    Field(name="state", type=FieldType.ENUM, options=("open", "done")),
                ),
                workflow=Workflow(
                    state_field="state",
                    initial="open",
                    transitions=(Transition(name="finish", sources=("open",), target="done"),),
                ),
            ),
            Entity(
                fqn=NOTICE,
                fields=(
                    Field(name="issue", type=FieldType.REFERENCE, target=ISSUE),
                    Field(name="cause", type=FieldType.STRING),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{PROJECT}.create", entity=PROJECT, inputs=("name",)),
            CreateAction(fqn=f"{ISSUE}.create", entity=ISSUE, inputs=("project",)),
            TransitionAction(
                fqn=f"{ISSUE}.finish",
                entity=ISSUE,
                transition="finish",
                stampable=(),
                effect="board.count_done",
            ),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(fqn=f"{PROJECT}.detail", entity=PROJECT, fields=("id", "done")),
            Projection(fqn=f"{NOTICE}.list", entity=NOTICE, fields=("id", "issue", "cause")),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"board.count_done": count_done}

    @hookimpl
    def tessera_subscribers(self) -> Sequence[Subscriber]:
        return (DONE_SUBSCRIBER,)


async def test_counts_and_notices(tessera: TesseraHarness) -> None:
    host = await tessera.start(plugins=[], extra=[("board", Board())], events_poll_s=0.05)
    client = host.client(tenant="t1", actor="ann")
    project = (await client.action(f"{PROJECT}.create", inputs={"name": "x"})).outputs["id"]
    issues = [
        (await client.action(f"{ISSUE}.create", inputs={"project": project})).outputs["id"]
        for _ in range(3)
    ]
    for issue in issues:
        assert (await client.action(f"{ISSUE}.finish", subject=issue)).status == 200
    detail = await client.projection(f"{PROJECT}.detail", subject=project)
    assert detail.item is not None and detail.item["done"] == 3
    assert await host.deliveries_settled() == {}
    notices = await client.projection(f"{NOTICE}.list")
    assert sorted(n["issue"] for n in notices.items) == sorted(issues)


# docs:start harness-migration
class ShopV1:
    """Version 1, as released: an order's size is S, M or XL."""

    SIZES: tuple[str, ...] = ("S", "M", "XL")

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        size = Field(name="size", type=FieldType.ENUM, options=self.SIZES)
        item = Field(name="item", type=FieldType.STRING)
        return (Entity(fqn="shop.order", fields=(item, size)),)

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn="shop.order.create", entity="shop.order", inputs=("item", "size")),
            UpdateAction(fqn="shop.order.edit", entity="shop.order", patchable=("size",)),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        fields = ("id", "size", "_version")
        return (Projection(fqn="shop.order.detail", entity="shop.order", fields=fields),)


class ShopV2(ShopV1):
    """Version 2: XL is gone, its orders become L."""

    SIZES = ("S", "M", "L")

    @hookimpl
    def tessera_migrations(self) -> Sequence[Migration]:
        return (MapOptions(entity="shop.order", field="size", mapping={"XL": "L"}),)


async def test_version_1_to_2(tessera: TesseraHarness) -> None:
    old = await tessera.start(plugins=[], extra=[("shop", ShopV1())])
    client = old.client(actor="ann")
    created = await client.action("shop.order.create", inputs={"item": "coat", "size": "XL"})
    order = created.outputs["id"]
    await old.stop()

    allow = ("enum-option-removed",)
    await tessera.migrate(plugins=[], extra=[("shop", ShopV2())], allow=allow)

    new = await tessera.start(plugins=[], extra=[("shop", ShopV2())])
    detail = await new.client(actor="ann").projection("shop.order.detail", subject=order)
    assert detail.item is not None and detail.item["size"] == "L"
    migrated, created_record = await new.audit_trail("shop.order", order)
    assert (migrated.action, migrated.actor_id) == ("migration:shop", "system")
    assert migrated.changes == {"size": ("XL", "L")}
    assert migrated.version_before == created_record.version_after
    assert migrated.version_after == detail.item["_version"]


# docs:end harness-migration


async def test_a_migration_not_allowed_alters_nothing(tessera: TesseraHarness) -> None:
    old = await tessera.start(plugins=[], extra=[("shop", ShopV1())])
    client = old.client(actor="ann")
    small = await client.action("shop.order.create", inputs={"item": "hat", "size": "S"})
    await client.action("shop.order.create", inputs={"item": "coat", "size": "XL"})
    await old.stop()
    try:
        await tessera.migrate(plugins=[], extra=[("shop", ShopV2())])
    except Exception as exc:
        assert "enum-option-removed" in str(exc)
    else:
        raise AssertionError("a breaking change applied without --allow")
    applied = await tessera.migrate(
        plugins=[], extra=[("shop", ShopV2())], allow=("enum-option-removed",)
    )
    assert any("enum-option-removed" in line for line in applied)
    new = await tessera.start(plugins=[], extra=[("shop", ShopV2())])
    assert len(await new.audit_trail("shop.order", small.outputs["id"])) == 1  # not rewritten
