"""Which subscribers want which events: by action and entity, and (plugin API 1.8) by the
changes of an entity's workflow state, whether a transition action or the data API made them.
"""

from __future__ import annotations

from host.graph.model import CompiledAction, Graph
from host.webhook_settings import Webhook
from plugin_api.events import Subscriber

__all__ = ["state_routes", "wants_event"]


def wants_event(target: Subscriber | Webhook, action: CompiledAction) -> bool:
    """Whether ``target`` wants the events of ``action``: by its actions or entities, or as
    a transition of an entity whose state changes it follows."""
    if target.wants(action.fqn, action.entity.fqn):
        return True
    return (
        isinstance(target, Subscriber)
        and action.kind == "transition"
        and target.wants_state(action.entity.fqn)
    )


def state_routes(graph: Graph) -> dict[str, list[str]]:
    """Entity FQN -> the names of the subscribers that follow its state changes: the
    deliveries of a data-API transition's event."""
    routes: dict[str, list[str]] = {}
    for name in sorted(graph.subscribers):
        for fqn in graph.subscribers[name].handler.states:
            routes.setdefault(fqn, []).append(name)
    return routes
