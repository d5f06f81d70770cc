"""Availability over HTTP (docs/http.md, "Availability"): the ``_availability`` of each row of
a ViewSchema 1.2.0 document, and the batch question ``POST {prefix}/availability``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from host.graph.model import CompiledAction, CompiledProjection, Graph
from host.runtime import Actor
from host.runtime.availability import Availability, verdict
from host.runtime.gate import Refusal
from host.runtime.timers import Schedule
from plugin_api.errors import BadRequest, UnknownAction

__all__ = [
    "AVAILABILITY_KEY",
    "MAX_ACTIONS",
    "MAX_SUBJECTS",
    "Annotate",
    "annotated_chunks",
    "question",
    "row_annotator",
]

AVAILABILITY_KEY: Final = "_availability"
"""The key of a row's availability in a 1.2.0 document (no field name starts with ``_``)."""

MAX_SUBJECTS: Final = 100
"""The most subjects one availability question may name."""
MAX_ACTIONS: Final = 20
"""The most actions one availability question may name."""

Rows = list[dict[str, Any]]
Annotate = Callable[[Rows], Awaitable[None]]
"""Adds ``_availability`` to each row of a chunk, in place."""


def row_actions(
    projection: CompiledProjection, offered: frozenset[str] | None
) -> list[CompiledAction]:
    """The projection's actions that take a subject (``subjectRequired``), among the
    ``offered`` ones (``None``: all)."""
    return [
        action
        for action in projection.actions
        if action.kind != "create" and (offered is None or action.fqn in offered)
    ]


def row_annotator(
    availability: Availability,
    projection: CompiledProjection,
    offered: frozenset[str] | None,
    actor: Actor,
    *,
    certain: bool = False,
) -> Annotate:
    """What adds each row's ``_availability``: every row action the document lists, each
    ``{"enabled": true}`` or ``{"enabled": false, "kind", "message"}`` (``certain``:
    ViewSchema 1.5.0, each with its ``certain`` too)."""
    actions = row_actions(projection, offered)
    cell = _verdicts(availability, actions, certain)

    async def annotate(rows: Rows) -> None:
        shown = {str(row["id"]): row for row in rows if row.get("id") is not None}
        table = await availability.table(actions, actor, list(shown), shown)
        for row in rows:
            cells = table.get(str(row.get("id")))
            if cells is not None:
                row[AVAILABILITY_KEY] = {fqn: cell(fqn, r, None) for fqn, r in cells.items()}

    return annotate


def _verdicts(
    availability: Availability, actions: Sequence[CompiledAction], certain: bool
) -> Callable[[str, Refusal, Schedule | None], dict[str, Any]]:
    """The JSON of a cell of one of ``actions`` (with ``certain``: ViewSchema 1.5.0's, and
    the timers it would schedule when given)."""
    sure = {a.fqn: availability.certain(a) for a in actions} if certain else {}
    return lambda fqn, refusal, timers: verdict(refusal, sure.get(fqn), timers)


async def annotated_chunks(rest: AsyncIterator[Rows], annotate: Annotate) -> AsyncIterator[Rows]:
    """``rest``'s chunks, each annotated as it is read."""
    try:
        async for chunk in rest:
            await annotate(chunk)
            yield chunk
    finally:
        aclose = getattr(rest, "aclose", None)
        if aclose is not None:
            await aclose()


def _strings(body: Mapping[str, Any], key: str, cap: int) -> list[str]:
    values = body.get(key)
    if not isinstance(values, list) or not values:
        raise BadRequest(f"'{key}' must be a non-empty array of strings")
    if len(values) > cap:
        raise BadRequest(f"'{key}' names {len(values)} values; at most {cap} are allowed")
    if not all(isinstance(value, str) and value for value in values):
        raise BadRequest(f"'{key}' must be a non-empty array of non-empty strings")
    return list(dict.fromkeys(values))


def _actions(graph: Graph, fqns: Sequence[str]) -> list[CompiledAction]:
    actions = []
    for fqn in fqns:
        action = graph.actions.get(fqn)
        if action is None:
            raise UnknownAction(f"Unknown action '{fqn}'")
        if action.kind == "create":
            raise BadRequest(f"Action '{fqn}' creates a row: it takes no subject")
        actions.append(action)
    entities = sorted({action.entity.fqn for action in actions})
    if len(entities) > 1:
        raise BadRequest(f"'actions' must act on one entity; they act on {', '.join(entities)}")
    return actions


async def question(
    graph: Graph,
    availability: Availability,
    actor: Actor,
    body: Mapping[str, Any],
    *,
    certain: bool = False,
) -> dict[str, Any]:
    """The answer to ``{"subjects": [id, ...], "actions": [fqn, ...]}``: for each subject
    (in order) each action's verdict (``certain``: ViewSchema 1.5.0's, with ``certain``, and
    an enabled transition's ``timers`` on an entity with timers: docs/timers.md).

    :raises BadRequest: a malformed question, past the caps, a create action, or actions
        of several entities.
    :raises UnknownAction: an action not in the graph.
    """
    unknown = sorted(set(body) - {"subjects", "actions"})
    if unknown:
        raise BadRequest(
            f"Unknown key(s) {', '.join(map(repr, unknown))}; allowed: subjects, actions"
        )
    subjects = _strings(body, "subjects", MAX_SUBJECTS)
    actions = _actions(graph, _strings(body, "actions", MAX_ACTIONS))
    if certain:
        table, schedules = await availability.foreseen(actions, actor, subjects)
    else:
        table, schedules = await availability.table(actions, actor, subjects), {}
    cell = _verdicts(availability, actions, certain)
    return {
        "ok": True,
        "availability": {
            subject: {
                fqn: cell(fqn, refusal, schedules.get(subject, {}).get(fqn))
                for fqn, refusal in table[subject].items()
            }
            for subject in subjects
        },
    }
