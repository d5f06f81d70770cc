"""The compiled form of the plugins' timers (plugin API 1.10), kept apart from their checks
(:mod:`host.graph.timers`) so that the graph model holds them without an import cycle."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from host.plugins import PluginInfo
from plugin_api.timers import CronJob, StateTimer, Timer

__all__ = ["CompiledTimer", "Timers"]


@dataclass(frozen=True, kw_only=True, slots=True)
class CompiledTimer:
    """A timer with what firing it needs."""

    name: str
    plugin: PluginInfo
    definition: Timer
    entity: str
    action: str
    """The action's FQN."""
    actor_id: str
    roles: frozenset[str]

    @property
    def kind(self) -> str:
        """``state``, ``field`` or ``cron``."""
        if isinstance(self.definition, CronJob):
            return "cron"
        return "state" if isinstance(self.definition, StateTimer) else "field"


@dataclass(frozen=True, kw_only=True, slots=True)
class Timers:
    """Every timer by name; the row timers by entity for the runtime that arms them; the
    cron jobs (by name) for the timer loop that keeps their next occurrence armed."""

    by_name: Mapping[str, CompiledTimer] = field(default_factory=dict)
    by_entity: Mapping[str, tuple[CompiledTimer, ...]] = field(default_factory=dict)
    cron: tuple[CompiledTimer, ...] = ()
