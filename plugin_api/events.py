"""Events: subscribers that react to committed actions (and, plugin API 1.8, to any change
of a row's workflow state).

Every committed action is one :class:`Event` (its audit record). A plugin declares
:class:`Subscriber` objects through the ``tessera_subscribers`` hook; the host delivers each
matching event to each subscriber after the commit, at least once, in commit order per subject
(``docs/events.md`` states the promise exactly)::

    async def notify(ctx: EventContext) -> None:
        await ctx.data.create("helpdesk.notification", {...})

    @hookimpl
    def tessera_subscribers() -> Sequence[Subscriber]:
        return (Subscriber(name="helpdesk.notify", handler=notify,
                           actions=("helpdesk.ticket.resolve",), transactional=True),)

A handler that raises (or exceeds its timeout) is retried with exponential backoff; after the
last attempt its delivery is dead (``tessera events retry`` sends it again).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from plugin_api.data import DataAccess

__all__ = ["Event", "EventContext", "Subscriber", "SubscriberHandler"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """One committed action.

    :param id: the event's id (the action's audit record id, a ULID): the same on every
        delivery of the event, so a receiver can drop duplicates by it.
    :param tenant_id: the action's tenant.
    :param actor_id: who ran the action.
    :param action: the action's FQN.
    :param entity: the FQN of the action's entity.
    :param subject_id: the row the action created or changed.
    :param outputs: the action's outputs, as its HTTP answer carried them.
    :param graph_hash: the hash of the graph the action ran under.
    :param occurred_at: when the action ran (RFC 3339, UTC).
    """

    id: str
    tenant_id: str
    actor_id: str
    action: str
    entity: str
    subject_id: str
    outputs: Mapping[str, Any]
    graph_hash: str
    occurred_at: str


class EventContext(Protocol):
    """What a subscriber's handler is given for one delivery."""

    @property
    def event(self) -> Event:
        """The event delivered."""
        ...

    @property
    def attempt(self) -> int:
        """1 on the first delivery, 2 on the first retry, ..."""
        ...

    @property
    def data(self) -> DataAccess:
        """Only for a ``transactional`` subscriber: rows of any entity in the event's
        tenant, read and written in one fresh transaction that commits together with the
        mark that the event was delivered (see :mod:`plugin_api.data`; writes are audited
        with the event's action and the subscriber's name as actor, and are not events
        themselves). Reached from a non-transactional subscriber it raises
        :class:`RuntimeError`."""
        ...


SubscriberHandler: TypeAlias = Callable[[EventContext], Awaitable[None]]
"""An async function taking an :class:`EventContext`; raising means "failed, retry"."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Subscriber:
    """A declaration that ``handler`` wants the events of some actions.

    :param name: unique across all plugins, dotted and prefixed by the plugin's domain
        (``helpdesk.notify_requester``). Deliveries are kept by this name: renaming a
        subscriber abandons the deliveries pending under the old name.
    :param handler: an async :data:`SubscriberHandler`.
    :param actions: action FQNs whose events it wants.
    :param entities: entity FQNs: it wants the events of every action on them. With none of
        ``actions``, ``entities`` and ``states`` it wants every action's event.
    :param states: entity FQNs with a workflow (plugin API 1.8): it wants every change of
        the workflow state of their rows, whatever made it: a transition action, or a
        data-API ``transition`` from any plugin's effect or transactional subscriber. The
        event of a data-API transition names the row (``entity``, ``subject_id``), the
        action that caused it (``action``: the running action, or the event's action for a
        subscriber) and the written values with the new state (``outputs``).
    :param timeout_s: how long one delivery may take before it counts as failed (must be
        shorter than the host's delivery lease, ``TESSERA_EVENTS_LEASE_S``).
    :param transactional: run the handler inside a transaction with :attr:`EventContext.data`;
        its writes commit together with the delivery mark, so a handler that only writes
        to the database takes effect exactly once. Keep it short: on SQLite it holds the
        write lock while it runs.
    """

    name: str
    handler: SubscriberHandler
    actions: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    timeout_s: float = 10.0
    transactional: bool = False
    states: tuple[str, ...] = ()

    def wants(self, action: str, entity: str) -> bool:
        """Whether events of ``action`` (on ``entity``) are delivered to this subscriber
        by its ``actions`` and ``entities`` (:meth:`wants_state` tells the rest)."""
        if not self.actions and not self.entities:
            return not self.states
        return action in self.actions or entity in self.entities

    def wants_state(self, entity: str) -> bool:
        """Whether changes of the workflow state of ``entity``'s rows are delivered to this
        subscriber (plugin API 1.8)."""
        return entity in self.states
