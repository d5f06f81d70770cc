"""The ``workflow`` key of a ViewSchema 1.3.0 document (docs/http.md, "ViewSchema 1.3.0"):
the entity's states and transitions, so a renderer can draw state badges and the diagram
from the document instead of guessing them from a field name."""

from __future__ import annotations

from typing import Any

from host.graph.model import CompiledProjection
from host.http.viewschema import humanise

__all__ = ["workflow_descriptor"]


def workflow_descriptor(projection: CompiledProjection) -> dict[str, Any] | None:
    """The workflow of the projection's entity (``None`` without one); each transition
    names the projection's actions that perform it."""
    workflow = projection.entity.workflow
    if workflow is None:
        return None
    leaving = {source for transition in workflow.transitions for source in transition.sources}
    performing: dict[str, list[str]] = {}
    for action in projection.actions:
        if action.transition is not None:
            performing.setdefault(action.transition.name, []).append(action.fqn)
    return {
        "field": workflow.state_field,
        "initial": workflow.initial,
        "states": [
            {"name": state, "label": humanise(state), "final": state not in leaving}
            for state in workflow.states
        ],
        "transitions": [
            {
                "name": transition.name,
                "from": list(transition.sources),
                "to": transition.target,
                "actions": performing.get(transition.name, []),
            }
            for transition in workflow.transitions
        ],
    }
