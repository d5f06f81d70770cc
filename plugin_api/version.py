"""The version of the plugin API, and how a plugin requires one.

``PLUGIN_API_VERSION`` is ``MAJOR.MINOR``: a minor release only adds to :mod:`plugin_api`, a
major release may break it. A plugin that needs an addition sets, in the module its entry
point names::

    TESSERA_PLUGIN_API = "1.2"

and the host refuses to start on a plugin API of another major version or an older minor one,
naming the plugin and both versions. A plugin that requires nothing was written for 1.0.

What a minor release may change for a plugin that loaded before (docs/compatibility.md): a
rule it adds that refuses something, or a default it changes, applies to the plugins that
require that release or a later one; an older plugin keeps the older behaviour (a safe form of
it where the rule protects readers), and ``tessera check`` and the start log warn naming the
rule, its reason and the fix. A deprecated spelling works until the major release named for
its removal, and ``tessera check`` lists every use. Only a major release may refuse what loaded
before or change an answer a plugin relies on.
"""

from __future__ import annotations

from typing import Final

PLUGIN_API_VERSION: Final = "1.12"
"""This plugin API's version (1.1 added ``PLUGIN_API_VERSION`` itself; 1.2 added the list
declarations ``ListOptions``, ``Filter``, ``FilterOperator``, ``MAX_PAGE_SIZE``, and
``ANONYMOUS_ACTOR``, ``ROLE_NAME_PATTERN``, ``is_role_name``; 1.3 the typed data API
``ActionContext.data`` and reference fields; 1.4 the migration declarations of
``tessera_migrations``: ``ConvertField``, ``RenameField``, ``RenameEntity``, ``MapOptions``,
``MapStates``, ``CannotConvert``; 1.5 events: ``Subscriber``, ``Event``, ``EventContext``,
``SubscriberHandler`` and the ``tessera_subscribers`` hook; 1.6 the error classes beyond the
spec's table: ``UnsupportedMediaType``, ``IdempotencyKeyReused``, ``ServiceUnavailable``; 1.7
batch policies and dry runs: ``BatchPolicy``, ``batch_policy``, ``BatchPolicyHandler``,
``PolicyVerdict``, ``dry_run_safe``, ``is_dry_run_safe``, ``DryRunUnsupported``; record
history ``ActionContext.data.history`` and ``HistoryRecord``; ``Unauthenticated`` (token
mode); the entity read floor ``Entity(access=...)``; 1.8 relations: the display field
``Entity(display=...)``, followed projection fields (``project.key``), ``RowScope(fields=...)``,
scopes and read-policy conditions through a reference, ``AnyOf`` / ``Condition.any_of`` and
``ReadContext.followed``; entity rules: field constraints ``Field(min_length=...,
enforce_max_length=..., pattern=..., minimum=..., maximum=...)``, field ownership
``Field(written_by=...)`` and ``WrittenBy``, ``OwnershipDenied``, entity validators
``Entity(validators=...)``, the ``tessera_validators`` hook, ``RowWrite``, ``ValidatorHandler``,
``DataAccess.run`` and ``MAX_RUN_DEPTH``, ``ANY_FIELD`` and the stampable-nothing default of
``TransitionAction`` for plugins requiring 1.8; counters ``ActionContext.data.increment``, state
events ``Subscriber(states=...)`` and ``Subscriber.wants_state``, the harness's ``Host.stop``,
``Host.deliveries_settled``, ``Host.audit_trail``, ``Client.history``,
``TesseraHarness.migrate`` and the settings it takes, ``plugin_api.settings``); 1.9 the
harness's shared hosts: the ``tessera_shared`` fixture, ``SharedHarness``, ``TenantHost``;
explicit authority: the ``tessera_grants`` hook, ``RunsAction``, ``SystemRead``, ``Authority``,
``Grant``, ``SYSTEM_ACTOR_PREFIX``, the actions' ``accepts_delegation``, and for plugins
requiring 1.9 nested actions and data-API reads under the declared authority; 1.10 declared
rules: the actions' ``requires`` and ``Entity.invariants`` (``Requirement``, ``RuleValue``,
``ACTOR_ID``, ``row_field``, ``input_value``) and ``refuses`` / ``effect_refusals``; and labels:
``label`` of ``Entity``, ``Projection`` and the actions, the plugin module's
``TESSERA_PLUGIN_LABEL`` and ``plugin_api.labels``; and timers: ``StateTimer``,
``FieldTimer``, ``SystemActor``, ``Timer``, ``SYSTEM_TIMER_ACTOR_PREFIX`` and the ``tessera_timers``
hook; 1.11 an empty ``ReadAccess()`` declares a projection or an entity open on purpose, for
plugins requiring 1.11; 1.12 cron jobs: ``CronJob`` among the items of ``tessera_timers``)."""

REQUIRES_ATTRIBUTE: Final = "TESSERA_PLUGIN_API"
"""The plugin module's attribute naming the plugin API version it requires."""


def parse_version(text: str) -> tuple[int, int]:
    """``"1.1"`` -> ``(1, 1)``; :class:`ValueError` unless ``MAJOR.MINOR`` in digits."""
    major, dot, minor = text.partition(".")
    if not (dot and major.isdigit() and minor.isdigit() and major.isascii() and minor.isascii()):
        raise ValueError(f"expected MAJOR.MINOR such as {PLUGIN_API_VERSION!r}, got {text!r}")
    return int(major), int(minor)


def provides(required: str, provided: str = PLUGIN_API_VERSION) -> bool:
    """Whether plugin API ``provided`` satisfies a plugin requiring ``required``."""
    want, have = parse_version(required), parse_version(provided)
    return want[0] == have[0] and want[1] <= have[1]
