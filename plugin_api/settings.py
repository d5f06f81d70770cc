"""The settings a plugin author meets: what ``tessera.start(**settings)`` (the test harness,
:mod:`plugin_api.testing`) and ``tessera.migrate(**settings)`` take as keywords, and the
``TESSERA_*`` environment variables the host reads them from (plugin API 1.8).

This is the public description; the host reads every setting once at startup (``tessera
config`` prints them all, operators' settings included: docs/deploy.md). A test sets one by
keyword::

    host = await tessera.start(plugins=["helpdesk"], events_poll_s=0.05, require_actor_id=True)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HARNESS_SETTINGS", "SettingInfo", "setting_info"]


@dataclass(frozen=True, kw_only=True, slots=True)
class SettingInfo:
    """One setting.

    :param keyword: the keyword of ``tessera.start`` / ``tessera.migrate`` (the
        environment variable is :attr:`env_var`).
    :param type: ``bool``, ``int``, ``float``, ``str`` or ``names`` (a tuple of names; in
        the environment, comma-separated).
    :param default: the value when nothing sets it.
    :param meaning: what it does, for a plugin's tests.
    """

    keyword: str
    type: str
    default: object
    meaning: str

    @property
    def env_var(self) -> str:
        """The environment variable: ``TESSERA_`` + the keyword in upper case."""
        return "TESSERA_" + self.keyword.upper()


def _s(keyword: str, type: str, default: object, meaning: str) -> SettingInfo:
    return SettingInfo(keyword=keyword, type=type, default=default, meaning=meaning)


HARNESS_SETTINGS: tuple[SettingInfo, ...] = (
    _s(
        "plugins_only",
        "names",
        (),
        "Load only these installed plugins (entry-point names); "
        "the harness sets it from start(plugins=...).",
    ),
    _s("plugins_disabled", "names", (), "Installed plugins not to load."),
    _s("api_prefix", "str", "/api", "Path prefix of every route; the harness's clients follow it."),
    _s(
        "require_actor_id",
        "bool",
        False,
        "Refuse actions without X-Actor-Id with 403 PolicyDenied instead of acting as 'anon'.",
    ),
    _s(
        "anonymous_shared",
        "bool",
        False,
        "Callers without X-Actor-Id share one identity for row scopes and idempotency keys.",
    ),
    _s(
        "history_roles",
        "names",
        (),
        "Roles that may read a row's history (empty: every reader of the projection).",
    ),
    _s("list_count_limit", "int", 100_000, "Most rows a list count or facet reads."),
    _s("max_body_bytes", "int", 1_048_576, "Largest request body; larger ones get 413."),
    _s(
        "events_dispatch",
        "bool",
        True,
        "Deliver events from this host (False: the deliveries "
        "wait in the table; host.deliveries_settled() would time out).",
    ),
    _s(
        "timers_poll",
        "float",
        0.5,
        "Seconds an idle timer loop waits before it looks for due timers again "
        "(0: off; plugin API 1.10): lower it (0.05) for fast timer tests.",
    ),
    _s(
        "events_poll_s",
        "float",
        0.5,
        "Seconds an idle dispatcher waits before it looks again: "
        "lower it (0.05) for fast event tests.",
    ),
    _s(
        "events_backoff_s",
        "float",
        1.0,
        "Seconds before the first retry of a failed delivery (doubled after each failure).",
    ),
    _s("events_backoff_max_s", "float", 600.0, "Longest wait between two delivery attempts."),
    _s("events_max_attempts", "int", 8, "Attempts before a delivery is dead."),
    _s(
        "events_lease_s",
        "float",
        60.0,
        "Seconds a dispatcher holds a delivery; must exceed every subscriber's timeout_s.",
    ),
    _s("events_concurrency", "int", 32, "Deliveries one dispatcher runs at once."),
    _s(
        "migration_versions",
        "bool",
        True,
        "Rows a migration rewrites get a new _version, "
        "updated_at and an audit record naming the migration (False: rewritten in place).",
    ),
    _s(
        "sqlite_busy_timeout_ms",
        "int",
        30_000,
        "How long a SQLite writer waits for another process's write lock.",
    ),
)
"""The settings a plugin's tests may set, by keyword (the others are the operators':
``tessera config``)."""


def setting_info(keyword: str) -> SettingInfo:
    """The description of one setting.

    :raises KeyError: not a setting of :data:`HARNESS_SETTINGS`.
    """
    for info in HARNESS_SETTINGS:
        if info.keyword == keyword:
            return info
    raise KeyError(keyword)
