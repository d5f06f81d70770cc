"""``tessera graph`` lists which plugin may run which action of another, and read which entity
whole (issue 39); a declaration that cannot hold is a startup error naming the plugin; the
graph hash of plugins that declare nothing new is unchanged."""

from __future__ import annotations

import pytest

from host.graph import GraphError, build_graph
from host.graph.grants import describe_grants
from plugin_api import Authority, RunsAction, SystemRead

from ._plugins import PLUGINS, REQUEST, Reacher


def test_the_graph_lists_each_plugins_grants() -> None:
    graph = build_graph(extra=PLUGINS, entry_points=False)
    assert describe_grants(graph.grants) == [
        {
            "plugin": "helper",
            "bound": True,
            "runs": [
                {"action": f"{REQUEST}.approve", "as": "plugin", "roles": ["approver"]},
                {"action": f"{REQUEST}.cancel", "as": "caller", "roles": []},
            ],
            "reads": [REQUEST],
        }
    ]
    assert not graph.grants["legacy"].held and graph.grants["sneaky"].held


@pytest.mark.parametrize(
    ("grant", "problem"),
    [
        (RunsAction(action=f"{REQUEST}.approve", authority=Authority.CALLER), "delegation"),
        (RunsAction(action="purchasing.request.nope"), "no such action"),
        (RunsAction(action="bad.job.survey"), "the plugin's own action"),
        (RunsAction(action=f"{REQUEST}.approve", roles=("no way",)), "not role names"),
        (SystemRead(entity="nowhere.thing"), "no entity 'nowhere.thing'"),
    ],
)
def test_a_declaration_that_cannot_hold_is_a_startup_error(
    grant: RunsAction | SystemRead, problem: str
) -> None:
    bad = Reacher("bad", "1.9", (grant,))
    with pytest.raises(GraphError) as raised:
        build_graph(extra=[PLUGINS[0], ("bad", bad)], entry_points=False)
    (message,) = raised.value.errors
    assert message.startswith("plugin 'bad': ") and problem in message


def test_accepts_delegation_left_at_its_default_keeps_the_hash() -> None:
    canonical = build_graph(extra=PLUGINS[:1], entry_points=False).canonical
    assert canonical.count(b'"accepts_delegation"') == 1  # cancel's, not approve's or create's
