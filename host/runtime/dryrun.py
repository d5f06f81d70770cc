"""Dry runs of actions (docs/http.md, "Dry runs"): which actions may be dry-run, and what a
dry run answers.

A dry run is the action's whole chain (:meth:`host.runtime.engine.ActionRuntime.dry_run`):
role check, subject, custom policies, references, workflow gate, effect, the row's write and
its audit record, all run inside a transaction that is always rolled back
(:mod:`host.runtime.rollback`). It writes no idempotency record and no event deliveries, so
no subscriber hears of it. The per-tenant counters of ``next_sequence`` are rows of a table
(no database sequence, no ``nextval``), so the value a dry run draws is given back by the
rollback: the next real action gets it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from host.fieldtypes import render_datetime
from host.graph.model import CompiledAction, Graph
from host.storage.store import AuditRecord, EntityStore, Written
from plugin_api.errors import DryRunUnsupported
from plugin_api.policies import is_dry_run_safe

__all__ = ["DryRun", "dry_run_answer", "refuse_unsafe"]


@dataclass(frozen=True, slots=True)
class DryRun:
    """What a dry run answers: the action's ``outputs``, the ``changes`` its write would
    make (every column it sets, stamps and system fields included, in read shape) and the
    ``audit`` record it would write (JSON-ready)."""

    outputs: Mapping[str, Any]
    changes: Mapping[str, Any]
    audit: Mapping[str, Any]

    def body(self) -> dict[str, Any]:
        """The answer's JSON object."""
        return {
            "ok": True,
            "dryRun": True,
            "outputs": self.outputs,
            "changes": self.changes,
            "audit": self.audit,
        }


def refuse_unsafe(graph: Graph, action: CompiledAction) -> None:
    """Refuse a dry run through an effect not declared safe to dry-run.

    :raises DryRunUnsupported: naming the effect.
    """
    name = action.definition.effect
    if name is None:
        return
    if not is_dry_run_safe(graph.effects[name].handler):
        raise DryRunUnsupported(
            f"Action '{action.fqn}' cannot be dry-run: its effect '{name}' is not declared "
            "safe to dry-run (plugin_api.dry_run_safe)"
        )


def dry_run_answer(
    store: EntityStore,
    action: CompiledAction,
    outputs: Mapping[str, Any],
    written: Written,
    audit: AuditRecord,
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
    return DryRun(outputs=outputs, changes=changes, audit=record)
