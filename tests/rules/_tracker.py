"""The tracker story of issue 30 as two in-test plugins.

``tracker`` (plugin API 1.8) owns projects and issues: a project has a key (a pattern), a
name (an enforced length) and an ``archived`` flag; an issue belongs to a project (a
validator refuses any write of an issue of an archived project, whoever writes it), has a
``reporter`` it stamps and owns, a ``project_owner`` its effect copies from the project (a row
scope reads it; only the owner's effects write it), ``points`` in a range, and a workflow
whose state it owns (``open`` -> ``done`` by its ``done`` action, whose effect records who
finished it).

``reports`` (plugin API 1.8) is another plugin: its ``reports.note.create`` action runs an
effect the test sets (``Reports.meddle``), which writes issues through ``ctx.data``, and its
subscriber records the events of ``tracker.issue.done``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from plugin_api import (
    ANY_FIELD,
    Action,
    ActionContext,
    BadRequest,
    CreateAction,
    EffectHandler,
    Entity,
    Event,
    EventContext,
    Field,
    FieldType,
    Projection,
    ReadAccess,
    RowScope,
    RowWrite,
    Stamp,
    Subscriber,
    Transition,
    TransitionAction,
    UpdateAction,
    ValidatorHandler,
    Workflow,
    WrittenBy,
    dry_run_safe,
    hookimpl,
)

PROJECT = "tracker.project"
ISSUE = "tracker.issue"
NOTE = "reports.note"


async def open_project(write: RowWrite) -> None:
    """No issue of an archived project may be created or changed, whoever writes it."""
    project = await write.data.get(PROJECT, write.after["project"])
    if project is not None and project["archived"]:
        raise BadRequest(f"Project {project['key']} is archived: its issues cannot change")


@dry_run_safe
async def copy_owner(ctx: ActionContext) -> None:
    project = await ctx.data.get(PROJECT, ctx.inputs["project"])
    assert project is not None
    ctx.set("project_owner", project["owner"])


def finish(ctx: ActionContext) -> None:
    ctx.set("done_by", ctx.actor_id)


class Tracker:
    """The owning plugin."""

    TESSERA_PLUGIN_API = "1.8"

    def __init__(self) -> None:
        self.validated: list[RowWrite] = []
        """Every write the recording validator saw."""
        self.check: Callable[[RowWrite], None] = lambda write: None
        """What the recording validator does besides recording (a test sets it)."""

    def _record(self, write: RowWrite) -> None:
        self.validated.append(write)
        self.check(write)

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=PROJECT,
                fields=(
                    Field(name="key", type=FieldType.STRING, pattern=r"[A-Z][A-Z0-9]{1,9}"),
                    Field(
                        name="name",
                        type=FieldType.STRING,
                        min_length=1,
                        max_length=40,
                        enforce_max_length=True,
                    ),
                    Field(name="archived", type=FieldType.BOOLEAN, default=False),
                    Field(name="owner", type=FieldType.STRING, written_by=WrittenBy.OWNER),
                    Field(
                        name="budget",
                        type=FieldType.MONEY,
                        currency="EUR",
                        nullable=True,
                        default=None,
                        minimum="0.01",
                        maximum=100000,
                    ),
                ),
            ),
            Entity(
                fqn=ISSUE,
                fields=(
                    Field(name="project", type=FieldType.REFERENCE, target=PROJECT),
                    Field(name="title", type=FieldType.STRING, min_length=3, max_length=80),
                    Field(name="reporter", type=FieldType.STRING, written_by=WrittenBy.OWNER),
                    Field(name="assignee", type=FieldType.STRING, nullable=True, default=None),
                    Field(
                        name="project_owner",
                        type=FieldType.STRING,
                        nullable=True,
                        default=None,
                        written_by=WrittenBy.OWNER_EFFECTS,
                    ),
                    Field(
                        name="points",
                        type=FieldType.INTEGER,
                        nullable=True,
                        default=None,
                        minimum=0,
                        maximum=100,
                    ),
                    Field(
                        name="votes",
                        type=FieldType.INTEGER,
                        nullable=True,
                        default=None,
                        written_by=WrittenBy.OWNER,
                    ),
                    Field(
                        name="done_by",
                        type=FieldType.STRING,
                        nullable=True,
                        default=None,
                        written_by=WrittenBy.OWNER_EFFECTS,
                    ),
                    Field(
                        name="state",
                        type=FieldType.ENUM,
                        options=("open", "done"),
                        written_by=WrittenBy.OWNER,
                    ),
                ),
                workflow=Workflow(
                    state_field="state",
                    initial="open",
                    transitions=(
                        Transition(name="finish", sources=("open",), target="done"),
                        Transition(name="reopen", sources=("done",), target="open"),
                    ),
                ),
                validators=("tracker.open_project", "tracker.record"),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(
                fqn="tracker.project.create",
                entity=PROJECT,
                inputs=("key", "name", "budget"),
                stamps=(Stamp.actor("owner"),),
            ),
            UpdateAction(fqn="tracker.project.edit", entity=PROJECT, patchable=("archived",)),
            CreateAction(
                fqn="tracker.issue.create",
                entity=ISSUE,
                inputs=("project", "title", "assignee", "points"),
                stamps=(Stamp.actor("reporter"),),
                effect="tracker.copy_owner",
            ),
            UpdateAction(
                fqn="tracker.issue.edit", entity=ISSUE, patchable=("title", "assignee", "points")
            ),
            TransitionAction(
                fqn="tracker.issue.done",
                entity=ISSUE,
                transition="finish",
                roles=("member",),
                effect="tracker.finish",
            ),
            TransitionAction(
                fqn="tracker.issue.reopen", entity=ISSUE, transition="reopen", stampable=ANY_FIELD
            ),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn="tracker.issue.mine",
                entity=ISSUE,
                fields=("id", "title", "project_owner", "state"),
                access=ReadAccess(scope=RowScope(field="project_owner")),
            ),
            Projection(fqn="tracker.project.list", entity=PROJECT, fields=("id", "key", "name")),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"tracker.copy_owner": copy_owner, "tracker.finish": finish}

    @hookimpl
    def tessera_validators(self) -> Mapping[str, ValidatorHandler]:
        return {"tracker.open_project": open_project, "tracker.record": self._record}


Meddle = Callable[[ActionContext], Awaitable[None]]


async def _nothing(ctx: ActionContext) -> None:
    return None


class Reports:
    """Another plugin, writing tracker issues from its effect."""

    TESSERA_PLUGIN_API = "1.8"

    def __init__(self) -> None:
        self.meddle: Meddle = _nothing
        self.events: list[Event] = []

    async def _effect(self, ctx: ActionContext) -> None:
        await self.meddle(ctx)

    async def _on_done(self, ctx: EventContext) -> None:
        self.events.append(ctx.event)

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (Entity(fqn=NOTE, fields=(Field(name="text", type=FieldType.STRING),)),)

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(
                fqn="reports.note.create",
                entity=NOTE,
                inputs=("text",),
                effect="reports.meddle",
            ),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"reports.meddle": self._effect}

    @hookimpl
    def tessera_subscribers(self) -> Sequence[Subscriber]:
        return (
            Subscriber(
                name="reports.on_done", handler=self._on_done, actions=("tracker.issue.done",)
            ),
        )
