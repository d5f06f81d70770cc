"""The plugins' declared authority over other plugins' actions and entities (``tessera_grants``,
plugin API 1.9; :mod:`plugin_api.grants`), checked against the compiled graph."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from host.graph.model import CompiledAction, CompiledEntity, PluginGrants
from host.plugins import PluginContribution
from plugin_api.grants import Authority, RunsAction, SystemRead
from plugin_api.identity import is_role_name

__all__ = ["GRANTS_FROM", "compile_grants", "describe_grants"]

GRANTS_FROM = "1.9"
"""The plugin API from which a plugin's declarations bind it (older: the earlier behaviour)."""


def compile_grants(
    contribs: Iterable[PluginContribution],
    held: frozenset[str],
    actions: Mapping[str, CompiledAction],
    entities: Mapping[str, CompiledEntity],
    report: Callable[[str], None],
) -> dict[str, PluginGrants]:
    """Each plugin's grants (``held``: the plugins requiring :data:`GRANTS_FROM`); every
    mistake is reported naming the plugin."""
    grants: dict[str, PluginGrants] = {}
    for contribution in contribs:
        plugin = contribution.plugin
        runs: dict[str, RunsAction] = {}
        reads: set[str] = set()
        for grant in contribution.grants:
            say = f"{plugin.describe()}: {type(grant).__name__}"
            if isinstance(grant, SystemRead):
                entity = entities.get(grant.entity)
                if entity is None:
                    report(f"{say}: no entity {grant.entity!r} in the graph")
                elif entity.plugin.name != plugin.name:
                    reads.add(grant.entity)
                continue
            problem = _runs_problem(grant, actions, plugin.name)
            if problem:
                report(f"{say} {grant.action!r}: {problem}")
            elif grant.action in runs:
                report(f"{say} {grant.action!r}: declared twice")
            else:
                runs[grant.action] = grant
        grants[plugin.name] = PluginGrants(
            held=plugin.name in held, runs=runs, reads=frozenset(reads)
        )
    return grants


def _runs_problem(grant: RunsAction, actions: Mapping[str, CompiledAction], plugin: str) -> str:
    action = actions.get(grant.action)
    if action is None:
        return "no such action in the graph"
    if action.plugin.name == plugin:
        return "the plugin's own action (it runs its own actions as the caller)"
    bad = [role for role in grant.roles if not isinstance(role, str) or not is_role_name(role)]
    if bad:
        return f"not role names: {bad!r}"
    if grant.authority is Authority.CALLER:
        if grant.roles:
            return "roles are the plugin's own identity's: not with Authority.CALLER"
        if not action.definition.accepts_delegation:
            return (
                "the action does not accept delegation (accepts_delegation=True): run it "
                "as the plugin (Authority.PLUGIN with roles)"
            )
    return ""


def describe_grants(grants: Mapping[str, PluginGrants]) -> list[dict[str, object]]:
    """Which plugin may run which action of another, and read which entity whole (for
    ``tessera graph``), by plugin name."""
    return [
        {
            "plugin": name,
            "bound": grant.held,
            "runs": [
                {"action": fqn, "as": run.authority.value, "roles": sorted(run.roles)}
                for fqn, run in sorted(grant.runs.items())
            ],
            "reads": sorted(grant.reads),
        }
        for name, grant in sorted(grants.items())
        if grant.runs or grant.reads
    ]
