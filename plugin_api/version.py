"""The version of the plugin API, and how a plugin requires one.

``PLUGIN_API_VERSION`` is ``MAJOR.MINOR``: a minor release only adds to :mod:`plugin_api`, a
major release may break it. A plugin that needs an addition sets, in the module its entry
point names::

    TESSERA_PLUGIN_API = "1.2"

and the host refuses to start on a plugin API of another major version or an older minor one,
naming the plugin and both versions.
"""

from __future__ import annotations

from typing import Final

PLUGIN_API_VERSION: Final = "1.8"
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
``TesseraHarness.migrate`` and the settings it takes, ``plugin_api.settings``)."""

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
