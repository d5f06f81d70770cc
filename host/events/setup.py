"""Who gets which events in this process: the targets (plugin subscribers and webhooks), the
outbox routes per action, and the dispatcher, checked once at startup."""

from __future__ import annotations

from collections.abc import Mapping

from host.config import Settings
from host.errors import StartupError
from host.events.dispatcher import Dispatcher, Outcome, Target
from host.graph.model import Graph
from host.graph.subscriptions import state_routes, wants_event
from host.runtime.data import DataRuntime
from host.storage import Storage
from host.storage.deliveries import DeliveryStore
from host.storage.outbox import Outbox
from host.storage.store import EntityStore

__all__ = ["Events", "targets"]


def targets(graph: Graph, settings: Settings) -> dict[str, Target]:
    """Every subscriber and webhook by name.

    :raises StartupError: a webhook named like a plugin's subscriber, or a timeout not
        shorter than the delivery lease.
    """
    found: dict[str, Target] = {name: r.handler for name, r in graph.subscribers.items()}
    for hook in settings.webhooks:
        if hook.name in found:
            raise StartupError(
                f"TESSERA_WEBHOOKS: the name {hook.name!r} is already a plugin's subscriber; "
                "give the webhook another 'name'"
            )
        found[hook.name] = hook
    lease = settings.events_lease_s
    for name, target in found.items():
        if target.timeout_s >= lease:
            raise StartupError(
                f"TESSERA_EVENTS_LEASE_S={lease:g} must exceed the timeout of {name!r} "
                f"({target.timeout_s:g}s); raise the lease or lower the timeout"
            )
    return found


def _routes(graph: Graph, found: Mapping[str, Target]) -> dict[str, list[str]]:
    routes: dict[str, list[str]] = {}
    for fqn, action in graph.actions.items():
        routes[fqn] = [
            name for name, target in sorted(found.items()) if wants_event(target, action)
        ]
    return routes


class Events:
    """The outbox the action runtime writes to and this process's dispatcher."""

    def __init__(
        self,
        graph: Graph,
        settings: Settings,
        storage: Storage,
        entities: EntityStore,
        on_outcome: Outcome | None = None,
    ) -> None:
        schema = entities.schema
        found = targets(graph, settings)
        self.outbox = Outbox(
            storage.dialect, schema.deliveries.name, _routes(graph, found), state_routes(graph)
        )
        self.store = DeliveryStore(storage, schema.deliveries.name, schema.audit.name)
        self.data = DataRuntime(graph, entities, self.outbox)
        """The data API of the transactional subscribers (the action runtime shares it, so
        their ``ctx.data.run`` runs actions)."""
        self.dispatcher: Dispatcher | None = None
        if settings.events_dispatch and found:
            self.dispatcher = Dispatcher(self.store, found, settings, self.data, on_outcome)

    def start(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.start()

    async def stop(self) -> None:
        if self.dispatcher is not None:
            await self.dispatcher.stop()
