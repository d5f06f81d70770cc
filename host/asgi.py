"""The ASGI entry point: ``hypercorn host.asgi:app``."""

from host.http import create_app
from host.logs import configure_logging

configure_logging()
app = create_app()
