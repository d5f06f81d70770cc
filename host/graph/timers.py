"""The plugins' timers (``tessera_timers``, plugin API 1.10; :mod:`plugin_api.timers`),
checked against the compiled graph and indexed for the runtime that arms them.

Timers enter the canonical form under ``timers`` only when some plugin declares one, so a graph
without timers keeps the hash it had before timers existed."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from types import MappingProxyType

from host.graph.cron import is_schedule
from host.graph.model import CompiledAction, CompiledEntity
from host.graph.timerdefs import CompiledTimer, Timers
from host.plugins import PluginContribution
from plugin_api.definitions import CreateAction, FieldType
from plugin_api.identity import is_role_name
from plugin_api.timers import CronJob, FieldTimer, StateTimer, SystemActor, Timer

__all__ = ["compile_timers", "describe_timer", "with_timers"]

_DOTTED = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*(\.[a-z][a-z0-9]*(_[a-z0-9]+)*)+")
_MAX_NAME = 200


def compile_timers(
    contribs: Iterable[PluginContribution],
    entities: Mapping[str, CompiledEntity],
    actions: Mapping[str, CompiledAction],
    report: Callable[[str], None],
) -> Timers:
    """Check every plugin's timers; report each mistake naming the plugin and the timer."""
    named: dict[str, CompiledTimer] = {}
    for contribution in contribs:
        plugin = contribution.plugin
        for timer in contribution.timers:
            say = f"{plugin.describe()}: timer {timer.name!r}"
            problem = _problem(timer, entities, actions)
            if problem:
                report(f"{say}: {problem}")
                continue
            if timer.name in named:
                other = named[timer.name].plugin.describe()
                report(f"{say}: declared twice (also by {other})")
                continue
            named[timer.name] = CompiledTimer(
                name=timer.name,
                plugin=plugin,
                definition=timer,
                entity=actions[timer.action].entity.fqn
                if isinstance(timer, CronJob)
                else timer.entity,
                action=timer.action,
                actor_id=timer.actor.actor_id,
                roles=frozenset(timer.actor.roles),
            )
    by_entity: dict[str, list[CompiledTimer]] = {}
    cron: list[CompiledTimer] = []
    for name in sorted(named):
        if named[name].kind == "cron":
            cron.append(named[name])
        else:
            by_entity.setdefault(named[name].entity, []).append(named[name])
    return Timers(
        by_name=MappingProxyType(dict(sorted(named.items()))),
        by_entity=MappingProxyType({k: tuple(v) for k, v in by_entity.items()}),
        cron=tuple(cron),
    )


def _problem(
    timer: Timer, entities: Mapping[str, CompiledEntity], actions: Mapping[str, CompiledAction]
) -> str:
    if not isinstance(timer.name, str) or not _DOTTED.fullmatch(timer.name):
        return "the name must be a dotted lower-case name such as 'helpdesk.ticket.overdue'"
    if len(timer.name) > _MAX_NAME:
        return f"the name is longer than {_MAX_NAME} characters"
    if isinstance(timer, CronJob):
        return _actor_problem(timer.actor) or _cron_problem(timer, actions)
    entity = entities.get(timer.entity)
    if entity is None:
        return f"no entity {timer.entity!r} in the graph"
    problem = _actor_problem(timer.actor)
    if problem:
        return problem
    problem = _action_problem(timer, entity, actions)
    if problem:
        return problem
    states = entity.workflow.states if entity.workflow is not None else ()
    if isinstance(timer, StateTimer):
        if entity.workflow is None:
            return f"entity {timer.entity!r} has no workflow: a StateTimer needs one"
        if timer.state not in states:
            return f"state {timer.state!r} is not a state of {timer.entity!r} ({', '.join(states)})"
        if not isinstance(timer.after, timedelta) or timer.after <= timedelta(0):
            return f"after must be a positive timedelta, got {timer.after!r}"
        return ""
    declared = entity.fields.get(timer.field)
    if declared is None or declared.type is not FieldType.DATETIME:
        return f"field {timer.field!r} is not a datetime field of {timer.entity!r}"
    unknown = [state for state in timer.states if state not in states]
    if unknown:
        return f"states {unknown!r} are not states of {timer.entity!r}"
    return ""


