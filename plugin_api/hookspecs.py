"""Hook specifications: what a Tessera plugin may implement.

A plugin is a module (or object) with functions marked ``@hookimpl`` whose names are the hook
names below. Register it through the ``tessera.plugins`` entry-point group of your
distribution::

    [project.entry-points."tessera.plugins"]
    helpdesk = "helpdesk.plugin"

Every hook is optional. The host calls each plugin's hooks separately, so it always knows which
plugin contributed what; contributions from all plugins are merged with one rule: a name
defined twice is a startup error naming both plugins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugin_api._markers import hookspec
from plugin_api.access import ReadPolicyHandler
from plugin_api.context import EffectHandler, PolicyHandler
from plugin_api.definitions import Action, Entity, Projection
from plugin_api.events import Subscriber
from plugin_api.grants import Grant
from plugin_api.migrations import Migration
from plugin_api.timers import Timer
from plugin_api.validators import ValidatorHandler

# ---------------------------------------------------------------------------------------------
# Contribution hooks: called once per plugin when the host compiles the metadata graph.
# ---------------------------------------------------------------------------------------------


@hookspec
def tessera_entities() -> Sequence[Entity]:
    """Return the entities this plugin defines.

    :returns: a sequence of :class:`~plugin_api.Entity` (workflows are part of entities).

    Result rule: every plugin's result is collected; FQNs must be unique across all plugins.
    """
    raise NotImplementedError


@hookspec
def tessera_actions() -> Sequence[Action]:
    """Return the actions this plugin defines.

    :returns: a sequence of :class:`~plugin_api.CreateAction`,
        :class:`~plugin_api.TransitionAction` or :class:`~plugin_api.UpdateAction`. An action
        may target an entity of another plugin.

    Result rule: every plugin's result is collected; FQNs must be unique across all plugins.
    """
    raise NotImplementedError


@hookspec
def tessera_projections() -> Sequence[Projection]:
    """Return the projections this plugin defines.

    :returns: a sequence of :class:`~plugin_api.Projection`.

    Result rule: every plugin's result is collected; FQNs must be unique across all plugins.
    """
    raise NotImplementedError


@hookspec
def tessera_migrations() -> Sequence[Migration]:
    """Return how this plugin's stored data follows its changes (schema evolution).

    :returns: a sequence of :class:`~plugin_api.ConvertField`, :class:`~plugin_api.RenameField`,
        :class:`~plugin_api.RenameEntity`, :class:`~plugin_api.MapOptions` or
        :class:`~plugin_api.MapStates`, naming this plugin's installed entities and fields
        (see :mod:`plugin_api.migrations`). They do not enter the graph's hash.

    Result rule: every plugin's result is collected; two declarations about the same field
    (or entity, for renames) are a startup error naming both plugins, as is one naming an
    entity, field, option or type the installed graph does not have.
    """
    raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# Dispatch hooks: called once per plugin at startup to build the registries of named handlers
# that actions refer to by name (``policies=(...)``, ``effect=...``).
# ---------------------------------------------------------------------------------------------


@hookspec
def tessera_policies() -> Mapping[str, PolicyHandler]:
    """Return the custom policies this plugin implements, by name.

    :returns: a mapping of policy name (a dotted name, conventionally prefixed by the plugin's
        domain, such as ``helpdesk.own_ticket``) to a handler taking an
        :class:`~plugin_api.ActionContext` and returning ``True`` to allow (sync or async),
        or to a :class:`~plugin_api.BatchPolicy` (plugin API 1.7), asked about many rows at
        once when a reader is shown which actions each row allows (:mod:`plugin_api.policies`).

    Result rule: every plugin's result is collected; names must be unique across all plugins,
    and every name an action refers to must be implemented by some installed plugin.
    Policies run after the role check and the subject lookup, before the workflow gate.
    """
    raise NotImplementedError


@hookspec
def tessera_effects() -> Mapping[str, EffectHandler]:
    """Return the custom effects this plugin implements, by name.

    :returns: a mapping of effect name (such as ``billing.assign_number``) to a handler
        taking an :class:`~plugin_api.ActionContext` (sync or async); mark it with
        :func:`~plugin_api.dry_run_safe` when a dry run may run it (:mod:`plugin_api.policies`).

    Result rule: as for :func:`tessera_policies`. An effect runs inside the action's
    transaction after the built-in effect (insert values, transition target and stamps, or
    patch) has been prepared and before the row is written, so values it sets are written in
    the same statement and reported in the outputs.
    """
    raise NotImplementedError


@hookspec
def tessera_read_policies() -> Mapping[str, ReadPolicyHandler]:
    """Return the read policies this plugin implements, by name.

    :returns: a mapping of policy name (such as ``helpdesk.office_hours``) to a handler taking
        a :class:`~plugin_api.ReadContext` and returning ``True`` (allow), a
        :class:`~plugin_api.RowCondition` or a sequence of them (allow only matching rows), or
        anything else (deny with 403 ``PolicyDenied``); sync or async.

    Result rule: as for :func:`tessera_policies`; every name a projection's
    ``access.policies`` refers to must be implemented by some installed plugin. Read policies
    run after the role check and before anything is read; they must not touch the database.
    """
    raise NotImplementedError


@hookspec
def tessera_validators() -> Mapping[str, ValidatorHandler]:
    """Return the entity validators this plugin implements, by name (plugin API 1.8).

    :returns: a mapping of validator name (such as ``tracker.open_project``) to a handler
        taking a :class:`~plugin_api.RowWrite` (sync or async) that raises an error of the
        taxonomy to refuse the write (:mod:`plugin_api.validators`).

    Result rule: as for :func:`tessera_policies`; every name an entity's ``validators``
    refers to must be implemented by some installed plugin. Validators run on every create,
    update and transition of a row of the entity, whoever writes it, inside the writing
    transaction, after the values are assembled and before the row is written.
    """
    raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# Event hooks: called once per plugin at startup.
# ---------------------------------------------------------------------------------------------


@hookspec
def tessera_subscribers() -> Sequence[Subscriber]:
    """Return the subscribers this plugin declares (plugin API 1.5).

    :returns: a sequence of :class:`~plugin_api.Subscriber`: async handlers that receive the
        events of committed actions after the commit (see :mod:`plugin_api.events` and
        ``docs/events.md``).

    Result rule: every plugin's result is collected; names must be unique across all plugins,
    and every action and entity a subscriber names must exist in the graph.
    """
    raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# Authority hooks: called once per plugin at startup.
# ---------------------------------------------------------------------------------------------


@hookspec
def tessera_grants() -> Sequence[Grant]:
    """Return what this plugin's effects and subscribers may do with other plugins' actions
    and entities (plugin API 1.9; :mod:`plugin_api.grants`).

    :returns: a sequence of :class:`~plugin_api.RunsAction` (run another plugin's action,
        as the plugin's system identity or, where the action accepts delegation, as the
        caller) and :class:`~plugin_api.SystemRead` (read every row of another plugin's
        entity, whatever its read floor).

    Result rule: every plugin's result is collected per plugin; each action and entity named
    must exist and belong to another plugin, ``Authority.CALLER`` only for an action that
    declares ``accepts_delegation``. Only plugins requiring plugin API 1.9 are held to their
    declarations; older ones keep the earlier behaviour (with a warning).
    """
    raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# Time hooks: called once per plugin when the host compiles the metadata graph.
# ---------------------------------------------------------------------------------------------


@hookspec
def tessera_timers() -> Sequence[Timer]:
    """Return the timers this plugin declares (plugin API 1.10; :mod:`plugin_api.timers`).

    :returns: a sequence of :class:`~plugin_api.StateTimer` and
        :class:`~plugin_api.FieldTimer`; each names an action of an entity and the system
        actor that runs it when the timer fires.

    Result rule: every plugin's result is collected; names must be unique across all plugins,
    and every entity, state, field and action named must exist (a startup error otherwise).
    Timers enter the graph's canonical form and hash.
    """
    raise NotImplementedError
