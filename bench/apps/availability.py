"""The host with the installed plugins plus the helpdesk sample's ``Limits`` example: a reopen
action behind the example *batch* policy ``open_ticket_limit`` (one ``find`` for every row
asked about) and the projection ``limits.tickets``. For bench/availability.py.

Served like the host: ``TESSERA_DATABASE_URL=... python -m hypercorn apps.availability:app``.
"""

from __future__ import annotations

from tessera_helpdesk.limits import Limits

from host.config import Settings
from host.http import create_app

app = create_app(Settings.from_env(), extra_plugins=[("limits", Limits())])
