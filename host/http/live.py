"""Live changes over HTTP (docs/live.md): ``GET /changes?projection=<fqn>[&projection=...]``,
a ``text/event-stream`` of the changed rows of the watched projections, resumable with
``Last-Event-ID``. One :class:`~host.live.Hub` per worker reads the audit log for all its
streams."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, NamedTuple

from quart import Quart, Response, request
from werkzeug.datastructures import Headers, MultiDict

from host.auth import Identity
from host.config import Settings
from host.http.draining import Draining
from host.live import Hub, Watch
from host.live.feed import AuditFeed
from host.live.notify import Notifier
from host.live.sse import CONTENT_TYPE, stream
from host.metrics import Metrics
from host.runtime.access import ReadGate
from host.service import Service
from plugin_api.errors import BadRequest, ProjectionNotFound, ServiceUnavailable

__all__ = ["MAX_PROJECTIONS", "ChangesAnswer", "Live", "register_live"]

MAX_PROJECTIONS: Final = 20
"""The most projections one stream may watch."""
PARAMETER: Final = "projection"

ChangesAnswer = Callable[[MultiDict[str, str], Headers], Awaitable[Response]]


class Live(NamedTuple):
    """What :func:`register_live` gives the rest of the app."""

    committed: Callable[[], None]
    """Called by the action route after each commit (wakes the hub, NOTIFYs)."""
    answer: ChangesAnswer
    """The answer of ``GET {prefix}/changes`` for these arguments and headers (the console
    calls it in process with its identity headers)."""


def register_live(
    app: Quart,
    prefix: str,
    settings: Settings,
    service: Callable[[], Service],
    gate: ReadGate,
    metrics: Metrics | None,
    draining: Draining,
    identity: Identity,
) -> Live:
    """Add the route and the worker's hub (started with the service, stopped before it)."""
    state: dict[str, Hub] = {}
    notifier = Notifier(settings)

    @app.before_serving
    async def start_hub() -> None:
        running = service()
        hub = Hub(
            AuditFeed(running.storage, running.schema),
            running.reads,
            poll_s=settings.live_poll_s,
            max_streams=settings.live_max_streams,
            resume_max=settings.live_resume_max,
            draining=draining,
            on_streams=metrics.live_streams.set if metrics is not None else None,
        )
        state["hub"] = hub
        await notifier.start(running.storage, hub.wake)

    async def stop_hub() -> None:
        hub = state.pop("hub", None)
        await notifier.stop()
        if hub is not None:
            await hub.stop()

    # Before the service's own stop (which closes the database): the poller must end first.
    app.after_serving_funcs.insert(0, stop_hub)

    @app.get(f"{prefix}/changes")
    async def changes() -> Response:
        return await changes_answer(request.args, request.headers)

    async def changes_answer(args: MultiDict[str, str], headers: Headers) -> Response:
        actor = await identity.actor(headers)  # header or token mode, as on every route
        tenant = actor.tenant_id
        names = args.getlist(PARAMETER)
        if not names:
            raise BadRequest(f"Parameter {PARAMETER!r} is required (a projection to watch)")
        if len(names) > MAX_PROJECTIONS:
            raise BadRequest(f"At most {MAX_PROJECTIONS} projections per stream")
        resumes = headers.getlist("Last-Event-ID")
        if len(resumes) > 1:
            raise BadRequest("Last-Event-ID given more than once")
        running = service()
        watches: list[Watch] = []
        for fqn in dict.fromkeys(names):
            projection = running.graph.projections.get(fqn)
            if projection is None:
                raise ProjectionNotFound(f"Unknown projection '{fqn}'")
            spec = running.reads.spec(fqn)
            scope = await gate.conditions(projection, actor, spec, None)
            watches.append(Watch(projection, scope))
        hub = state.get("hub")
        if hub is None or hub.closing:
            raise ServiceUnavailable("This worker is shutting down; reconnect")
        if hub.full():
            raise ServiceUnavailable(
                f"Too many live streams on this worker ({hub.max_streams}); retry later"
            )
        subscription = await hub.subscribe(tenant, tuple(watches))
        body = stream(
            hub,
            subscription,
            resume=resumes[0] if resumes else None,
            heartbeat_s=settings.live_heartbeat_s,
            on_sent=metrics.live_sent if metrics is not None else None,
        )
        response = Response(body, content_type=CONTENT_TYPE)
        response.timeout = None  # a stream lasts as long as the client stays
        response.headers["X-Accel-Buffering"] = "no"  # nginx: pass each message at once
        return response

    def committed() -> None:
        hub = state.get("hub")
        if hub is not None:
            hub.wake()
        notifier.notify()

    return Live(committed, changes_answer)
