"""Cron schedules of the plugins' cron jobs (plugin API 1.12; docs/timers.md, "Cron jobs"),
read by the ``croniter`` library: five fields (minute, hour, day of month, month, day of
week), six with a last field of seconds, or one of its ``@daily``-style names; always UTC.

Times are the host's canonical datetime text (:func:`host.fieldtypes.format_datetime`)."""

from __future__ import annotations

from datetime import datetime, timezone

from croniter import croniter

from host.fieldtypes import format_datetime, parse_datetime

__all__ = ["is_schedule", "next_occurrence", "occurs_at"]

_NAMED = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def is_schedule(schedule: str) -> bool:
    """Whether ``schedule`` is a cron expression a job may declare."""
    fields = schedule.split()
    if len(fields) == 1 and fields[0] in _NAMED:
        return True
    return len(fields) in (5, 6) and bool(croniter.is_valid(schedule))


def _instant(text: str) -> datetime:
    parsed = parse_datetime(text)  # naive UTC
    if parsed is None:
        raise ValueError(f"not a datetime: {text!r}")
    return parsed.replace(tzinfo=timezone.utc)


def next_occurrence(schedule: str, after: str) -> str:
    """The first occurrence of ``schedule`` strictly after the instant ``after``."""
    following = croniter(schedule, _instant(after)).get_next(datetime)
    assert isinstance(following, datetime)
    return format_datetime(following)


def occurs_at(schedule: str, instant: str) -> bool:
    """Whether ``instant`` is an occurrence of ``schedule`` (the job's schedule may have
    changed since the occurrence was armed)."""
    at = _instant(instant)
    previous = croniter(schedule, at).get_prev(datetime)
    assert isinstance(previous, datetime)
    return next_occurrence(schedule, format_datetime(previous)) == format_datetime(at)
