"""Version 1.0.0: issues with an enum priority, a text estimate, a summary, a severity
and a workflow with a ``wontfix`` state; labels."""

from __future__ import annotations

from collections.abc import Sequence

from plugin_api import (
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    ListOptions,
    Projection,
    Transition,
    TransitionAction,
    Workflow,
    hookimpl,
)

ISSUE = Entity(
    fqn="tracker.issue",
    fields=(
        Field(name="title", type=FieldType.STRING),
        Field(name="summary", type=FieldType.STRING, nullable=True),
        Field(
            name="priority",
            type=FieldType.ENUM,
            options=("LOW", "NORMAL", "HIGH", "URGENT"),
            default="NORMAL",
        ),
        Field(name="estimate", type=FieldType.STRING, nullable=True),
        Field(
            name="severity",
            type=FieldType.ENUM,
            options=("minor", "major", "blocker"),
            default="minor",
        ),
        Field(name="status", type=FieldType.ENUM, options=("new", "triaged", "wontfix", "done")),
    ),
    workflow=Workflow(
        state_field="status",
        initial="new",
        transitions=(
            Transition(name="triage", sources=("new",), target="triaged"),
            Transition(name="reject", sources=("triaged",), target="wontfix"),
            Transition(name="finish", sources=("triaged",), target="done"),
        ),
    ),
)
LABEL = Entity(
    fqn="tracker.label",
    fields=(
        Field(name="name", type=FieldType.STRING),
        Field(name="color", type=FieldType.STRING, nullable=True),
    ),
)
INPUTS = ("title", "summary", "priority", "estimate", "severity")


@hookimpl
def tessera_entities() -> Sequence[Entity]:
    return [ISSUE, LABEL]


@hookimpl
def tessera_actions() -> Sequence[Action]:
    return [
        CreateAction(fqn="tracker.issue.create", entity="tracker.issue", inputs=INPUTS),
        TransitionAction(fqn="tracker.issue.triage", entity="tracker.issue", transition="triage"),
        TransitionAction(fqn="tracker.issue.reject", entity="tracker.issue", transition="reject"),
        TransitionAction(fqn="tracker.issue.finish", entity="tracker.issue", transition="finish"),
        CreateAction(fqn="tracker.label.create", entity="tracker.label", inputs=("name", "color")),
    ]


@hookimpl
def tessera_projections() -> Sequence[Projection]:
    return [
        Projection(
            fqn="tracker.issue.list", entity="tracker.issue", fields=("id", "status", *INPUTS)
        ),
        Projection(
            fqn="tracker.label.list",
            entity="tracker.label",
            fields=("id", "name", "color"),
            listing=ListOptions(sortable=("name",)),
        ),
    ]
