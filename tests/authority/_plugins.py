"""The plugins of the authority tests (issue 39): ``purchasing`` owns purchase requests (a
read floor: a requester reads their own, an approver every one; ``approve`` needs the
``approver`` role, ``cancel`` the ``buyer`` role and accepts delegation), and three plugins
whose effects reach them: ``helper`` (plugin API 1.9, declares what it does), ``sneaky``
(1.9, declares nothing) and ``legacy`` (no plugin API required: the earlier behaviour)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugin_api import (
    Action,
    ActionContext,
    Authority,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    Grant,
    Projection,
    ReadAccess,
    RowScope,
    RunsAction,
    Stamp,
    StampSource,
    SystemRead,
    Transition,
    TransitionAction,
    Workflow,
    hookimpl,
)

REQUEST = "purchasing.request"


class Purchasing:
    """Purchase requests, readable by their requester and by approvers."""

    TESSERA_PLUGIN_API = "1.9"

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        actor = Stamp(field="approver", source=StampSource.ACTOR)
        return (
            Entity(
                fqn=REQUEST,
                fields=(
                    Field(name="title", type=FieldType.STRING),
                    Field(name="requester", type=FieldType.STRING, nullable=True),
                    Field(name="approver", type=FieldType.STRING, nullable=True),
                    Field(
                        name="state",
                        type=FieldType.ENUM,
                        options=("open", "approved", "cancelled"),
                    ),
                ),
                workflow=Workflow(
                    state_field="state",
                    initial="open",
                    transitions=(
                        Transition(
                            name="approve", sources=("open",), target="approved", stamps=(actor,)
                        ),
                        Transition(name="cancel", sources=("open",), target="cancelled"),
                    ),
                ),
                access=ReadAccess(scope=RowScope(field="requester", exempt=("approver",))),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(
                fqn=f"{REQUEST}.create",
                entity=REQUEST,
                inputs=("title",),
                stamps=(Stamp(field="requester", source=StampSource.ACTOR),),
            ),
            TransitionAction(
                fqn=f"{REQUEST}.approve",
                entity=REQUEST,
                transition="approve",
                roles=("approver",),
            ),
            TransitionAction(
                fqn=f"{REQUEST}.cancel",
                entity=REQUEST,
                transition="cancel",
                roles=("buyer",),
                accepts_delegation=True,
            ),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn=f"{REQUEST}.detail",
                entity=REQUEST,
                fields=("id", "title", "requester", "approver", "state"),
                actions=(f"{REQUEST}.approve", f"{REQUEST}.cancel"),
            ),
        )


class Reacher:
    """A plugin whose jobs' effects reach purchase requests: ``<name>.job.approve`` and
    ``.cancel`` run purchasing's action on the request ``target``; ``.survey`` reads the
    requests (how many it finds, whether it gets ``target``, how long its history is)."""

    def __init__(self, name: str, api: str | None, grants: Sequence[Grant] = ()) -> None:
        self.name = name
        if api is not None:
            self.TESSERA_PLUGIN_API = api
        self._grants = tuple(grants)

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=f"{self.name}.job",
                fields=(
                    Field(name="target", type=FieldType.STRING, nullable=True),
                    Field(name="seen", type=FieldType.INTEGER, nullable=True),
                    Field(name="found", type=FieldType.BOOLEAN, nullable=True),
                    Field(name="history", type=FieldType.INTEGER, nullable=True),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return tuple(
            CreateAction(
                fqn=f"{self.name}.job.{what}",
                entity=f"{self.name}.job",
                inputs=("target",),
                effect=f"{self.name}.{what}",
            )
            for what in ("approve", "cancel", "survey")
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {
            f"{self.name}.approve": _running("approve"),
            f"{self.name}.cancel": _running("cancel"),
            f"{self.name}.survey": _survey,
        }

    @hookimpl
    def tessera_grants(self) -> Sequence[Grant]:
        return self._grants


def _running(transition: str) -> EffectHandler:
    async def effect(ctx: ActionContext) -> None:
        await ctx.data.run(f"{REQUEST}.{transition}", subject=ctx.inputs["target"])

    return effect


async def _survey(ctx: ActionContext) -> None:
    target = str(ctx.inputs["target"])
    ctx.set("seen", len(await ctx.data.find(REQUEST)))
    ctx.set("found", await ctx.data.get(REQUEST, target) is not None)
    ctx.set("history", len(await ctx.data.history(REQUEST, target)))


PURCHASING = Purchasing()
HELPER = Reacher(
    "helper",
    "1.9",
    (
        RunsAction(action=f"{REQUEST}.approve", roles=("approver",)),
        RunsAction(action=f"{REQUEST}.cancel", authority=Authority.CALLER),
        SystemRead(entity=REQUEST),
    ),
)
SNEAKY = Reacher("sneaky", "1.9")
LEGACY = Reacher("legacy", None)
PLUGINS = [("purchasing", PURCHASING), ("helper", HELPER), ("sneaky", SNEAKY), ("legacy", LEGACY)]
