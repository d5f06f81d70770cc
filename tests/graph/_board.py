"""A board plugin as an author wrote it before plugin API 1.7: its lists filter, sort and
search fields they do not show.

``board.card.list`` filters on ``created_at`` and ``note`` and sorts on ``created_at`` and
``updated_at`` without showing them: ``created_at`` is no secret (every row's id carries it),
and ``board.card.detail`` shows the others to anyone of the tenant. ``board.card.ranked``
filters and sorts on ``rank`` and searches ``memo``, which only the bosses'
``board.card.admin`` shows: secrets of the bosses from every other reader of the ranked list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

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
    UpdateAction,
    hookimpl,
)

CARD = "board.card"
BOARD = f"{CARD}.list"
RANKED = f"{CARD}.ranked"
EDITABLE = ("title", "note", "memo", "rank")

ENTITIES = (
    Entity(
        fqn=CARD,
        fields=(
            Field(name="title", type=FieldType.STRING),
            Field(name="note", type=FieldType.STRING, nullable=True),
            Field(name="memo", type=FieldType.STRING, nullable=True),
            Field(name="rank", type=FieldType.INTEGER, nullable=True),
        ),
    ),
)
ACTIONS: tuple[Action, ...] = (
    CreateAction(fqn=f"{CARD}.create", entity=CARD, inputs=EDITABLE),
    UpdateAction(fqn=f"{CARD}.edit", entity=CARD, patchable=EDITABLE),
)
PROJECTIONS = (
    Projection(
        fqn=BOARD,
        entity=CARD,
        fields=("id", "title"),
        listing=ListOptions(
            filters=(
                Filter(field="created_at", operators=("gte", "lt")),
                Filter(field="note", operators=("eq", "contains")),
            ),
            sortable=("created_at", "updated_at"),
            default_sort=("-updated_at",),
        ),
    ),
    Projection(
        fqn=f"{CARD}.detail",
        entity=CARD,
        fields=("id", "title", "note", "created_at", "updated_at"),
    ),
    Projection(
        fqn=RANKED,
        entity=CARD,
        fields=("id", "title"),
        listing=ListOptions(
            filters=(Filter(field="rank"), Filter(field="title")),
            sortable=("rank",),
            default_sort=("rank",),
            search=("title", "memo"),
        ),
    ),
    Projection(
        fqn=f"{CARD}.admin",
        entity=CARD,
        fields=("id", "title", "memo", "rank"),
        access=ReadAccess(roles=("boss",)),
    ),
)


class Board:
    """The board plugin, requiring plugin API ``api`` (``None``: requiring nothing), with
    other ``projections`` or with ``roles`` required by its edit action."""

    def __init__(
        self,
        api: str | None,
        projections: tuple[Projection, ...] = PROJECTIONS,
        roles: tuple[str, ...] = (),
    ) -> None:
        if api is not None:
            self.TESSERA_PLUGIN_API = api
        self._projections = projections
        self._actions = (ACTIONS[0], dataclasses.replace(ACTIONS[1], roles=roles))

    @hookimpl
    def tessera_entities(self) -> Sequence[Entity]:
        return ENTITIES

    @hookimpl
    def tessera_actions(self) -> Sequence[Action]:
        return self._actions

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return self._projections


BOARD_1_5 = Board("1.5")
"""The plugin as published for plugin API 1.5 (module level: shared hosts keep it)."""
