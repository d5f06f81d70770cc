"""Time moves tickets (shared/spec/sample-plugins.md, "Additions"; plugin API 1.10 timers).

* An ``open`` or ``in_progress`` ticket whose ``due_at`` passes is escalated by the system
  (``helpdesk.ticket.escalate``), once per ``due_at`` value; a ``due_at`` already past when
  written schedules nothing.
* A ``resolved`` ticket left alone for the plugin's ``autoclose_after`` setting (default 7
  days; ``TESSERA_HELPDESK_AUTOCLOSE_AFTER``: seconds, or a number with ``s``, ``m``, ``h``
  or ``d``) is closed (``helpdesk.ticket.close``).

Both run as the system actor ``system:helpdesk.sla`` with the role ``agent``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import timedelta

from plugin_api import FieldTimer, StateTimer, SystemActor, Timer

TICKET = "helpdesk.ticket"
AUTOCLOSE_AFTER_ENV = "TESSERA_HELPDESK_AUTOCLOSE_AFTER"
DEFAULT_AUTOCLOSE_AFTER = timedelta(days=7)
SLA = SystemActor(name="helpdesk.sla", roles=("agent",))
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def autoclose_after(environ: Mapping[str, str] = os.environ) -> timedelta:
    """The ``autoclose_after`` setting (ValueError when it is not a positive duration)."""
    raw = environ.get(AUTOCLOSE_AFTER_ENV, "").strip().lower()
    if not raw:
        return DEFAULT_AUTOCLOSE_AFTER
    unit = _UNITS.get(raw[-1])
    number = raw[:-1] if unit else raw
    seconds = float(number) * (unit or 1)
    if not seconds > 0:
        raise ValueError(f"{AUTOCLOSE_AFTER_ENV} must be a positive duration, got {raw!r}")
    return timedelta(seconds=seconds)


# docs:start helpdesk-timers
def timers() -> Sequence[Timer]:
    """The helpdesk's timers."""
    return (
        FieldTimer(
            name=f"{TICKET}.overdue",
            entity=TICKET,
            field="due_at",
            states=("open", "in_progress"),
            action=f"{TICKET}.escalate",
            actor=SLA,
        ),
        StateTimer(
            name=f"{TICKET}.autoclose",
            entity=TICKET,
            state="resolved",
            after=autoclose_after(),
            action=f"{TICKET}.close",
            actor=SLA,
        ),
    )


# docs:end helpdesk-timers
