"""The plan of a schema evolution: classified changes, the rows they affect, their SQL.

Built by :mod:`host.storage.evolution`, applied by :mod:`host.storage.migrate`, printed by
``tessera migrate --plan``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import sqlalchemy as sa

from host.fieldtypes import column_type
from host.storage.convert import Converter
from plugin_api.definitions import Field

__all__ = [
    "ALLOWABLE_KINDS",
    "Backfill",
    "Change",
    "ChangeClass",
    "Convert",
    "MapValues",
    "NeedsTrigram",
    "Operation",
    "Plan",
    "Refold",
    "SchemaEvolutionError",
    "Statement",
    "table_clause",
]


class ChangeClass(str, enum.Enum):
    """How a change is treated at startup."""

    METADATA = "metadata"
    """No stored data is concerned: recorded, nothing else."""
    ADDITIVE = "additive"
    """Loses nothing: applied at startup (new tables and columns, backfills)."""
    BREAKING = "breaking"
    """Could lose or strand data: the host refuses to start; ``migrate --apply --allow``."""


ALLOWABLE_KINDS: Final = (
    "entity-removed",
    "field-added",
    "field-removed",
    "type-changed",
    "unconvertible",
    "field-required",
    "enum-option-removed",
    "state-removed",
    "currency-changed",
)
"""Kinds that can be breaking, i.e. the values of ``migrate --apply --allow``.
``unconvertible`` allows a type change to leave values it cannot convert null."""


@dataclass(frozen=True, slots=True)
class Statement:
    """DDL run as it is."""

    sql: str


@dataclass(frozen=True, slots=True)
class Backfill:
    """``UPDATE table SET column = value`` (only where it is null when ``only_null``)."""

    table: str
    column: str
    field: Field
    value: object
    only_null: bool


@dataclass(frozen=True, slots=True)
class Convert:
    """Fill ``column`` page by page from the moved-aside ``source`` column, converting each
    value with ``converter`` (unconvertible values are left null: the plan allowed them)."""

    table: str
    source: str
    column: str
    field: Field
    converter: Converter
    rows: int
    """Rows holding a value (the progress total)."""
    old_type: str = ""
    """The field's type before (how the moved-aside values read)."""
    old_currency: str | None = None


@dataclass(frozen=True, slots=True)
class MapValues:
    """``UPDATE table SET column = mapping[column] WHERE column IN mapping`` (removed options
    or states to the ones the plugin maps them to)."""

    table: str
    column: str
    field: Field
    mapping: tuple[tuple[str, str | None], ...]
    rows: int


@dataclass(frozen=True, slots=True)
class Refold:
    """Fill the shadow column ``shadow`` page by page with the folded values of ``column``
    (the text index of ``q``, :mod:`host.storage.search`)."""

    table: str
    column: str
    shadow: str
    rows: int
    """Rows holding a value (the progress total)."""


@dataclass(frozen=True, slots=True)
class NeedsTrigram:
    """PostgreSQL: create the ``pg_trgm`` extension, or refuse in one line saying what to
    run when this role may not."""


Operation = Statement | Backfill | Convert | MapValues | Refold | NeedsTrigram


