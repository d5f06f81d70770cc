"""Version 2.0.0: the priority is an integer (a mapping converts the old options), the
estimate an integer of days (a function converts the text), ``summary`` is renamed
``headline``, the severity ``blocker`` and the state ``wontfix`` are gone (mapped), and the
``tracker.label`` entity is renamed ``tracker.tag``."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from plugin_api import (
    Action,
    CannotConvert,
    ConvertField,
    CreateAction,
    Entity,
    Field,
    FieldType,
    JSONValue,
    ListOptions,
    MapOptions,
    MapStates,
    Migration,
    Projection,
    RenameEntity,
    RenameField,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
    hookimpl,
)

TESSERA_PLUGIN_API = "1.4"  # tessera_migrations

ISSUE = Entity(
    fqn="tracker.issue",
    fields=(
        Field(name="title", type=FieldType.STRING),
        Field(name="headline", type=FieldType.STRING, nullable=True),
        Field(name="priority", type=FieldType.INTEGER, default=3),
        Field(name="estimate", type=FieldType.INTEGER, nullable=True),
        Field(name="severity", type=FieldType.ENUM, options=("minor", "major"), default="minor"),
        Field(name="status", type=FieldType.ENUM, options=("new", "triaged", "done")),
    ),
    workflow=Workflow(
        state_field="status",
        initial="new",
        transitions=(
            Transition(name="triage", sources=("new",), target="triaged"),
            Transition(name="finish", sources=("triaged",), target="done"),
        ),
    ),
)
TAG = Entity(
    fqn="tracker.tag",
    fields=(
        Field(name="name", type=FieldType.STRING),
        Field(name="color", type=FieldType.STRING, nullable=True),
    ),
)
INPUTS = ("title", "headline", "priority", "estimate", "severity")
_calls = 0


def days(value: JSONValue) -> JSONValue:
    """``"3d"`` or ``"3"`` -> 3; anything else cannot be converted.

    ``TRACKER_SLOW_AFTER=N`` (tests of an interrupted apply) makes every call after the
    N-th take 0.2 s.
    """
    global _calls
    _calls += 1
    slow_after = os.environ.get("TRACKER_SLOW_AFTER")
    if slow_after is not None and _calls > int(slow_after):
        time.sleep(0.2)
    text = str(value).strip().removesuffix("d")
    if not text.isdigit():
        raise CannotConvert(f"{value!r} is not a number of days")
    return int(text)


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return [ISSUE, TAG]


@hookimpl
def tessera_migrations() -> Sequence[Migration]:
    return [
        ConvertField(
            entity="tracker.issue",
            field="priority",
            from_type=FieldType.ENUM,
            to_type=FieldType.INTEGER,
            mapping={"LOW": 1, "NORMAL": 2, "HIGH": 3, "URGENT": 4},
        ),
        ConvertField(
            entity="tracker.issue",
            field="estimate",
            from_type=FieldType.STRING,
            to_type=FieldType.INTEGER,
            function=days,
        ),
        RenameField(entity="tracker.issue", old="summary", new="headline"),
        MapOptions(entity="tracker.issue", field="severity", mapping={"blocker": "major"}),
        MapStates(entity="tracker.issue", mapping={"wontfix": "done"}),
        RenameEntity(old="tracker.label", new="tracker.tag"),
    ]


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return [
        CreateAction(fqn="tracker.issue.create", entity="tracker.issue", inputs=INPUTS),
        TransitionAction(fqn="tracker.issue.triage", entity="tracker.issue", transition="triage"),
        TransitionAction(fqn="tracker.issue.finish", entity="tracker.issue", transition="finish"),
        UpdateAction(
            fqn="tracker.issue.edit", entity="tracker.issue", patchable=("priority", "headline")
        ),
        CreateAction(fqn="tracker.tag.create", entity="tracker.tag", inputs=("name", "color")),
    ]


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return [
        Projection(
            fqn="tracker.issue.list", entity="tracker.issue", fields=("id", "status", *INPUTS)
        ),
        Projection(
            fqn="tracker.tag.list",
            entity="tracker.tag",
            fields=("id", "name", "color"),
            listing=ListOptions(sortable=("name",)),
        ),
    ]
