"""The Quart application factory."""

from __future__ import annotations

import functools
import gc
from collections.abc import Awaitable, Callable, Sequence

from quart import Quart, Response, request
from werkzeug.exceptions import RequestEntityTooLarge

from host.auth import identity_for
from host.config import Settings
from host.console import Answers, console_enabled, mount_console
from host.errors import StartupError
from host.graph import Graph, build_graph
from host.http.action_lane import ActionLane
from host.http.cors import CorsMiddleware
from host.http.draining import stop_all_on_sigterm
from host.http.endpoint import Endpoint
from host.http.failures import register_failures
from host.http.openapi import openapi_text
from host.http.routes import ACTION, CHANGES, ENDPOINTS, HISTORY, PROJECTION
from host.http.site import Site
from host.metrics import Metrics
from host.service import Service
from host.storage.plan import SchemaEvolutionError

SERVING_GC_THRESHOLD = 10_000
"""The cyclic collector's first threshold while an app serves (Python's default: 700). A
request allocates a few hundred tracked objects and frees nearly all of them by reference
counting; at 700 a young collection ran every two to five requests, walking the objects of
every request in flight and promoting them to the older generations, about 0.08 ms of CPU
per request (4 %). At 10,000 that is about 0.01 ms, and one young collection takes a few
milliseconds (docs/benchmarks.md, "Writes: the request path and the tail")."""

_serving: list[tuple[int, int, int]] = []
"""The thresholds before the first app of this process started serving, once per app
serving (the tests run several in one process)."""


async def _freeze_startup_objects() -> None:
    """What exists once a worker has started lives as long as the worker: frozen, the cyclic
    garbage collector no longer walks it on each full collection, which took ~100 ms of CPU
    on a started worker and held every request in flight (docs/benchmarks.md, "Read latency
    tail"). Undone when the app stops (``gc.unfreeze``), so that a process that starts
    another app (the tests) can collect this one. Both are constant-time list moves. The
    first threshold is raised to :data:`SERVING_GC_THRESHOLD` while any app serves."""
    gc.freeze()
    before = _serving[0] if _serving else gc.get_threshold()
    _serving.append(before)
    gc.set_threshold(max(SERVING_GC_THRESHOLD, before[0]), before[1], before[2])


def _thaw() -> None:
    """Undo :func:`_freeze_startup_objects` (the thresholds when the last app stops)."""
    gc.unfreeze()  # a process that starts another app (tests) collects this one's objects
    if _serving:
        before = _serving.pop()
        if not _serving:
            gc.set_threshold(*before)


def create_app(
    settings: Settings | None = None,
    *,
    graph: Graph | None = None,
    extra_plugins: Sequence[tuple[str, object]] = (),
    entry_points: bool = True,
    on_startup_failure: Callable[[str], None] | None = None,
) -> Quart:
    """Build the app. The graph is compiled here, so a broken plugin set fails at once
    (with every compiler error); the database is opened when serving starts.

    Every endpoint of :data:`~host.http.routes.ENDPOINTS` is routed under the prefix, with
    the app's :class:`~host.http.site.Site`.

    ``on_startup_failure``: called with one line when serving cannot start for a known
    reason (the database cannot be reached or needs a migration); a Hypercorn worker ends
    the process there (:func:`host.startup.abort_worker`)."""
    settings = settings or Settings.from_env()
    if graph is None:
        graph = build_graph(settings, extra=extra_plugins, entry_points=entry_points)

    metrics = Metrics(settings.api_prefix, graph.actions) if settings.metrics else None
    identity = identity_for(settings, metrics.auth_failed if metrics is not None else None)
    app = Quart("tessera")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False
    app.config["RESPONSE_TIMEOUT"] = settings.response_timeout_s
    openapi = openapi_text(graph, settings.api_prefix).encode()
    site = Site(settings, graph, identity=identity, metrics=metrics, openapi=openapi)
    app.extensions["tessera.service"] = site.service  # the test harness's way in
    app.extensions["tessera.site"] = site

    @app.before_serving
    async def start_service() -> None:
        stop_all_on_sigterm()
        try:
            on_delivery = metrics.delivered if metrics is not None else None
            site.running = await Service.start(settings, graph, on_delivery=on_delivery)
            if metrics is not None:
                site.running.storage.on_transaction = metrics.transactions.observe
                if site.running.timers is not None:  # issue 41, docs/timers.md
                    site.running.timers.observe(
                        metrics.timer_settled, metrics.timers_counted, metrics.timers_purged
                    )
        except (StartupError, SchemaEvolutionError) as exc:
            if on_startup_failure is None:
                raise
            line = str(exc) if isinstance(exc, StartupError) else exc.report()
            on_startup_failure(line)
            raise

    @app.after_serving
    async def stop_service() -> None:
        _thaw()
        await identity.aclose()
        running, site.running = site.running, None
        if running is not None:
            await running.stop()
        if metrics is not None:
            metrics.worker_exited()

    @app.before_request
    async def limit_body() -> None:
        length = request.content_length
        if length is not None and length > settings.max_body_bytes:
            raise RequestEntityTooLarge()

    for endpoint in ENDPOINTS:
        app.add_url_rule(
            settings.api_prefix + endpoint.rule,
            endpoint.name,
            _view(endpoint, site),
            methods=[endpoint.method],
        )
        app.before_serving(functools.partial(endpoint.start, site))
        # Before the service's own stop (which closes the database).
        app.after_serving_funcs.insert(0, functools.partial(endpoint.stop, site))

    if console_enabled(settings):
        names = tuple(sorted(graph.projections))
        answers = Answers(site, PROJECTION, ACTION, CHANGES, identity.actor, names, HISTORY)
        mount_console(app, settings, answers)

    register_failures(app)

    app.before_serving(_freeze_startup_objects)  # last: after the service and the live hub
    # The plain action request past Quart's request machinery (host/http/action_lane.py).
    lane = ActionLane(app.asgi_app, app, site)  # type: ignore[arg-type]
    middleware = CorsMiddleware(
        lane,
        access_log=settings.access_log,
        token_mode=settings.auth_mode == "token",
        draining=site.draining,
    )
    if metrics is None:
        app.asgi_app = middleware  # type: ignore[assignment,method-assign]
    else:
        app.asgi_app = metrics.middleware(middleware, site.connections_in_use)  # type: ignore[assignment,method-assign]
    return app


def _view(endpoint: Endpoint, site: Site) -> Callable[..., Awaitable[Response]]:
    """The Quart view of ``endpoint`` in the app of ``site``."""

    async def view(**path: str) -> Response:
        return await endpoint.respond(site, **path)

    return view
