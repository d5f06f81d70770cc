"""Plugin discovery and a typed facade over pluggy.

:func:`load_plugins` builds a fresh :class:`pluggy.PluginManager` for every call (nothing is
global), loads the installed distributions of the ``tessera.plugins`` entry-point group and any
extra plugins given by the caller, and validates hook names. :func:`contributions` calls each
plugin's hooks separately, so provenance is exact; nothing else in the host calls ``pm.hook``.

Problems never raise: they are collected as messages naming the plugin, and the graph compiler
refuses to start on any of them.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

import pluggy

import plugin_api.hookspecs
from host.config import Settings
from host.plugin_version import api_version_error
from plugin_api import ENTRY_POINT_GROUP, PROJECT_NAME
from plugin_api.access import ReadPolicyHandler
from plugin_api.context import EffectHandler, PolicyHandler
from plugin_api.definitions import (
    Action,
    CreateAction,
    Entity,
    Projection,
    TransitionAction,
    UpdateAction,
)
from plugin_api.events import Subscriber
from plugin_api.grants import Grant, RunsAction, SystemRead
from plugin_api.migrations import (
    ConvertField,
    MapOptions,
    MapStates,
    Migration,
    RenameEntity,
    RenameField,
)
from plugin_api.timers import CronJob, FieldTimer, StateTimer, Timer
from plugin_api.validators import ValidatorHandler

__all__ = [
    "HOOK_NAMES",
    "LoadedPlugins",
    "PluginContribution",
    "PluginInfo",
    "contributions",
    "load_plugins",
]

HOOK_NAMES: tuple[str, ...] = tuple(
    name for name in vars(plugin_api.hookspecs) if name.startswith(PROJECT_NAME + "_")
)
"""Every hook a plugin may implement."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PluginInfo:
    """Where a contribution came from.

    :param name: the plugin's registration name (its entry-point name).
    :param distribution: the installed distribution that declares it, if any.
    :param version: that distribution's version, if any.
    """

    name: str
    distribution: str | None = None
    version: str | None = None

    def describe(self) -> str:
        """``name (distribution version)``, the way every error message names a plugin."""
        if self.distribution is None:
            return f"plugin {self.name!r}"
        return f"plugin {self.name!r} ({self.distribution} {self.version})"


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadedPlugins:
    """The outcome of :func:`load_plugins`.

    :param manager: the plugin manager the plugins are registered with.
    :param plugins: each registered plugin with its provenance, in registration order.
    :param errors: every problem met while loading (import failures, name clashes,
        misspelt hooks), each naming the plugin.
    """

    manager: pluggy.PluginManager
    plugins: tuple[tuple[PluginInfo, object], ...]
    errors: tuple[str, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class PluginContribution:
    """What one plugin's hooks returned, type-checked.

    Items of the wrong type are left out and reported in :attr:`errors`.
    """

    plugin: PluginInfo
    entities: tuple[Entity, ...] = ()
    actions: tuple[Action, ...] = ()
    projections: tuple[Projection, ...] = ()
    policies: Mapping[str, PolicyHandler] = field(default_factory=lambda: MappingProxyType({}))
    effects: Mapping[str, EffectHandler] = field(default_factory=lambda: MappingProxyType({}))
    read_policies: Mapping[str, ReadPolicyHandler] = field(
        default_factory=lambda: MappingProxyType({})
    )
    migrations: tuple[Migration, ...] = ()
    subscribers: tuple[Subscriber, ...] = ()
    validators: Mapping[str, ValidatorHandler] = field(default_factory=lambda: MappingProxyType({}))
    grants: tuple[Grant, ...] = ()
    timers: tuple[Timer, ...] = ()
    errors: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Candidate:
    name: str
    value: str
    distribution: str
    version: str
    entry_point: importlib.metadata.EntryPoint

    @property
    def info(self) -> PluginInfo:
        return PluginInfo(name=self.name, distribution=self.distribution, version=self.version)


def _normalise(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _candidates() -> Iterator[_Candidate]:
    """Every entry point of the group of every distribution on ``sys.path``, in path order.

    ``importlib.metadata.entry_points()`` hides a second distribution of the same name; we
    look at all of them so that duplicates can be reported rather than silently dropped.
    """
    for dist in importlib.metadata.distributions():
        dist_name = dist.metadata["Name"]
        if not dist_name:
            continue
        for entry_point in dist.entry_points:
            if entry_point.group == ENTRY_POINT_GROUP:
                yield _Candidate(
                    entry_point.name, entry_point.value, dist_name, dist.version, entry_point
                )


def _select(settings: Settings, errors: list[str]) -> list[_Candidate]:
    """Deduplicate and filter the candidates; report clashes and unknown names in ``only``."""
    by_name: dict[str, list[_Candidate]] = {}
    for candidate in _candidates():
        same = by_name.setdefault(candidate.name, [])
        key = (_normalise(candidate.distribution), candidate.value)
        if all((_normalise(c.distribution), c.value) != key for c in same):
            same.append(candidate)
    for name in settings.plugins_only:
        if name not in by_name:
            errors.append(
                f"TESSERA_PLUGINS_ONLY names plugin {name!r}, which no installed "
                "distribution declares"
            )
    selected: list[_Candidate] = []
    for name in sorted(by_name):
        if name in settings.plugins_disabled:
            continue
        if settings.plugins_only and name not in settings.plugins_only:
            continue
        found = by_name[name]
        if len(found) > 1:
            declared = ", ".join(f"{c.distribution} {c.version} ({c.value})" for c in found)
            errors.append(
                f"plugin {name!r}: entry point declared by {len(found)} distributions: "
                f"{declared}; only the first is loaded"
            )
        selected.append(found[0])
    return selected


def _register(
    manager: pluggy.PluginManager,
    info: PluginInfo,
    plugin: object,
    registered: list[tuple[PluginInfo, object]],
    errors: list[str],
) -> None:
    incompatible = api_version_error(info.describe(), plugin)
    if incompatible is not None:
        errors.append(incompatible)
        return
    try:
        manager.register(plugin, name=info.name)
    except pluggy.PluginValidationError as exc:
        errors.append(f"{info.describe()}: invalid hook implementation: {exc}")
        return
    except ValueError as exc:
        errors.append(f"{info.describe()}: cannot be registered: {exc}")
        return
    registered.append((info, plugin))
    for hook_name in HOOK_NAMES:
        implemented = any(
            impl.plugin_name == info.name
            for impl in getattr(manager.hook, hook_name).get_hookimpls()
        )
        if not implemented and callable(getattr(plugin, hook_name, None)):
            errors.append(
                f"{info.describe()}: {hook_name} is not marked with @hookimpl "
                "and would never be called"
            )


def _unknown_hooks(manager: pluggy.PluginManager, infos: Mapping[str, PluginInfo]) -> list[str]:
    """The same verification as ``check_pending()``, but reporting every offender."""
    errors = []
    for hook_name, caller in sorted(vars(manager.hook).items()):
        if hook_name.startswith("_") or caller.has_spec():
            continue
        for impl in caller.get_hookimpls():
            if not impl.optionalhook:
                info = infos.get(impl.plugin_name, PluginInfo(name=impl.plugin_name))
                errors.append(
                    f"{info.describe()}: unknown hook {hook_name!r} "
                    f"(known hooks: {', '.join(HOOK_NAMES)})"
                )
    return errors


def load_plugins(
    settings: Settings | None = None,
    *,
    extra: Sequence[tuple[str, object]] = (),
    entry_points: bool = True,
) -> LoadedPlugins:
    """Build a fresh plugin manager holding the installed and the ``extra`` plugins.

    :param settings: honoured for ``plugins_only`` and ``plugins_disabled`` (entry-point
        names); read from the environment when ``None``.
    :param extra: ``(name, module or object)`` pairs registered after the entry points
        (tests, the test harness); they are not subject to the allow and block lists.
    :param entry_points: whether to load the ``tessera.plugins`` entry points at all.
    """
    settings = Settings.from_env() if settings is None else settings
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(plugin_api.hookspecs)
    errors: list[str] = []
    registered: list[tuple[PluginInfo, object]] = []
    if entry_points:
        for candidate in _select(settings, errors):
            try:
                plugin = candidate.entry_point.load()
            except Exception as exc:
                errors.append(
                    f"{candidate.info.describe()}: cannot import {candidate.value!r}: "
                    f"{type(exc).__name__}: {exc}"
                )
                continue
            _register(manager, candidate.info, plugin, registered, errors)
    for name, plugin in extra:
        _register(manager, PluginInfo(name=name), plugin, registered, errors)
    pending = _unknown_hooks(manager, {info.name: info for info, _ in registered})
    errors.extend(pending)
    if not pending:
        try:
            manager.check_pending()
        except pluggy.PluginValidationError as exc:  # pragma: no cover - mirrors the scan
            errors.append(str(exc))
    return LoadedPlugins(manager=manager, plugins=tuple(registered), errors=tuple(errors))


# ---------------------------------------------------------------------------------------------
# Typed per-plugin calls
# ---------------------------------------------------------------------------------------------

T = TypeVar("T")
_ACTION_TYPES = (CreateAction, TransitionAction, UpdateAction)
_MIGRATION_TYPES = (ConvertField, RenameField, RenameEntity, MapOptions, MapStates)


@dataclass(slots=True)
class _Collector:
    """Calls the hooks of one plugin and type-checks what they return."""

    info: PluginInfo
    impls: Mapping[str, Mapping[str, pluggy.HookImpl]]
    errors: list[str] = field(default_factory=list)

    def _call(self, hook_name: str) -> tuple[bool, object]:
        impl = self.impls[hook_name].get(self.info.name)
        if impl is None:
            return False, None
        if impl.wrapper or impl.hookwrapper:
            self.errors.append(f"{self.info.describe()}: {hook_name} may not be a hook wrapper")
            return False, None
        try:
            return True, impl.function()
        except Exception as exc:
            self.errors.append(
                f"{self.info.describe()}: {hook_name} raised {type(exc).__name__}: {exc}"
            )
            return False, None

    def sequence(
        self, hook_name: str, kind: type[T] | tuple[type[T], ...], what: str
    ) -> tuple[T, ...]:
        called, result = self._call(hook_name)
        if not called:
            return ()
        if not isinstance(result, Sequence) or isinstance(result, (str, bytes)):
            self.errors.append(
                f"{self.info.describe()}: {hook_name} must return a sequence of {what}, "
                f"got {type(result).__name__}"
            )
            return ()
        items: list[T] = []
        for index, item in enumerate(result):
            if isinstance(item, kind):
                items.append(item)
            else:
                self.errors.append(
                    f"{self.info.describe()}: {hook_name} item {index} is not {what} "
                    f"but {type(item).__name__}: {item!r}"
                )
        return tuple(items)

    def handlers(self, hook_name: str) -> Mapping[str, Callable[..., Any]]:
        called, result = self._call(hook_name)
        if not called:
            return MappingProxyType({})
        if not isinstance(result, Mapping):
            self.errors.append(
                f"{self.info.describe()}: {hook_name} must return a mapping of name to "
                f"callable, got {type(result).__name__}"
            )
            return MappingProxyType({})
        handlers: dict[str, Callable[..., Any]] = {}
        for name, handler in result.items():
            if isinstance(name, str) and callable(handler):
                handlers[name] = handler
            else:
                self.errors.append(
                    f"{self.info.describe()}: {hook_name} entry {name!r} must map a name "
                    f"(str) to a callable, got {type(name).__name__} -> "
                    f"{type(handler).__name__}"
                )
        return MappingProxyType(handlers)


def contributions(loaded: LoadedPlugins) -> list[PluginContribution]:
    """Call every hook of every plugin separately; one contribution per plugin, in order.

    Each plugin's own hook implementation is called directly (never matched to pluggy's
    results by position). A hook that raises, is a wrapper or returns the wrong type
    contributes nothing (or only its well-typed items) and is reported in ``errors``.
    """
    impls = {
        hook_name: {
            impl.plugin_name: impl
            for impl in getattr(loaded.manager.hook, hook_name).get_hookimpls()
        }
        for hook_name in HOOK_NAMES
    }
    result = []
    for info, _plugin in loaded.plugins:
        collect = _Collector(info, impls)
        result.append(
            PluginContribution(
                plugin=info,
                entities=collect.sequence("tessera_entities", Entity, "an Entity"),
                actions=collect.sequence("tessera_actions", _ACTION_TYPES, "an action"),
                projections=collect.sequence("tessera_projections", Projection, "a Projection"),
                policies=collect.handlers("tessera_policies"),
                effects=collect.handlers("tessera_effects"),
                read_policies=collect.handlers("tessera_read_policies"),
                migrations=collect.sequence(
                    "tessera_migrations", _MIGRATION_TYPES, "a migration declaration"
                ),
                subscribers=collect.sequence("tessera_subscribers", Subscriber, "a Subscriber"),
                validators=collect.handlers("tessera_validators"),
                grants=collect.sequence(
                    "tessera_grants", (RunsAction, SystemRead), "a RunsAction or SystemRead"
                ),
                timers=collect.sequence(
                    "tessera_timers",
                    (StateTimer, FieldTimer, CronJob),
                    "a StateTimer, FieldTimer or CronJob",
                ),
                errors=tuple(collect.errors),
            )
        )
    return result
