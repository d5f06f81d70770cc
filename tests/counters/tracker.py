"""The in-test plugin of counters and state events: ``tracker.project`` (counters),
``tracker.issue`` (a workflow open -> done -> archived), ``tracker.notice`` (what the state
subscriber records) and ``tracker.probe``, whose create runs one data-API operation chosen
by its inputs (an increment, a read-then-patch, a transition of an issue)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plugin_api import (
    Action,
    ActionContext,
    CreateAction,
    EffectHandler,
    Entity,
    EventContext,
    Field,
    FieldType,
    Projection,
    Subscriber,
    Transition,
    TransitionAction,
    Workflow,
    dry_run_safe,
    hookimpl,
)

PROJECT = "tracker.project"
ISSUE = "tracker.issue"
NOTICE = "tracker.notice"
PROBE = "tracker.probe"


class TrackerPlugin:
    """The plugin object (``tessera.start(extra=[("tracker", TrackerPlugin())])``); the
    non-transactional state subscriber records the events it gets in :attr:`seen`."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=PROJECT,
                fields=(
                    Field(name="name", type=FieldType.STRING),
                    Field(name="issues", type=FieldType.INTEGER, default=0),
                    Field(name="done", type=FieldType.INTEGER, default=0),
                    Field(name="spare", type=FieldType.INTEGER, nullable=True),
                    Field(name="note", type=FieldType.STRING, nullable=True),
                ),
            ),
            Entity(
                fqn=ISSUE,
                fields=(
                    Field(name="title", type=FieldType.STRING),
                    Field(name="project", type=FieldType.REFERENCE, target=PROJECT),
                    Field(name="state", type=FieldType.ENUM, options=("open", "done", "archived")),
                ),
                workflow=Workflow(
                    state_field="state",
                    initial="open",
                    transitions=(
                        Transition(name="finish", sources=("open",), target="done"),
                        Transition(name="archive", sources=("done",), target="archived"),
                    ),
                ),
            ),
            Entity(
                fqn=NOTICE,
                fields=(
                    Field(name="issue", type=FieldType.REFERENCE, target=ISSUE),
                    Field(name="event_id", type=FieldType.STRING),
                    Field(name="cause", type=FieldType.STRING),
                    Field(name="state", type=FieldType.STRING),
                ),
            ),
            Entity(
                fqn=PROBE,
                fields=(
                    Field(name="op", type=FieldType.STRING),
                    Field(name="target", type=FieldType.STRING),
                    Field(name="field", type=FieldType.STRING, nullable=True),
                    Field(name="by", type=FieldType.INTEGER, nullable=True),
                    Field(name="by_text", type=FieldType.STRING, nullable=True),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn=f"{PROJECT}.create", entity=PROJECT, inputs=("name", "spare")),
            CreateAction(
                fqn=f"{ISSUE}.create",
                entity=ISSUE,
                inputs=("title", "project"),
                effect="tracker.count_issue",
            ),
            TransitionAction(
                fqn=f"{ISSUE}.finish",
                entity=ISSUE,
                transition="finish",
                stampable=(),
                effect="tracker.count_done",
            ),
            TransitionAction(
                fqn=f"{ISSUE}.archive", entity=ISSUE, transition="archive", stampable=()
            ),
            CreateAction(
                fqn=f"{PROBE}.run",
                entity=PROBE,
                inputs=("op", "target", "field", "by", "by_text"),
                effect="tracker.probe",
            ),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn=f"{PROJECT}.detail",
                entity=PROJECT,
                fields=("id", "name", "issues", "done", "spare", "note", "_version"),
            ),
            Projection(fqn=f"{ISSUE}.detail", entity=ISSUE, fields=("id", "title", "state")),
            Projection(
                fqn=f"{NOTICE}.list",
                entity=NOTICE,
                fields=("id", "issue", "event_id", "cause", "state"),
            ),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {
            "tracker.count_issue": count_issue,
            "tracker.count_done": count_done,
            "tracker.probe": probe,
        }

    @hookimpl
    def tessera_subscribers(self) -> Sequence[Subscriber]:
        async def remember(ctx: EventContext) -> None:
            self.seen.append(ctx.event)

        return (
            Subscriber(
                name="tracker.notice_state",
                handler=record_state,
                states=(ISSUE,),
                timeout_s=5.0,
                transactional=True,
            ),
            Subscriber(name="tracker.seen", handler=remember, states=(ISSUE,), timeout_s=5.0),
        )


@dry_run_safe
async def count_issue(ctx: ActionContext) -> None:
    """One more issue on the project: an increment, never a conflict."""
    await ctx.data.increment(PROJECT, ctx.changes["project"], "issues")


@dry_run_safe
async def count_done(ctx: ActionContext) -> None:
    assert ctx.subject is not None
    await ctx.data.increment(PROJECT, ctx.subject["project"], "done")


@dry_run_safe
async def probe(ctx: ActionContext) -> None:
    """``op``: ``increment`` (``field``, ``by`` or ``by_text``), ``increment-then-patch``
    (a read, an increment of ``issues``, then a patch of ``note``), ``read-then-patch``
    (``issues`` + 1 the old way), ``transition`` (``field`` names the transition of the
    issue ``target``)."""
    given = ctx.inputs
    op, target, field = given["op"], given["target"], str(given.get("field"))
    by: Any = given.get("by", given.get("by_text"))
    if op == "increment":
        await ctx.data.increment(PROJECT, target, field, by if by is not None else 1)
    elif op == "increment-then-patch":
        await ctx.data.get(PROJECT, target)
        await ctx.data.increment(PROJECT, target, "issues")
        await ctx.data.patch(PROJECT, target, {"note": "patched"})
    elif op == "read-then-patch":
        row = await ctx.data.get(PROJECT, target)
        assert row is not None
        await ctx.data.patch(PROJECT, target, {"issues": row["issues"] + 1})
    elif op == "transition":
        await ctx.data.transition(ISSUE, target, field)
    else:
        raise ValueError(op)


async def record_state(ctx: EventContext) -> None:
    """Record the state change (transactional: once per event)."""
    event = ctx.event
    await ctx.data.create(
        NOTICE,
        {
            "issue": event.subject_id,
            "event_id": event.id,
            "cause": event.action,
            "state": str(event.outputs.get("state")),
        },
    )
