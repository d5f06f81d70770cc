"""The host with the installed plugins plus a small tracker for bench/relations.py: projects
(display field ``key``) and issues referencing them, one list of issues without a followed
field and one showing, filtering and sorting by ``project.key``; and the same board behind a
project read floor (``rel.project`` twin with ``access``) to price the floor's join.

Served like the host: ``TESSERA_DATABASE_URL=... python -m hypercorn apps.relations:app``.
"""

from __future__ import annotations

from collections.abc import Sequence

from host.config import Settings
from host.http import create_app
from plugin_api import (
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    Filter,
    ListOptions,
    Projection,
    ReadAccess,
    RowScope,
    hookimpl,
)

LISTING = ListOptions(
    filters=(Filter(field="project.key"),),
    sortable=("title", "project.key"),
    max_page_size=200,
)


class Relations:
    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        project_fields = (
            Field(name="key", type=FieldType.STRING),
            Field(name="owner", type=FieldType.STRING),
        )
        return (
            Entity(fqn="rel.project", display="key", fields=project_fields),
            Entity(
                fqn="rel.guarded",
                display="key",
                fields=project_fields,
                access=ReadAccess(scope=RowScope(field="owner", exempt=("lead",))),
            ),
            Entity(
                fqn="rel.issue",
                fields=(
                    Field(name="title", type=FieldType.STRING),
                    Field(name="project", type=FieldType.REFERENCE, target="rel.project"),
                    Field(name="guarded", type=FieldType.REFERENCE, target="rel.guarded"),
                ),
            ),
        )

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return (
            CreateAction(fqn="rel.project.create", entity="rel.project", inputs=("key", "owner")),
            CreateAction(fqn="rel.guarded.create", entity="rel.guarded", inputs=("key", "owner")),
            CreateAction(
                fqn="rel.issue.create", entity="rel.issue", inputs=("title", "project", "guarded")
            ),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn="rel.issue.plain",
                entity="rel.issue",
                fields=("id", "title", "project"),
                listing=ListOptions(sortable=("title",), max_page_size=200),
            ),
            Projection(
                fqn="rel.issue.board",
                entity="rel.issue",
                fields=("id", "title", "project", "project.key"),
                listing=LISTING,
            ),
            Projection(
                fqn="rel.issue.guarded",
                entity="rel.issue",
                fields=("id", "title", "guarded", "guarded.key"),
                listing=ListOptions(sortable=("title",), max_page_size=200),
            ),
        )


app = create_app(Settings.from_env(), extra_plugins=[("relations", Relations())])
