"""The rules the compiler added after plugin API 1.0, and who they apply to.

A rule that refuses what an older plugin API accepted applies to the plugins that require the
plugin API which added it, or a later one (``TESSERA_PLUGIN_API``; a plugin that requires
nothing was written for 1.0). An older plugin keeps the older behaviour, in a safe form where
the rule protects readers, and the graph carries a warning naming the rule, its reason, what
the plugin gets instead and the fix (``tessera check`` prints it, a start logs it).
docs/compatibility.md lists every rule with the version that added it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from host.plugin_version import declared_version, requires_at_least
from host.plugins import LoadedPlugins, PluginInfo
from plugin_api.version import parse_version

__all__ = ["FIND_CONDITIONS", "ROLE_NAMES", "RULES", "SHOWN_FIELDS", "Gates", "Rule", "older_than"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Rule:
    """A compiler rule added after plugin API 1.0."""

    name: str
    """What the rule says, as warnings and docs/compatibility.md name it."""
    since: str
    """The plugin API that added it: plugins requiring this or later get it."""
    reason: str
    fix: str


ROLE_NAMES: Final = Rule(
    name="a role is a role name",
    since="1.2",
    reason=(
        "X-Actor-Roles and token claims carry only role names (1 to 64 ASCII letters, digits "
        "and _ . : @ / -), so no caller can hold any other role"
    ),
    fix=(
        "rename the role to a role name (such as 'team_lead'), then require plugin API 1.2 or later"
    ),
)

SHOWN_FIELDS: Final = Rule(
    name="a list filters, sorts and searches only fields it shows",
    since="1.7",
    reason=(
        "a filter, sort or search on a field the projection does not show reveals the field's "
        "values to the list's readers (range and substring probes, the order of rows)"
    ),
    fix=(
        "show the field in the projection or leave it out of the listing, then require "
        "plugin API 1.7 or later"
    ),
)

FIND_CONDITIONS: Final = Rule(
    name="ctx.data.find names what a list filter may name",
    since="1.6",
    reason=(
        "one condition language serves list filters, read policies and the data API: "
        "_version is no condition field, and id, created_at and updated_at are never null"
    ),
    fix=(
        "compare the row's _version after reading it, drop null conditions on fields that "
        "are never null, then require plugin API 1.6 or later"
    ),
)

RULES: Final = (ROLE_NAMES, FIND_CONDITIONS, SHOWN_FIELDS)
"""Every gated compiler rule, oldest first (docs/compatibility.md has a row for each)."""


class Gates:
    """Which loaded plugin gets which rule, and the warning an older one gets instead."""

    __slots__ = ("_declared", "_modern")

    def __init__(self, loaded: LoadedPlugins) -> None:
        self._declared = {info.name: declared_version(plugin) for info, plugin in loaded.plugins}
        self._modern = {
            (info.name, rule.since)
            for info, plugin in loaded.plugins
            for rule in RULES
            if requires_at_least(plugin, rule.since)
        }

    @property
    def declared(self) -> Mapping[str, str]:
        """The plugin API each plugin requires, by plugin name ("1.0": nothing)."""
        return MappingProxyType(self._declared)

    def enforces(self, plugin: PluginInfo, rule: Rule) -> bool:
        """Whether ``plugin`` requires ``rule``'s plugin API or a later one."""
        return (plugin.name, rule.since) in self._modern

    def warner(
        self, plugin: PluginInfo, subject: str, rule: Rule, warn: Callable[[str], None]
    ) -> Callable[[str, str], None]:
        """A reporter of ``rule``'s breaches by ``plugin`` in ``subject``: each call gives
        what breaks the rule and what the plugin gets instead."""

        def report(breach: str, instead: str) -> None:
            warn(
                f"{plugin.describe()}: {subject}: {breach}; rule {rule.name!r} (plugin API "
                f"{rule.since}): {rule.reason}. The plugin requires plugin API "
                f"{self._declared.get(plugin.name, '1.0')}, so it still loads: {instead}. "
                f"Fix: {rule.fix}"
            )

        return report


def older_than(declared: str, rule: Rule) -> bool:
    """Whether a plugin requiring plugin API ``declared`` is spared ``rule``."""
    return parse_version(declared) < parse_version(rule.since)
