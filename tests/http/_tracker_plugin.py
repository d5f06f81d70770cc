"""An in-test issue tracker for relations (docs/writing-plugins.md, "Relations"): projects with
a display field and a read floor, issues referencing them, a board showing, filtering and
sorting by the project's key, a scope through the reference and an OR scope.

The project's read floor: a ``member`` or a ``lead`` reads projects, a member only those not
``secret`` (read policy ``trk.no_secret``). Whoever else reads a projection of issues reads
null in every ``project.*`` field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugin_api import (
    Action,
    ActionContext,
    AnyOf,
    Condition,
    CreateAction,
    EffectHandler,
    Entity,
    Field,
    FieldType,
    Filter,
    ListOptions,
    Projection,
    ReadAccess,
    ReadContext,
    ReadPolicyHandler,
    ReadPolicyResult,
    RowScope,
    UpdateAction,
    hookimpl,
)

PROJECT = "trk.project"
ISSUE = "trk.issue"
BOARD = "trk.issue.board"
OWNED = "trk.issue.owned"
MINE = "trk.issue.mine"
EITHER = "trk.issue.either"
PROJECTS = "trk.project.list"


def no_secret(context: ReadContext) -> ReadPolicyResult:
    """Members read the projects that are not secret; leads read them all."""
    if "lead" in context.roles:
        return True
    return Condition(field="secret", operator="eq", value=False)


def reported_or_owned(context: ReadContext) -> ReadPolicyResult:
    """The issues the reader reported, or of a project the reader owns (an OR through a
    reference)."""
    return AnyOf(
        conditions=(
            Condition(field="reporter", value=context.actor_id),
            Condition(field="project.owner", value=context.actor_id),
        )
    )


async def find_followed(ctx: ActionContext) -> None:
    """The data API names an entity's own fields: a followed one is refused."""
    await ctx.data.find(ISSUE, Condition(field="project.key", value="CORE"))


class TrackerPlugin:
    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return (
            Entity(
                fqn=PROJECT,
                display="key",
                fields=(
                    Field(name="key", type=FieldType.STRING),
                    Field(name="name", type=FieldType.STRING),
                    Field(name="owner", type=FieldType.STRING),
                    Field(name="secret", type=FieldType.BOOLEAN, default=False),
                ),
                access=ReadAccess(roles=("member", "lead"), policies=("trk.no_secret",)),
            ),
            Entity(
                fqn=ISSUE,
                display="title",
                fields=(
                    Field(name="title", type=FieldType.STRING),
                    Field(name="project", type=FieldType.REFERENCE, target=PROJECT),
                    Field(name="reporter", type=FieldType.STRING),
                    Field(name="assignee", type=FieldType.STRING, nullable=True),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(
                fqn="trk.project.create",
                entity=PROJECT,
                inputs=("key", "name", "owner", "secret"),
            ),
            CreateAction(
                fqn="trk.project.probe",
                entity=PROJECT,
                inputs=("key", "name", "owner", "secret"),
                effect="trk.find_followed",
            ),
            CreateAction(
                fqn="trk.issue.create",
                entity=ISSUE,
                inputs=("title", "project", "reporter", "assignee"),
            ),
            UpdateAction(fqn="trk.issue.move", entity=ISSUE, patchable=("project",)),
        )

    @hookimpl
    def tessera_effects(self) -> Mapping[str, EffectHandler]:
        return {"trk.find_followed": find_followed}

    @hookimpl
    def tessera_read_policies(self) -> Mapping[str, ReadPolicyHandler]:
        return {"trk.no_secret": no_secret, "trk.reported_or_owned": reported_or_owned}

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn=BOARD,
                entity=ISSUE,
                fields=("id", "title", "project", "project.key", "project.name"),
                listing=ListOptions(
                    filters=(
                        Filter(field="project.key"),
                        Filter(field="project"),
                        Filter(field="project.name", operators=("contains",)),
                    ),
                    sortable=("project.key", "title"),
                    default_sort=("project.key",),
                    search=("title",),
                ),
            ),
            Projection(
                fqn=OWNED,
                entity=ISSUE,
                fields=("id", "title", "project", "project.owner"),
                access=ReadAccess(scope=RowScope(field="project.owner", exempt=("lead",))),
                listing=ListOptions(sortable=("title",)),
            ),
            Projection(
                fqn=MINE,
                entity=ISSUE,
                fields=("id", "title", "reporter", "assignee"),
                access=ReadAccess(scope=RowScope(fields=("reporter", "assignee"))),
                listing=ListOptions(sortable=("title",), filters=(Filter(field="title"),)),
            ),
            Projection(
                fqn=EITHER,
                entity=ISSUE,
                fields=("id", "title", "reporter", "project.owner"),
                access=ReadAccess(policies=("trk.reported_or_owned",)),
                listing=ListOptions(sortable=("title",)),
            ),
            Projection(
                fqn=PROJECTS,
                entity=PROJECT,
                fields=("id", "key", "name", "owner", "secret"),
            ),
        )
