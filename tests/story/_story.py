"""The issue tracker of issue 30's story in one place (the parts are tested in depth in
tests/rules, tests/http/test_http_relations.py and tests/counters): projects with a display
key, issues referencing them, rules that hold on every write path, a board through the
reference with an OR scope, a counter on the project, and a subscriber to state changes.

``Outsider`` is another installed plugin whose effect (chosen by the test) writes tracker rows
through ``ctx.data``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from plugin_api import (
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
    Filter,
    ListOptions,
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
    hookimpl,
)

PROJECT = "story.project"
ISSUE = "story.issue"
BOARD = "story.issue.board"
OWNED = "story.issue.of_my_projects"


async def open_project(write: RowWrite) -> None:
    """No issue of an archived project is created or changed, whoever writes it."""
    project = await write.data.get(PROJECT, write.after["project"])
    if project is not None and project["archived"]:
        raise BadRequest(f"Project {project['key']} is archived")


async def count_done(ctx: ActionContext) -> None:
    """The project counts its done issues: an increment never conflicts with another."""
    assert ctx.subject is not None
    await ctx.data.increment(PROJECT, ctx.subject["project"], "done_count")


class Story:
    TESSERA_PLUGIN_API = "1.8"

    def __init__(self) -> None:
        self.state_changes: list[Event] = []

    async def _on_state(self, ctx: EventContext) -> None:
        self.state_changes.append(ctx.event)

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=PROJECT,
                display="key",
                fields=(
                    Field(name="key", type=FieldType.STRING, pattern=r"[A-Z]{2,8}"),
                    Field(name="owner", type=FieldType.STRING, written_by=WrittenBy.OWNER),
                    Field(name="archived", type=FieldType.BOOLEAN, default=False),
                    Field(
                        name="done_count",
                        type=FieldType.INTEGER,
                        default=0,
                        minimum=0,
                        written_by=WrittenBy.OWNER_EFFECTS,
                    ),
                ),
            ),
            Entity(
                fqn=ISSUE,
                fields=(
                    Field(name="project", type=FieldType.REFERENCE, target=PROJECT),
                    Field(name="title", type=FieldType.STRING, min_length=3),
                    Field(name="reporter", type=FieldType.STRING, written_by=WrittenBy.OWNER),
                    Field(name="assignee", type=FieldType.STRING, nullable=True, default=None),
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
                    transitions=(Transition(name="finish", sources=("open",), target="done"),),
                ),
                validators=("story.open_project",),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(
                fqn="story.project.create",
                entity=PROJECT,
                inputs=("key",),
                stamps=(Stamp.actor("owner"),),
            ),
            UpdateAction(fqn="story.project.archive", entity=PROJECT, patchable=("archived",)),
            CreateAction(
                fqn="story.issue.create",
                entity=ISSUE,
                inputs=("project", "title", "assignee"),
                stamps=(Stamp.actor("reporter"),),
            ),
            TransitionAction(
                fqn="story.issue.finish",
                entity=ISSUE,
                transition="finish",
                roles=("member",),
                effect="story.count_done",
            ),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"story.count_done": count_done}

    @hookimpl
    def tessera_validators(self) -> Mapping[str, ValidatorHandler]:
        return {"story.open_project": open_project}

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn=BOARD,
                entity=ISSUE,
                fields=("id", "title", "project", "project.key", "state", "reporter"),
                listing=ListOptions(
                    filters=(Filter(field="project.key"),),
                    sortable=("project.key", "title"),
                    default_sort=("project.key", "title"),
                ),
                access=ReadAccess(scope=RowScope(fields=("reporter", "assignee"))),
            ),
            Projection(
                fqn=OWNED,
                entity=ISSUE,
                fields=("id", "title", "project.key"),
                access=ReadAccess(scope=RowScope(field="project.owner")),
            ),
            Projection(
                fqn="story.project.detail", entity=PROJECT, fields=("id", "key", "done_count")
            ),
        )

    @hookimpl
    def tessera_subscribers(self) -> Sequence[Subscriber]:
        return (Subscriber(name="story.on_state", handler=self._on_state, states=(ISSUE,)),)


Meddle = Callable[[ActionContext], Awaitable[Any]]


async def _nothing(ctx: ActionContext) -> None:
    return None


class Outsider:
    """Another plugin: its note's effect is whatever the test sets in :attr:`meddle`."""

    TESSERA_PLUGIN_API = "1.8"

    def __init__(self) -> None:
        self.meddle: Meddle = _nothing

    async def _effect(self, ctx: ActionContext) -> None:
        await self.meddle(ctx)

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (Entity(fqn="outsider.note", fields=(Field(name="text", type=FieldType.STRING),)),)

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(
                fqn="outsider.note.create",
                entity="outsider.note",
                inputs=("text",),
                effect="outsider.meddle",
            ),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"outsider.meddle": self._effect}
