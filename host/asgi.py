"""The ASGI entry point: ``hypercorn host.asgi:app`` (what ``tessera serve`` runs).

Imported in every Hypercorn worker: it hardens Hypercorn's protocol handling for the service
port (``host.http.protocol``) before building the app. A worker that cannot start (a bad
setting, a broken plugin graph, a database it cannot reach) prints one line and makes the
whole server exit non-zero (:func:`host.startup.abort_worker`)."""

from host.config import Settings
from host.errors import StartupError
from host.graph import GraphError
from host.http import create_app
from host.http.protocol import harden_hypercorn
from host.logs import configure_logging
from host.startup import abort_worker, check_database_url, die_with_parent

die_with_parent()
try:
    _settings = Settings.from_env()
    configure_logging(log_format=_settings.log_format)
    check_database_url(_settings)
    harden_hypercorn(_settings)
    app = create_app(_settings, on_startup_failure=abort_worker)
except (ValueError, StartupError) as _exc:
    abort_worker(str(_exc))
except GraphError as _exc:
    abort_worker(f"{len(_exc.errors)} error(s) in the plugin graph: " + "; ".join(_exc.errors))
