"""Configuration declared as data, read once from ``TESSERA_*`` environment variables."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any


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


SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="database_url",
        parse=str.strip,
        default="sqlite:///tessera.db",
        help="Database URL: sqlite:///path/to/file.db (default, relative to the working "
        "directory) or postgresql://user@host:port/dbname.",
    ),
    Setting(
        name="api_prefix",
        parse=_parse_prefix,
        default="/api",
        help="Path prefix of every route (empty or '/' for none).",
    ),
    Setting(
        name="max_body_bytes",
        parse=_parse_positive_int,
        default=1024 * 1024,
        help="Largest accepted request body, in bytes; larger bodies get 413.",
    ),
    Setting(
        name="service_name",
        parse=str.strip,
        default="tessera",
        help="The 'service' value of the health response.",
    ),
    Setting(
        name="plugins_disabled",
        parse=_parse_names,
        default=(),
        help="Comma-separated entry-point names of installed plugins not to load.",
    ),
    Setting(
        name="plugins_only",
        parse=_parse_names,
        default=(),
        help="Comma-separated entry-point names: when set, load only these plugins.",
    ),
    Setting(
        name="sqlite_busy_timeout_ms",
        parse=_parse_positive_int,
        default=30_000,
        help="How long a SQLite writer waits for another process's write lock.",
    ),
    Setting(
        name="pg_pool_min",
        parse=_parse_positive_int,
        default=2,
        help="PostgreSQL: connections opened at startup per process.",
    ),
    Setting(
        name="pg_pool_max",
        parse=_parse_positive_int,
        default=10,
        help="PostgreSQL: most connections per process.",
    ),
    Setting(
        name="list_chunk_rows",
        parse=_parse_positive_int,
        default=1000,
        help="Rows read and serialised per chunk of a list projection; longer lists are streamed.",
    ),
    Setting(
        name="response_timeout_s",
        parse=_parse_positive_int,
        default=60,
        help="Seconds a response may take to send, a streamed list included; a stream cut "
        "off by it closes the connection before the end of the body, and is logged.",
    ),
    Setting(
        name="access_log",
        parse=_parse_bool,
        default=True,
        help="Log one line per request on the 'tessera.access' logger.",
    ),
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Settings:
    """The host's configuration; immutable once read."""

    database_url: str = "sqlite:///tessera.db"
    api_prefix: str = "/api"
    max_body_bytes: int = 1024 * 1024
    service_name: str = "tessera"
    plugins_disabled: tuple[str, ...] = ()
    plugins_only: tuple[str, ...] = ()
    sqlite_busy_timeout_ms: int = 30_000
    pg_pool_min: int = 2
    pg_pool_max: int = 10
    list_chunk_rows: int = 1000
    response_timeout_s: int = 60
    access_log: bool = True

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
        current = {f.name: getattr(self, f.name) for f in fields(self)}
        return [(s.env_var, repr(current[s.name]), s.help) for s in SETTINGS]