def _cron_problem(job: CronJob, actions: Mapping[str, CompiledAction]) -> str:
    if not isinstance(job.schedule, str) or not is_schedule(job.schedule):
        return (
            f"schedule {job.schedule!r} is not a cron expression of five fields (six with "
            "seconds), such as '0 2 * * *'"
        )
    action = actions.get(job.action)
    if action is None:
        return f"no action {job.action!r} in the graph"
    if not isinstance(action.definition, CreateAction):
        return f"action {job.action!r} is not a create action: a cron job creates a row"
    problem = _roles_problem(job.actor, action)
    if problem:
        return problem
    if not isinstance(job.inputs, Mapping):
        return f"inputs must be a mapping of input names to values, got {job.inputs!r}"
    unknown = sorted(str(name) for name in job.inputs if name not in action.definition.inputs)
    if unknown:
        return f"inputs {unknown!r} are not inputs of action {job.action!r}"
    try:
        json.dumps(dict(job.inputs), allow_nan=False)
    except (TypeError, ValueError):
        return "inputs must be JSON values (text, numbers, booleans, null, lists, objects)"
    return ""


def _actor_problem(actor: object) -> str:
    if not isinstance(actor, SystemActor):
        return f"actor must be a SystemActor, got {type(actor).__name__}"
    if not isinstance(actor.name, str) or not _DOTTED.fullmatch(actor.name):
        return f"the system actor's name {actor.name!r} must be a dotted lower-case name"
    bad = [role for role in actor.roles if not isinstance(role, str) or not is_role_name(role)]
    if bad:
        return f"the system actor's roles are not role names: {bad!r}"
    return ""


def _action_problem(
    timer: Timer, entity: CompiledEntity, actions: Mapping[str, CompiledAction]
) -> str:
    action = actions.get(timer.action)
    if action is None:
        return f"no action {timer.action!r} in the graph"
    if action.entity.fqn != entity.fqn:
        return f"action {timer.action!r} acts on {action.entity.fqn!r}, not {entity.fqn!r}"
    if action.kind == "create":
        return f"action {timer.action!r} creates a row: a timer runs an action on its row"
    return _roles_problem(timer.actor, action)


def _roles_problem(actor: SystemActor, action: CompiledAction) -> str:
    roles = action.definition.roles
    if roles and not set(roles) & set(actor.roles):
        return (
            f"the system actor {actor.actor_id!r} holds none of the roles action "
            f"{action.fqn!r} requires ({', '.join(roles)})"
        )
    return ""


def describe_timer(timer: CompiledTimer) -> dict[str, object]:
    """A timer's canonical (and ``tessera graph``) description."""
    definition = timer.definition
    described: dict[str, object] = {
        "name": timer.name,
        "kind": timer.kind,
        "entity": timer.entity,
        "action": timer.action,
        "actor": timer.actor_id,
        "roles": sorted(timer.roles),
    }
    if isinstance(definition, StateTimer):
        described["state"] = definition.state
        described["afterSeconds"] = definition.after.total_seconds()
    elif isinstance(definition, FieldTimer):
        described["field"] = definition.field
        described["states"] = list(definition.states)
    elif isinstance(definition, CronJob):
        described["schedule"] = definition.schedule
        described["inputs"] = dict(definition.inputs)
    return described


def with_timers(canonical: bytes, timers: Timers) -> bytes:
    """The canonical form with the timers added under ``timers`` (unchanged without any)."""
    if not timers.by_name:
        return canonical
    document = json.loads(canonical)
    document["timers"] = [describe_timer(timer) for timer in timers.by_name.values()]
    return json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()
