"""The host with the installed plugins plus one more action and projection on helpdesk
tickets whose reopen is limited by the helpdesk sample's example *batch* policy
(``open_ticket_limit``: one ``find`` for every row asked about). For bench/availability.py.

Served like the host: ``TESSERA_DATABASE_URL=... python -m hypercorn apps.availability:app``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tessera_helpdesk.plugin import open_ticket_limit

from host.config import Settings
from host.http import create_app
from plugin_api import (
    ListOptions,
    PolicyHandler,
    Projection,
    TransitionAction,
    hookimpl,
)

TICKET = "helpdesk.ticket"


class Limits:
    @hookimpl
    def tessera_actions(self) -> Sequence[TransitionAction]:
        return (
            TransitionAction(
                fqn="limits.reopen",
                entity=TICKET,
                transition="reopen",
                policies=("limits.open_ticket_limit",),
            ),
        )

    @hookimpl
    def tessera_projections(self) -> Sequence[Projection]:
        return (
            Projection(
                fqn="limits.tickets",
                entity=TICKET,
                fields=("id", "title", "requester", "state"),
                actions=("limits.reopen",),
                listing=ListOptions(default_page_size=50),
            ),
        )

    @hookimpl
    def tessera_policies(self) -> Mapping[str, PolicyHandler]:
        return {"limits.open_ticket_limit": open_ticket_limit}


app = create_app(Settings.from_env(), extra_plugins=[("limits", Limits())])
