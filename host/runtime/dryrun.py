"""Dry runs of actions (docs/http.md, "Dry runs"): which actions may be dry-run, and what a
dry run answers.

A dry run is the action's whole chain (:meth:`host.runtime.engine.ActionRuntime.dry_run`):
role check, subject, custom policies, references, workflow gate, effect, the row's write,
all run inside a transaction that is always rolled back
(:mod:`host.runtime.rollback`). It writes no idempotency record and no event deliveries:
the transactional subscribers that want the action run in the same transaction, after the
row's write, on the event the action would have had (their writes are rolled back too); no
other subscriber or webhook hears of it. The per-tenant counters of ``next_sequence`` are
rows of a table (no database sequence, no ``nextval``), so the value a dry run draws is given
back by the rollback: the next real action gets it. The audit table's ``seq`` is a database
sequence: a dry run builds its audit records but does not insert them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from host.fieldtypes import render_datetime
from host.graph.model import CompiledAction, Graph
from host.graph.subscriptions import wants_event
from host.runtime.actor import Actor
from host.runtime.data import ActionData, DataRuntime
from host.storage import Tx
from host.storage.store import AuditRecord, EntityStore, Written
from plugin_api.data import DataAccess
from plugin_api.errors import DryRunUnsupported
from plugin_api.events import Event, Subscriber
from plugin_api.policies import is_dry_run_safe

__all__ = ["DryRun", "dry_run_answer", "refuse_unsafe", "run_subscribers", "subscribers_of"]

logger = logging.getLogger("tessera.runtime")


@dataclass(frozen=True, slots=True)
class DryRun:
    """What a dry run answers: the action's ``outputs``, the ``changes`` its write would
    make (every column it sets, stamps and system fields included, in read shape) and the
    ``audit`` record it would write (JSON-ready)."""

    outputs: Mapping[str, Any]
    changes: Mapping[str, Any]
    audit: Mapping[str, Any]
    subscribers: Mapping[str, str] = field(default_factory=dict)
    """Each transactional subscriber run: ``delivered`` or ``failed: <reason>``."""
    timers: Mapping[str, Any] = field(default_factory=dict)
    """What the write would schedule: ``arm`` and ``cancel`` (docs/timers.md)."""

    def body(self, *, timers: bool = False) -> dict[str, Any]:
        """The answer's JSON object; ``timers`` (ViewSchema 1.5.0): with ``timers``."""
        body = {
            "ok": True,
            "dryRun": True,
            "outputs": self.outputs,
            "changes": self.changes,
            "audit": self.audit,
            "subscribers": self.subscribers,
        }
        if timers:
            body["timers"] = {"arm": [], "cancel": [], **self.timers}
        return body


def subscribers_of(graph: Graph, action: CompiledAction) -> list[Subscriber]:
    """The transactional subscribers that want ``action``'s events, by name."""
    found = []
    for name in sorted(graph.subscribers):
        subscriber = graph.subscribers[name].handler
        if subscriber.transactional and wants_event(subscriber, action):
            found.append(subscriber)
    return found


def refuse_unsafe(graph: Graph, action: CompiledAction) -> None:
    """Refuse a dry run through an effect, or a transactional subscriber of the action, not
    declared safe to dry-run.

    :raises DryRunUnsupported: naming the first such handler.
    """
    name = action.definition.effect
    if name is not None and not is_dry_run_safe(graph.effects[name].handler):
        raise DryRunUnsupported(
            f"Action '{action.fqn}' cannot be dry-run: its effect '{name}' is not declared "
            "safe to dry-run (plugin_api.dry_run_safe)"
        )
    for subscriber in subscribers_of(graph, action):
        if not is_dry_run_safe(subscriber.handler):
            raise DryRunUnsupported(
                f"Action '{action.fqn}' cannot be dry-run: its transactional subscriber "
                f"'{subscriber.name}' is not declared safe to dry-run (plugin_api.dry_run_safe)"
            )


@dataclass(frozen=True, slots=True)
class _Delivery:
    """:class:`plugin_api.events.EventContext` of a dry run's delivery."""

    event: Event
    data: DataAccess
    attempt: int = 1


async def run_subscribers(
    graph: Graph, data: DataRuntime, tx: Tx, action: CompiledAction, audit: AuditRecord
) -> dict[str, str]:
    """Run the action's transactional subscribers in ``tx`` on the event the action would
    have had, each as the dispatcher would (its name as actor, writes audited with the
    action as cause, but only built: a rehearsal); stop at the first that fails (on
    PostgreSQL its failure may have aborted the transaction)."""
    event = Event(
        id=audit.event_id,
        tenant_id=audit.tenant_id,
        actor_id=audit.actor_id,
        action=audit.action,
        entity=audit.entity,
        subject_id=audit.subject_id,
        outputs=audit.outputs,
        graph_hash=graph.hash,
        occurred_at=str(render_datetime(audit.at)),
    )
    outcomes: dict[str, str] = {}
    for subscriber in subscribers_of(graph, action):
        if outcomes and list(outcomes.values())[-1] != "delivered":
            outcomes[subscriber.name] = "not run: an earlier subscriber failed"
            continue
        actor = Actor(tenant_id=audit.tenant_id, actor_id=subscriber.name, roles=frozenset())
        plugin = graph.subscribers[subscriber.name].plugin
        scoped = ActionData(data, tx, audit.action, actor, None, plugin=plugin)
        scoped.writable = True
        scoped.rehearsal = True
        try:
            await asyncio.wait_for(
                subscriber.handler(_Delivery(event, scoped)), subscriber.timeout_s
            )
        except Exception as exc:
            logger.info("dry run: subscriber %s failed", subscriber.name, exc_info=exc)
            outcomes[subscriber.name] = f"failed: {type(exc).__name__}: {exc}"
        else:
            outcomes[subscriber.name] = "delivered"
    return outcomes


def dry_run_answer(
    store: EntityStore,
    action: CompiledAction,
    outputs: Mapping[str, Any],
    written: Written,
    audit: AuditRecord,
    subscribers: Mapping[str, str],
) -> DryRun:
    """The answer of a dry run that wrote ``written`` and ``audit`` (then rolled back)."""
    renderers = store.renderer(action.entity.fqn).renderers
    changes = {
        name: renderers[name](value) if name in renderers else value
        for name, value in written.values.items()
        if name != "tenant_id"
    }
    record = {
        "eventId": audit.event_id,
        "tenantId": audit.tenant_id,
        "actorId": audit.actor_id,
        "roles": sorted(audit.roles),
        "action": audit.action,
        "entity": audit.entity,
        "subjectId": audit.subject_id,
        "inputs": audit.inputs,
        "outputs": audit.outputs,
        "at": render_datetime(audit.at),
    }
    return DryRun(outputs=outputs, changes=changes, audit=record, subscribers=subscribers)
