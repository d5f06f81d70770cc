"""Workflow diagrams of a compiled graph, as Mermaid state diagrams or Graphviz DOT.

Each entity with a workflow gets one diagram: its states (the initial one marked, the ones
without a way out drawn as final), and one edge per transition source labelled with the
actions that perform it and their roles (``start (agent)``). A transition no action performs
is drawn with its name and ``no action``. Output is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from host.graph.model import CompiledAction, CompiledEntity, Graph
from host.graph.timerdefs import Timers
from plugin_api.timers import CronJob, StateTimer

__all__ = ["FORMATS", "Edge", "edges", "render", "render_entity"]


@dataclass(frozen=True, slots=True)
class Edge:
    """One drawn move: ``source`` -> ``target`` labelled ``label``."""

    source: str
    target: str
    label: str


def _action_label(action: CompiledAction) -> str:
    roles = ", ".join(action.definition.roles) or "any role"
    return f"{action.name} ({roles})"


def edges(
    entity: CompiledEntity, actions: Mapping[str, CompiledAction], timers: Timers | None = None
) -> list[Edge]:
    """The edges of ``entity``'s workflow, in transition and source order, then those its
    state timers take (issue 41)."""
    workflow = entity.workflow
    assert workflow is not None
    by_transition: dict[str, list[str]] = {}
    for fqn in sorted(actions):
        action = actions[fqn]
        if action.entity.fqn == entity.fqn and action.transition is not None:
            by_transition.setdefault(action.transition.name, []).append(_action_label(action))
    found = []
    for transition in workflow.transitions:
        labels = by_transition.get(transition.name) or [f"{transition.name} (no action)"]
        for source in transition.sources:
            found.append(Edge(source, transition.target, ", ".join(labels)))
    return found + timer_edges(entity, actions, timers)


def _duration(after: timedelta) -> str:
    seconds = int(after.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{after.total_seconds():g}s"


def timer_edges(
    entity: CompiledEntity, actions: Mapping[str, CompiledAction], timers: Timers | None
) -> list[Edge]:
    """One edge per state timer of ``entity`` whose action is a transition out of its state:
    ``resolved --> closed: after 7d: close (timer helpdesk.ticket.autoclose)``; one per cron
    job creating its rows: ``[*] --> open: cron 0 2 * * *: create (job helpdesk.digest)``."""
    found = []
    workflow = entity.workflow
    for job in timers.cron if timers is not None else ():
        if (
            workflow is not None
            and job.entity == entity.fqn
            and isinstance(job.definition, CronJob)
        ):
            label = f"cron {job.definition.schedule}: {actions[job.action].name} (job {job.name})"
            found.append(Edge("[*]", workflow.initial, label))
    for timer in timers.by_entity.get(entity.fqn, ()) if timers is not None else ():
        definition, action = timer.definition, actions[timer.action]
        if not isinstance(definition, StateTimer) or action.transition is None:
            continue
        if definition.state in action.transition.sources:
            label = f"after {_duration(definition.after)}: {action.name} (timer {timer.name})"
            found.append(Edge(definition.state, action.transition.target, label))
    return found


def _final_states(entity: CompiledEntity) -> list[str]:
    workflow = entity.workflow
    assert workflow is not None
    leaving = {source for t in workflow.transitions for source in t.sources}
    return [state for state in workflow.states if state not in leaving]


def _mermaid(entity: CompiledEntity, drawn: list[Edge]) -> str:
    workflow = entity.workflow
    assert workflow is not None
    lines = ["---", f"title: {entity.fqn}", "---", "stateDiagram-v2", "    direction LR"]
    lines.append(f"    [*] --> {workflow.initial}")
    lines += [f"    {edge.source} --> {edge.target}: {edge.label}" for edge in drawn]
    lines += [f"    {state} --> [*]" for state in _final_states(entity)]
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dot(entity: CompiledEntity, drawn: list[Edge]) -> str:
    workflow = entity.workflow
    assert workflow is not None
    final = set(_final_states(entity))
    lines = [
        f"digraph {_quote(entity.fqn)} {{",
        "    rankdir=LR;",
        f"    label={_quote(entity.fqn)};",
        "    node [shape=box, style=rounded];",
        '    "[*]" [shape=point, label=""];',
    ]
    for state in workflow.states:
        extra = ", peripheries=2" if state in final else ""
        lines.append(f"    {_quote(state)} [label={_quote(state)}{extra}];")
    lines.append(f'    "[*]" -> {_quote(workflow.initial)};')
    lines += [
        f"    {_quote(e.source)} -> {_quote(e.target)} [label={_quote(e.label)}];" for e in drawn
    ]
    lines.append("}")
    return "\n".join(lines) + "\n"


_RENDERERS: Final[Mapping[str, Callable[[CompiledEntity, list[Edge]], str]]] = {
    "mermaid": _mermaid,
    "dot": _dot,
}
FORMATS: Final = tuple(_RENDERERS)
"""The diagram formats: ``mermaid`` and ``dot``."""


def render_entity(graph: Graph, fqn: str, fmt: str) -> str:
    """The diagram of entity ``fqn`` (which must have a workflow) in format ``fmt``."""
    entity = graph.entities[fqn]
    return _RENDERERS[fmt](entity, edges(entity, graph.actions, graph.timers))


def render(graph: Graph, fmt: str) -> str:
    """One diagram per entity with a workflow, in FQN order, separated by a blank line."""
    return "\n".join(
        render_entity(graph, fqn, fmt)
        for fqn in sorted(graph.entities)
        if graph.entities[fqn].workflow is not None
    )
