"""Timers in the graph (issue 41): each mistake is a startup error naming the plugin and the
timer; timers enter the hash, and a graph without them keeps the hash it had."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from host.config import Settings
from host.diagrams import render_entity
from host.graph import GraphError, build_graph
from plugin_api import FieldTimer, StateTimer, SystemActor, Timer, hookimpl

TICKET = "helpdesk.ticket"
AGENT = SystemActor(name="extra.sla", roles=("agent",))
HELPDESK = Settings(plugins_only=("helpdesk",))


class Extra:
    def __init__(self, *timers: Timer) -> None:
        self.timers = timers

    @hookimpl
    def tessera_timers(self) -> Sequence[Timer]:
        return self.timers


def state(**changes: object) -> StateTimer:
    values: dict[str, object] = {
        "name": "extra.ticket.later",
        "entity": TICKET,
        "state": "resolved",
        "after": timedelta(hours=1),
        "action": f"{TICKET}.close",
        "actor": AGENT,
    }
    return StateTimer(**{**values, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("timer", "problem"),
    [
        (state(name="Bad Name"), "dotted lower-case name"),
        (state(entity="nowhere.thing"), "no entity 'nowhere.thing'"),
        (state(state="lost"), "state 'lost' is not a state"),
        (state(after=timedelta(0)), "after must be a positive timedelta"),
        (state(action="nowhere.act"), "no action 'nowhere.act'"),
        (state(action=f"{TICKET}.create"), "creates a row"),
        (state(actor=SystemActor(name="extra.sla", roles=("clerk",))), "holds none of the roles"),
        (state(name=f"{TICKET}.overdue"), "declared twice"),
        (
            FieldTimer(
                name="extra.ticket.f",
                entity=TICKET,
                field="title",
                action=f"{TICKET}.escalate",
                actor=AGENT,
            ),
            "is not a datetime field",
        ),
    ],
)
def test_a_timer_that_cannot_hold_is_a_startup_error(timer: Timer, problem: str) -> None:
    with pytest.raises(GraphError) as raised:
        build_graph(HELPDESK, extra=[("extra", Extra(timer))])
    (message,) = raised.value.errors
    assert "plugin 'extra'" in message and f"timer {timer.name!r}" in message
    assert problem in message


def test_timers_enter_the_hash() -> None:
    plain = build_graph(HELPDESK, extra=[("extra", Extra())])
    more = build_graph(HELPDESK, extra=[("extra", Extra(state()))])
    assert b'"timers":[' in plain.canonical and plain.hash != more.hash
    assert sorted(more.timers.by_name) == [
        "extra.ticket.later",
        f"{TICKET}.autoclose",
        f"{TICKET}.overdue",
    ]


def test_a_graph_without_timers_has_no_timers_key() -> None:
    graph = build_graph(Settings(plugins_only=("billing",)))
    assert not graph.timers.by_name and b'"timers"' not in graph.canonical


def test_the_workflow_diagram_draws_the_state_timers() -> None:
    drawn = render_entity(build_graph(HELPDESK), TICKET, "mermaid").splitlines()
    assert "    resolved --> closed: after 7d: close (timer helpdesk.ticket.autoclose)" in drawn
