"""The ASGI entry point: ``hypercorn host.asgi:app`` (what ``tessera serve`` runs).

Imported in every Hypercorn worker: it hardens Hypercorn's protocol handling for the service
port (``host.http.protocol``) before building the app.
"""

from host.config import Settings
from host.http import create_app
from host.http.protocol import harden_hypercorn
from host.logs import configure_logging

configure_logging()
settings = Settings.from_env()
harden_hypercorn(settings)
app = create_app(settings)
