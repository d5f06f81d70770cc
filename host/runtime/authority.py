"""Whose authority a plugin acts with beyond its own entities and actions (plugin API 1.9;
docs/security.md).

* A nested action (``ctx.data.run``) of another plugin runs as the plugin's system identity
  (``plugin:<name>`` with the roles its :class:`~plugin_api.RunsAction` declares) or, where
  the action accepts delegation and the plugin declares ``Authority.CALLER``, as the caller;
  without a declaration it is refused. Every nested action's actor carries the chain of
  (action, plugin) that ran it, which its audit record names.
* A data-API read of another plugin's entity keeps the entity's read floor for the acting
  identity, unless the plugin declares a :class:`~plugin_api.SystemRead` of it (logged).

Plugins requiring an older plugin API keep the earlier behaviour (nested actions as the
caller, reads of the whole tenant), with a warning logged once per plugin and target.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from host.graph.model import CompiledEntity, Graph, PluginGrants
from host.plugins import PluginInfo
from host.query.conditions import Clause, Condition
from host.query.spec import ID_COLUMN
from host.runtime.access import ReadGate
from host.runtime.actor import Actor
from host.storage.store import EntityStore, Runner
from plugin_api.errors import PolicyDenied
from plugin_api.grants import SYSTEM_ACTOR_PREFIX, Authority

__all__ = ["Authorities"]

logger = logging.getLogger("tessera.runtime")
audit_logger = logging.getLogger("tessera.audit")


class Authorities:
    """The authority decisions of one graph's data API."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._gate = ReadGate(graph)
        self._warned: set[tuple[str, str]] = set()

    def nested_actor(
        self, plugin: PluginInfo | None, caller: Actor, cause: str, target: str
    ) -> Actor:
        """Who runs action ``target`` when ``plugin``'s code in the action ``cause`` (run by
        ``caller``) calls ``ctx.data.run``.

        :raises PolicyDenied: the plugin requires plugin API 1.9 and has not declared that
            it runs ``target``.
        """
        name = "" if plugin is None else plugin.name
        via = (*caller.via, (cause, name))
        action = self._graph.actions.get(target)
        if action is None or plugin is None or action.plugin.name == name:
            return replace(caller, via=via)
        grants = self._held(plugin, target, "runs it as the caller")
        if grants is None:
            return replace(caller, via=via)
        declared = grants.runs.get(target)
        if declared is None:
            raise PolicyDenied(
                f"Plugin '{name}' has not declared that it runs action '{target}' "
                "(tessera_grants: RunsAction)"
            )
        if declared.authority is Authority.CALLER:
            return replace(caller, via=via)
        return Actor(caller.tenant_id, SYSTEM_ACTOR_PREFIX + name, frozenset(declared.roles), via)

    async def read_scope(
        self, plugin: PluginInfo | None, entity: CompiledEntity, actor: Actor, cause: str
    ) -> tuple[Clause, ...] | None:
        """The row conditions of a data-API read of ``entity`` by ``plugin``'s code acting
        for ``actor`` (empty: every row of the tenant), ``None`` when the entity's read floor
        denies ``actor`` every row."""
        if entity.definition.access is None or plugin is None:
            return ()  # no floor; or the host's own reader (validators)
        if entity.plugin.name == plugin.name:
            return ()
        grants = self._held(plugin, entity.fqn, "reads it without its read floor")
        if grants is None:
            return ()
        if entity.fqn in grants.reads:
            audit_logger.info(
                "system read of %s by plugin %s in %s for %s",
                entity.fqn,
                plugin.name,
                cause,
                actor.actor_id,
                extra={"event": "system_read", "tenant": actor.tenant_id, "actor": actor.actor_id},
            )
            return ()
        try:
            return await self._gate.entity_conditions(entity, actor)
        except PolicyDenied:
            return None

    async def subject_row(
        self, store: EntityStore, runner: Runner, entity: CompiledEntity, actor: Actor, row_id: str
    ) -> Sequence[Any] | None:
        """The row ``row_id`` an action (or an availability question) of ``actor`` is about,
        ``None`` when it does not exist in the tenant or, for an entity whose plugin requires
        plugin API 1.9, its read floor does not admit it: "not yours" answers as "not
        there" (docs/security.md)."""
        scope = await self.subject_scope(entity, actor)
        if scope is None:
            return None
        if not scope:
            return await store.get(runner, entity.fqn, actor.tenant_id, row_id)
        by_id = (Condition(ID_COLUMN, "eq", (row_id,)),)
        rows = await store.find(runner, entity.fqn, actor.tenant_id, by_id, 1, scope)
        return rows[0] if rows else None

    async def subject_scope(
        self, entity: CompiledEntity, actor: Actor
    ) -> tuple[Clause, ...] | None:
        """The rows of ``entity`` an action of ``actor`` may be about: its read floor for
        ``actor`` when the entity's plugin requires plugin API 1.9 (empty: every row of the
        tenant; ``None``: none)."""
        grants = self._graph.grants.get(entity.plugin.name)
        if entity.definition.access is None or grants is None or not grants.held:
            return ()
        try:
            return await self._gate.entity_conditions(entity, actor)
        except PolicyDenied:
            return None

    def _held(self, plugin: PluginInfo, target: str, what: str) -> PluginGrants | None:
        """The plugin's grants when they bind it; ``None`` (and a warning, once) for a plugin
        requiring an older plugin API."""
        grants = self._graph.grants.get(plugin.name)
        if grants is not None and grants.held:
            return grants
        if (plugin.name, target) not in self._warned:
            self._warned.add((plugin.name, target))
            logger.warning(
                "%s requires a plugin API older than 1.9: it reaches %s of another plugin and "
                "%s; require 1.9 and declare tessera_grants (docs/security.md)",
                plugin.describe(),
                target,
                what,
            )
        return None
