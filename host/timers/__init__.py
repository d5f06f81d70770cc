"""Timers fired by the system (issue 41; docs/timers.md): :mod:`host.timers.firing` fires one
due timer as an ordinary action in one transaction with its claim, :mod:`host.timers.scheduler`
is the loop each process runs."""

from host.timers.firing import Firing, FiringCounts, TimerRow
from host.timers.scheduler import TimerScheduler

__all__ = ["Firing", "FiringCounts", "TimerRow", "TimerScheduler"]
