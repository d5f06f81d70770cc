"""An example of registering the helpdesk's batch policy ``open_ticket_limit``: a plugin
object (not an entry point) with a reopen action of its own behind it and a projection
offering that action. The plugin's tests and bench/availability.py install it with
``extra=[("limits", Limits())]``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugin_api import ListOptions, PolicyHandler, Projection, TransitionAction, hookimpl
from tessera_helpdesk.plugin import TICKET, open_ticket_limit

REOPEN = "limits.reopen"
TICKETS = "limits.tickets"


class Limits:
    """Reopening a ticket, limited to requesters with fewer than three open tickets."""

    @hookimpl
    def tessera_actions(self) -> Sequence[TransitionAction]:
        return (
            TransitionAction(
                fqn=REOPEN,
                entity=TICKET,
                transition="reopen",
                policies=("limits.open_ticket_limit",),
            ),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn=TICKETS,
                entity=TICKET,
                fields=("id", "title", "requester", "state"),
                actions=(REOPEN,),
                listing=ListOptions(default_page_size=50),
            ),
        )

    @hookimpl
    def tessera_policies(self) -> Mapping[str, PolicyHandler]:
        return {"limits.open_ticket_limit": open_ticket_limit}
