"""The tracker plugin: projects, their issues, and comments on issues.

The board lists issues by project and state, newest activity first; each issue counts its
comments (a subscriber adds one per committed comment, exactly once).
"""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import (
    Action,
    CreateAction,
    Entity,
    EventContext,
    Field,
    FieldType,
    Filter,
    ListOptions,
    Migration,
    Projection,
    ReadAccess,
    RenameField,
    Stamp,
    Subscriber,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    hookimpl,
)

TESSERA_PLUGIN_API = "1.5"  # tessera_subscribers

PROJECT = "tracker.project"
ISSUE = "tracker.issue"
COMMENT = "tracker.comment"
MEMBERS = ReadAccess(roles=("member", "admin"))

project = Entity(
    fqn=PROJECT,
    fields=(
        Field(name="key", type=FieldType.STRING, max_length=10),
        Field(name="name", type=FieldType.STRING, max_length=100),
        Field(name="lead", type=FieldType.STRING, nullable=True),
    ),
)

issue = Entity(
    fqn=ISSUE,
    fields=(
        Field(name="project", type=FieldType.REFERENCE, target=PROJECT),
        Field(name="title", type=FieldType.STRING, max_length=200),
        Field(name="body", type=FieldType.STRING, nullable=True),
        Field(name="state", type=FieldType.ENUM, options=("open", "doing", "closed")),
        Field(name="reporter", type=FieldType.STRING, nullable=True),
        Field(name="assignee", type=FieldType.STRING, nullable=True),
        Field(name="comments", type=FieldType.INTEGER, default=0),
        Field(name="closed_at", type=FieldType.DATETIME, nullable=True),
    ),
    workflow=Workflow(
        state_field="state",
        initial="open",
        transitions=(
            Transition(
                name="start", sources=("open",), target="doing", stamps=(Stamp.actor("assignee"),)
            ),
            Transition(
                name="close",
                sources=("open", "doing"),
                target="closed",
                stamps=(Stamp.now("closed_at"),),
            ),
            Transition(
                name="reopen",
                sources=("closed",),
                target="open",
                stamps=(Stamp.literal("closed_at", None),),
            ),
        ),
    ),
)

comment = Entity(
    fqn=COMMENT,
    fields=(
        Field(name="issue", type=FieldType.REFERENCE, target=ISSUE),
        Field(name="author", type=FieldType.STRING, nullable=True),
        Field(name="text", type=FieldType.STRING),
    ),
)


def _move(name: str) -> TransitionAction:
    return TransitionAction(
        fqn=f"{ISSUE}.{name}", entity=ISSUE, transition=name, stampable=(), roles=("member",)
    )


ACTIONS: tuple[Action, ...] = (
    CreateAction(
        fqn=f"{PROJECT}.create", entity=PROJECT, inputs=("key", "name", "lead"), roles=("admin",)
    ),
    CreateAction(
        fqn=f"{ISSUE}.open",
        entity=ISSUE,
        inputs=("project", "title", "body"),
        stamps=(Stamp.actor("reporter"),),
        roles=("member",),
    ),
    UpdateAction(
        fqn=f"{ISSUE}.edit",
        entity=ISSUE,
        patchable=("title", "body", "assignee"),
        roles=("member",),
    ),
    _move("start"),
    _move("close"),
    _move("reopen"),
    CreateAction(
        fqn=f"{COMMENT}.add",
        entity=COMMENT,
        inputs=("issue", "text"),
        stamps=(Stamp.actor("author"),),
        roles=("member",),
    ),
)

PROJECTIONS: tuple[Projection, ...] = (
    Projection(
        fqn=f"{PROJECT}.list",
        entity=PROJECT,
        fields=("id", "key", "name", "lead"),
        actions=(f"{PROJECT}.create",),
        listing=ListOptions(sortable=("key", "created_at"), default_sort=("key",)),
    ),
    # The board: what is going on, most recently touched first.
    Projection(
        fqn=f"{ISSUE}.board",
        entity=ISSUE,
        fields=("id", "project", "title", "state", "assignee", "comments"),
        actions=(f"{ISSUE}.open", f"{ISSUE}.start", f"{ISSUE}.close"),
        listing=ListOptions(
            filters=(
                Filter(field="project"),
                Filter(field="state", operators=("eq", "in")),
                Filter(field="assignee", operators=("eq", "null")),
                Filter(field="created_at", operators=("gte", "lt")),
            ),
            sortable=("created_at", "updated_at", "title"),
            default_sort=("-updated_at",),
            search=("title", "body"),
            default_page_size=25,
        ),
        access=MEMBERS,
    ),
    Projection(
        fqn=f"{ISSUE}.detail",
        entity=ISSUE,
        fields=(
            "id",
            "project",
            "title",
            "body",
            "state",
            "reporter",
            "assignee",
            "comments",
            "closed_at",
            "created_at",
            "updated_at",
            "_version",
        ),
        actions=tuple(f"{ISSUE}.{name}" for name in ("edit", "start", "close", "reopen")),
        access=MEMBERS,
    ),
    Projection(
        fqn=f"{COMMENT}.thread",
        entity=COMMENT,
        fields=("id", "issue", "author", "text"),
        actions=(f"{COMMENT}.add",),
        listing=ListOptions(
            filters=(Filter(field="issue"), Filter(field="created_at", operators=("gte",))),
            sortable=("created_at",),
            default_sort=("created_at",),
        ),
        access=MEMBERS,
    ),
)


async def count_comment(ctx: EventContext) -> None:
    """One more comment on the issue: written with the delivery mark, so counted once."""
    added = await ctx.data.get(COMMENT, ctx.event.subject_id)
    if added is None:
        return
    commented = await ctx.data.get(ISSUE, added["issue"])
    if commented is not None:
        await ctx.data.patch(ISSUE, commented["id"], {"comments": commented["comments"] + 1})


SUBSCRIBERS = (
    Subscriber(
        name="tracker.count_comments",
        handler=count_comment,
        actions=(f"{COMMENT}.add",),
        transactional=True,
        timeout_s=2.0,
    ),
)


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return (project, issue, comment)


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return ACTIONS


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return PROJECTIONS


@hookimpl
def tessera_subscribers() -> Sequence[Subscriber]:
    return SUBSCRIBERS


@hookimpl
def tessera_migrations() -> Sequence[Migration]:
    # Release 1.2 called the body "description"; databases of that release keep their text.
    return (RenameField(entity=ISSUE, old="description", new="body"),)
