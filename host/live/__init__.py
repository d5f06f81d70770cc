"""Live changes: server-sent events telling a client which rows of the projections it
watches changed (docs/live.md)."""

from host.live.hub import Hub, Subscription
from host.live.watch import Watch

__all__ = ["Hub", "Subscription", "Watch"]
