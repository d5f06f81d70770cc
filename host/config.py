"""Configuration declared as data, read once from ``TESSERA_*`` environment variables."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Final

from host.webhook_settings import Webhook, parse_webhooks


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"expected a boolean (1/0, true/false), got {raw!r}")


def _parse_names(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _parse_positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise ValueError(f"expected a positive integer, got {raw!r}")
    return value


def _parse_positive_float(raw: str) -> float:
    value = float(raw)
    if not value > 0 or value == float("inf"):
        raise ValueError(f"expected a positive number of seconds, got {raw!r}")
    return value


def _parse_poll_or_off(raw: str) -> float:
    """A positive number of seconds, or ``off`` (0)."""
    if raw.strip().lower() == "off":
        return 0.0
    return _parse_positive_float(raw)


def _parse_seconds_or_off(raw: str) -> float:
    value = float(raw)
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"expected a number of seconds (0: off), got {raw!r}")
    return value


_DURATION_UNITS: Final = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration_or_off(raw: str) -> float:
    """Seconds, or a number with ``s``, ``m``, ``h`` or ``d`` (``30d``); ``off`` or 0: 0."""
    text = raw.strip().lower()
    if text == "off":
        return 0.0
    scale = _DURATION_UNITS.get(text[-1:], 0.0)
    try:
        value = float(text[:-1] if scale else text) * (scale or 1.0)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"expected a duration such as 30d, 12h or 3600 (off: never), got {raw!r}")
    return value


def _parse_log_format(raw: str) -> str:
    value = raw.strip().lower()
    if value not in {"text", "json"}:
        raise ValueError(f"expected 'text' or 'json', got {raw!r}")
    return value


def _parse_leeway(raw: str) -> float:
    value = float(raw)
    if not 0 <= value < float("inf"):
        raise ValueError(f"expected a number of seconds >= 0, got {raw!r}")
    return value


def _parse_auth_mode(raw: str) -> str:
    value = raw.strip().lower()
    if value not in {"headers", "token"}:
        raise ValueError(f"expected 'headers' or 'token', got {raw!r}")
    return value


TOKEN_ALGORITHMS: frozenset[str] = frozenset(
    {
        *(f"{family}{bits}" for family in ("HS", "RS", "PS", "ES") for bits in (256, 384, 512)),
        "EdDSA",
    }
)
"""The JWS algorithms token mode can be told to accept (never ``none``)."""


def _parse_algorithms(raw: str) -> tuple[str, ...]:
    names = _parse_names(raw)
    unknown = [name for name in names if name not in TOKEN_ALGORITHMS]
    if unknown or not names:
        raise ValueError(
            f"expected a comma-separated list of {', '.join(sorted(TOKEN_ALGORITHMS))}, got {raw!r}"
        )
    return names


def _parse_pointer(raw: str) -> str:
    value = raw.strip()
    if value and not value.startswith("/"):
        raise ValueError(f"expected a JSON pointer such as /sub (RFC 6901), got {raw!r}")
    return value


def _parse_console(raw: str) -> str:
    value = raw.strip().lower()
    if value not in {"on", "off", "auto"}:
        raise ValueError(f"expected 'on', 'off' or 'auto', got {raw!r}")
    return value


def _parse_prefix(raw: str) -> str:
    prefix = "/" + raw.strip().strip("/")
    return "" if prefix == "/" else prefix


@dataclass(frozen=True, kw_only=True, slots=True)
class Setting:
    """One configuration variable: its attribute name, type parser, default and help."""

    name: str
    parse: Callable[[str], Any]
    default: Any
    help: str

    @property
    def env_var(self) -> str:
        return "TESSERA_" + self.name.upper()


def _setting(default: Any, parse: Callable[[str], Any], help: str) -> Any:
    """A field of :class:`Settings`: its default, with the parser and help as metadata."""
    return field(default=default, metadata={"parse": parse, "help": help})


@dataclass(frozen=True, kw_only=True, slots=True)
class Settings:
    """The host's configuration; immutable once read."""

    database_url: str = _setting(
        "sqlite:///tessera.db",
        str.strip,
        "Database URL: sqlite:///path/to/file.db (default, relative to the working "
        "directory) or postgresql://user@host:port/dbname.",
    )
    api_prefix: str = _setting(
        "/api",
        _parse_prefix,
        "Path prefix of every route (empty or '/' for none).",
    )
    max_body_bytes: int = _setting(
        1024 * 1024,
        _parse_positive_int,
        "Largest accepted request body, in bytes; larger bodies get 413.",
    )
    service_name: str = _setting(
        "tessera",
        str.strip,
        "The 'service' value of the health response.",
    )
    plugins_disabled: tuple[str, ...] = _setting(
        (),
        _parse_names,
        "Comma-separated entry-point names of installed plugins not to load.",
    )
    plugins_only: tuple[str, ...] = _setting(
        (),
        _parse_names,
        "Comma-separated entry-point names: when set, load only these plugins.",
    )
    sqlite_busy_timeout_ms: int = _setting(
        30_000,
        _parse_positive_int,
        "How long a SQLite writer waits for another process's write lock.",
    )
    sqlite_group_commit: int = _setting(
        32,
        _parse_positive_int,
        "SQLite: the most units of work waiting for the writer that share one commit "
        "(1: every unit of work commits alone).",
    )
    pg_pool_min: int = _setting(
        2,
        _parse_positive_int,
        "PostgreSQL: connections opened at startup per process.",
    )
    pg_pool_max: int = _setting(
        10,
        _parse_positive_int,
        "PostgreSQL: most connections per process.",
    )
    pg_pool_idle_s: float = _setting(
        300.0,
        _parse_positive_float,
        "PostgreSQL: seconds a pooled connection may stay idle before it is closed (opened "
        "again when needed).",
    )
    list_chunk_rows: int = _setting(
        1000,
        _parse_positive_int,
        "Rows read and serialised per chunk of a list projection; longer lists are streamed.",
    )
    list_count_limit: int = _setting(
        100_000,
        _parse_positive_int,
        "Most rows a list count or facet (count=true, facet=...) reads; beyond it the "
        'answer is a lower bound marked exact: false (docs/http.md, "Counts and facets").',
    )
    response_timeout_s: int = _setting(
        60,
        _parse_positive_int,
        "Seconds a response may take to send, a streamed list included; a stream cut "
        "off by it closes the connection before the end of the body, and is logged.",
    )
    ready_timeout_s: float = _setting(
        2.0,
        _parse_positive_float,
        "Seconds GET {prefix}/_ready waits for the database before answering 503.",
    )
    idempotency_retention_s: int = _setting(
        24 * 3600,
        _parse_positive_int,
        "Seconds an Idempotency-Key and its stored answer are kept; a retry within this "
        "window gets the stored answer, a later one runs as a new request.",
    )
    log_format: str = _setting(
        "text",
        _parse_log_format,
        "Log lines as 'text' or 'json' (one JSON object per line), Hypercorn's included.",
    )
    metrics: bool = _setting(
        False,
        _parse_bool,
        "Serve Prometheus metrics at GET /metrics (needs the 'metrics' extra).",
    )
    access_log: bool = _setting(
        True,
        _parse_bool,
        "Log one line per request on the 'tessera.access' logger.",
    )
    require_json_content_type: bool = _setting(
        True,
        _parse_bool,
        "Actions need a JSON Content-Type (application/json or application/*+json); "
        "others are 415, a missing one 400 (the CSRF protection of spec part 8). 'false' "
        "parses any body as JSON, as v0.1 did.",
    )
    require_actor_id: bool = _setting(
        False,
        _parse_bool,
        "Refuse actions without X-Actor-Id (or with 'anon') with 403 PolicyDenied, "
        "instead of acting as the shared actor 'anon'.",
    )
    anonymous_shared: bool = _setting(
        False,
        _parse_bool,
        "true: callers without X-Actor-Id (actor 'anon') share one identity for row scopes "
        "and Idempotency-Key answers, as before; false: they are nobody there (no rows of a "
        "scope on the actor, no stored answers).",
    )
    http2: bool = _setting(
        False,
        _parse_bool,
        "Serve HTTP/2 (ALPN h2 over TLS, prior knowledge in cleartext); otherwise only "
        "HTTP/1.1. An 'Upgrade' header is never honoured.",
    )
    events_dispatch: bool = _setting(
        True,
        _parse_bool,
        "Deliver events to subscribers and webhooks from this process (a background "
        "dispatcher in every worker); 'false' leaves delivery to other processes.",
    )
    timers_poll: float = _setting(
        0.5,
        _parse_poll_or_off,
        "Seconds the timer loop of each worker waits, when nothing is due, before it looks "
        "for due timers again (docs/timers.md); 'off' fires no timers from this process.",
    )
    timers_retention: float = _setting(
        30 * 86400.0,
        parse_duration_or_off,
        "How long settled timers (fired, failed, cancelled) are kept before the timer loop "
        "deletes them: seconds, or 30d, 12h, 45m; 'off' keeps them (docs/timers.md).",
    )
    events_poll_s: float = _setting(
        0.5,
        _parse_positive_float,
        "Seconds a dispatcher with nothing to deliver waits before it looks again.",
    )
    events_lease_s: float = _setting(
        60.0,
        _parse_positive_float,
        "Seconds a dispatcher holds a delivery it took; a process killed mid-delivery "
        "leaves it to others after this. Must exceed every subscriber's timeout.",
    )
    events_max_attempts: int = _setting(
        8,
        _parse_positive_int,
        "Delivery attempts before an event is dead for a subscriber (tessera events retry).",
    )
    events_backoff_s: float = _setting(
        1.0,
        _parse_positive_float,
        "Seconds before the first retry; doubled after each failure (with jitter), at "
        "most TESSERA_EVENTS_BACKOFF_MAX_S.",
    )
    events_backoff_max_s: float = _setting(
        600.0,
        _parse_positive_float,
        "Longest wait between two delivery attempts, in seconds.",
    )
    events_concurrency: int = _setting(
        32,
        _parse_positive_int,
        "Deliveries one dispatcher runs at once (distinct subjects or subscribers).",
    )
    webhooks: tuple[Webhook, ...] = _setting(
        (),
        parse_webhooks,
        'JSON array of webhook endpoints {"url", "secret", "events": [patterns]}; a pattern '
        "is an action FQN or a prefix ending in '*'. Events are POSTed signed "
        "(docs/events.md).",
    )
    console: str = _setting(
        "auto",
        _parse_console,
        "The HTML console at /-/console (docs/console.md): 'on', 'off', or 'auto' (on "
        "when `tessera serve` binds a loopback address only, off otherwise).",
    )
    console_secret: str = _setting(
        "",
        str.strip,
        "Key signing the console's cookies (identity chosen with 'act as', CSRF tokens); "
        "empty: a random key per process (set one when serving with several workers).",
    )
    serve_bind: str = _setting(
        "",
        str.strip,
        "The address `tessera serve --bind` gave (set by the command itself): the console "
        "is on by default and may 'act as' anyone only when it is a loopback address.",
    )

    auth_mode: str = _setting(
        "headers",
        _parse_auth_mode,
        "'headers': trust X-Tenant-ID, X-Actor-Id, X-Actor-Roles as sent (spec part 5; a "
        "verifying gateway must set them). 'token': verify an 'Authorization: Bearer' JWT "
        "in process and take the identity from its claims (docs/deploy.md, 'Token mode').",
    )
    auth_jwks_url: str = _setting(
        "",
        str.strip,
        "Token mode: the issuer's JWKS URL (keys fetched asynchronously and cached).",
    )
    auth_key_file: str = _setting(
        "",
        str.strip,
        "Token mode: a file holding the verification key instead of a JWKS URL: a PEM "
        "public key, or a JWKS document (JSON).",
    )
    auth_algorithms: tuple[str, ...] = _setting(
        ("RS256",),
        _parse_algorithms,
        "Token mode: comma-separated JWS algorithms accepted (never 'none'); the key must "
        "be of the algorithm's type.",
    )
    auth_issuer: str = _setting(
        "",
        str.strip,
        "Token mode: the required 'iss' claim.",
    )
    auth_audience: str = _setting(
        "",
        str.strip,
        "Token mode: the required 'aud' claim (this service's audience).",
    )
    auth_leeway_s: float = _setting(
        30.0,
        _parse_leeway,
        "Token mode: seconds of clock skew allowed on 'exp' and 'nbf'.",
    )
    auth_tenant_claim: str = _setting(
        "/tenant_id",
        _parse_pointer,
        "Token mode: JSON pointer to the tenant id claim.",
    )
    auth_tenants_claim: str = _setting(
        "",
        _parse_pointer,
        "Token mode: JSON pointer to an array of tenant ids the token may use; a request "
        "may then choose one with X-Tenant-ID (empty: X-Tenant-ID is refused).",
    )
    auth_actor_claim: str = _setting(
        "/sub",
        _parse_pointer,
        "Token mode: JSON pointer to the actor id claim.",
    )
    auth_roles_claim: str = _setting(
        "/roles",
        _parse_pointer,
        "Token mode: JSON pointer to the roles claim (an array of role names; absent: none).",
    )
    auth_jwks_refresh_s: float = _setting(
        30.0,
        _parse_positive_float,
        "Token mode: least seconds between two JWKS fetches (a token with an unknown key "
        "id fetches again at most this often).",
    )
    auth_jwks_max_age_s: float = _setting(
        600.0,
        _parse_positive_float,
        "Token mode: seconds after which the cached JWKS is refreshed in the background "
        "(the cached keys stay in use while the issuer is unreachable).",
    )
    auth_jwks_timeout_s: float = _setting(
        5.0,
        _parse_positive_float,
        "Token mode: seconds a JWKS fetch may take.",
    )

    audit_seal_s: float = _setting(
        60.0,
        _parse_seconds_or_off,
        "Seconds between two rounds of the audit sealer (the hash chain of each tenant's "
        "audit records, docs/history.md); audit verify fails on a record left unsealed "
        "longer. 0: this process does not seal.",
    )
    data_dir: str = _setting(
        "",
        str.strip,
        "Directory of the audit key and checkpoints when TESSERA_AUDIT_KEY_FILE and "
        "TESSERA_AUDIT_CHECKPOINTS are not set. Empty (default): the SQLite database's "
        "directory; on PostgreSQL none (the chain is sealed, no checkpoint is signed).",
    )
    audit_checkpoints: str = _setting(
        "",
        str.strip,
        "File the sealer appends signed checkpoints {tenant, count, head} to (JSON lines); "
        "keep it outside the database's reach. Empty: <database>.audit-checkpoints in the "
        "data directory (TESSERA_DATA_DIR), none without one.",
    )
    audit_checkpoint_url: str = _setting(
        "",
        str.strip,
        "URL the sealer POSTs each signed checkpoint to (one JSON object), besides the file "
        "or instead of it. Empty: none.",
    )
    audit_key_file: str = _setting(
        "",
        str.strip,
        "File holding the key the checkpoints are signed with (HMAC-SHA256). Empty: "
        "<database>.audit-key in the data directory, made by the first sealer.",
    )
    history_roles: tuple[str, ...] = _setting(
        (),
        _parse_names,
        "Comma-separated roles that may read a row's history and asOf renders; empty "
        "(default): every reader of the projection.",
    )
    audit_roles: tuple[str, ...] = _setting(
        ("auditor",),
        _parse_names,
        "Comma-separated roles that may call the audit verify and export routes.",
    )

    live_max_streams: int = _setting(
        1000,
        _parse_positive_int,
        "Live change streams (GET {prefix}/changes) one worker keeps open; past it a new "
        "stream is refused with 503 ServiceUnavailable (docs/live.md).",
    )
    live_poll_s: float = _setting(
        0.25,
        _parse_positive_float,
        "Seconds between two reads of the audit log by a worker's live hub (one read for "
        "all its streams; a commit in the same worker, or a NOTIFY, reads at once).",
    )
    live_heartbeat_s: float = _setting(
        15.0,
        _parse_positive_float,
        "Seconds of silence after which a live stream sends a heartbeat comment.",
    )
    live_resume_max: int = _setting(
        10_000,
        _parse_positive_int,
        "Audit records a stream resuming with Last-Event-ID may have missed; past it the "
        "stream gets a 'reset' message (reload everything) instead of the backlog.",
    )
    live_notify: bool = _setting(
        False,
        _parse_bool,
        "PostgreSQL: NOTIFY other processes after each action's commit and LISTEN for "
        "theirs, so their live streams hear of changes at once rather than at the next poll.",
    )

    migration_versions: bool = _setting(
        True,
        _parse_bool,
        "Rows whose values 'migrate --apply' rewrites (a conversion, a mapped option or "
        "state) get a new _version, updated_at and an audit record naming the migration; "
        "0 rewrites them in place without either, as before.",
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every ``TESSERA_*`` variable; a malformed value raises ``ValueError``
        naming the variable."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            raw = env.get(setting.env_var)
            if raw is None:
                continue
            try:
                values[setting.name] = setting.parse(raw)
            except ValueError as exc:
                raise ValueError(f"{setting.env_var}: {exc}") from None
        return cls(**values)

    def describe(self) -> list[tuple[str, str, str]]:
        """(variable, current value, help) for every setting, for the CLI."""
        return [(s.env_var, repr(getattr(self, s.name)), s.help) for s in SETTINGS]


SETTINGS: tuple[Setting, ...] = tuple(
    Setting(name=f.name, parse=f.metadata["parse"], default=f.default, help=f.metadata["help"])
    for f in fields(Settings)
)
"""Every setting, in declaration order (the defaults are those of :class:`Settings`)."""