@dataclass(frozen=True, kw_only=True, slots=True)
class Change:
    """One difference between the database's graph and the installed one."""

    kind: str
    change_class: ChangeClass
    subject: str
    """What changes, e.g. ``field 'color' of entity 'evo.item'``."""
    detail: str = ""
    affected_rows: int | None = None
    """Rows whose stored data the change concerns (``None``: not about rows)."""
    unconvertible: int = 0
    """Type changes: rows whose value has no equivalent in the new type."""
    samples: tuple[str, ...] = ()
    """Some ``tenant/id`` of unconvertible rows."""
    via: str = ""
    """Type changes: the conversion used (the host's own, or a plugin's mapping or function)."""
    reason: str = ""
    """Type changes: why the first unconvertible value could not be converted."""
    violations: int = 0
    """Rows that applying would leave breaking the field's declared rules (null in a
    non-nullable field without default, a removed option or state nobody maps): no
    ``--allow`` applies such a change."""
    violation_samples: tuple[str, ...] = ()
    """Some ``tenant/id`` of those rows."""
    remedy: str = ""
    """What the plugin can declare so that the change applies."""
    outcome: str = ""
    """What applying it does to the data (moved-aside names, rows left as they are)."""
    sql: tuple[str, ...] = ()
    operations: tuple[Operation, ...] = field(default=(), repr=False)

    @property
    def breaking(self) -> bool:
        return self.change_class is ChangeClass.BREAKING

    def refusal(self) -> str:
        """Why no flag applies this change ("" when one does)."""
        if not self.violations:
            return ""
        more = self.violations - len(self.violation_samples)
        named = ", ".join(self.violation_samples) + (f" and {more} more" if more > 0 else "")
        return (
            f"{self.violations} row(s) would break the field's declared rules ({named}); "
            f"{self.remedy}"
        )

    def needs(self) -> tuple[str, ...]:
        """The ``--allow`` kinds applying this change requires."""
        needed: list[str] = [self.kind] if self.breaking else []
        if self.unconvertible:
            needed.append("unconvertible")
        return tuple(needed)

    def line(self) -> str:
        """One line: class, kind, subject, detail and affected rows."""
        text = f"[{self.change_class.value}] {self.kind}: {self.subject}"
        if self.detail:
            text += f" ({self.detail})"
        if self.affected_rows is not None:
            text += f"; affected rows: {self.affected_rows}"
        if self.unconvertible:
            text += f"; cannot convert: {self.unconvertible} ({', '.join(self.samples)})"
            if self.reason:
                text += f", e.g. {self.reason}"
        if self.via and self.affected_rows:
            text += f"; converted by {self.via}: {self.affected_rows - self.unconvertible}"
        if self.violations:
            text += f"; breaks declared rules: {self.violations}"
        return text

    def as_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "class": self.change_class.value,
            "subject": self.subject,
            "detail": self.detail,
            "affectedRows": self.affected_rows,
            "unconvertible": self.unconvertible,
            "samples": list(self.samples),
            "via": self.via,
            "reason": self.reason,
            "violations": self.violations,
            "violationSamples": list(self.violation_samples),
            "refusal": self.refusal(),
            "outcome": self.outcome,
            "sql": list(self.sql),
            "needs": list(self.needs()),
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """Every change from the database's graph to the installed graph."""

    dialect: str
    database_hash: str | None
    """Hash of the graph the database was last prepared for (``None``: never recorded)."""
    graph_hash: str
    changes: tuple[Change, ...]

    @property
    def up_to_date(self) -> bool:
        return self.database_hash == self.graph_hash and not self.changes

    @property
    def breaking(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.breaking or c.unconvertible or c.violations)

    def blocked(self, allow: Iterable[str] = ()) -> tuple[Change, ...]:
        """Changes that need an ``--allow`` kind not in ``allow``, and those no flag allows
        (rows that would break their field's declared rules)."""
        allowed = frozenset(allow)
        return tuple(
            c for c in self.changes if c.violations or any(k not in allowed for k in c.needs())
        )

    def render(self) -> str:
        """The plan as text: one block per change, with its SQL."""
        old = self.database_hash[:12] if self.database_hash else "none recorded"
        lines = [f"Schema plan ({self.dialect}): database graph {old} -> {self.graph_hash[:12]}"]
        if self.up_to_date:
            lines.append("  up to date: nothing to do")
        for change in self.changes:
            lines.append(f"  {change.line()}")
            if change.outcome:
                lines.append(f"      -> {change.outcome}")
            if change.violations:
                lines.append(f"      refused: {change.refusal()}")
            lines.extend(f"      SQL: {sql}" for sql in change.sql)
        counts = {c: sum(1 for x in self.changes if x.change_class is c) for c in ChangeClass}
        lines.append(
            "  total: " + ", ".join(f"{n} {c.value}" for c, n in counts.items()) + " change(s)"
        )
        return "\n".join(lines)

    def as_json(self) -> dict[str, object]:
        return {
            "dialect": self.dialect,
            "databaseHash": self.database_hash,
            "graphHash": self.graph_hash,
            "upToDate": self.up_to_date,
            "changes": [c.as_json() for c in self.changes],
        }


class SchemaEvolutionError(Exception):
    """The installed graph needs changes that are not allowed; nothing was altered."""

    def __init__(self, plan: Plan, blocked: tuple[Change, ...]) -> None:
        self.plan = plan
        self.blocked = blocked
        super().__init__(self.report())

    def report(self) -> str:
        lines = [
            f"Refusing to change the database schema: {len(self.blocked)} breaking change(s) "
            "could lose or strand data; nothing was altered.",
        ]
        for change in self.blocked:
            if change.violations:
                lines.append(f"  - {change.line()} [no flag applies it]")
                lines.append(f"      {change.refusal()}")
                continue
            flags = " ".join(f"--allow {kind}" for kind in change.needs())
            lines.append(f"  - {change.line()} [needs {flags}]")
            if change.outcome:
                lines.append(f"      with the flag: {change.outcome}")
        lines.append(
            "Review with `tessera migrate --plan`; apply with "
            "`tessera migrate --apply --allow <kind> ...`."
        )
        return "\n".join(lines)


def table_clause(name: str, column: str, field_: Field) -> sa.TableClause:
    """A lightweight table with one typed column, for backfills and conversions."""
    return sa.table(name, sa.column(column, column_type(field_)))
