"""Live changes over HTTP (docs/live.md): ``GET /changes?projection=<fqn>[&projection=...]``,
a ``text/event-stream`` of the changed rows of the watched projections, resumable with
``Last-Event-ID``. The worker's hub (:class:`~host.http.livehub.LiveHub`) starts and stops
with this endpoint."""

from __future__ import annotations

from typing import Final

from quart import Response, request
from werkzeug.datastructures import Headers, MultiDict

from host.graph import Graph
from host.http.endpoint import Endpoint, Operations
from host.http.openapi_live import changes_operation
from host.http.site import Site
from host.live import Watch
from host.live.sse import CONTENT_TYPE, stream
from host.live.visibility import readable_ids
from host.query.params import parse_filters
from plugin_api.errors import BadRequest, ProjectionNotFound, ServiceUnavailable
from plugin_api.listing import MAX_PAGE_SIZE

__all__ = ["CHANGES", "MAX_PROJECTIONS", "MAX_SHOWN", "SHOWN", "ChangesEndpoint"]

MAX_PROJECTIONS: Final = 20
"""The most projections one stream may watch."""
PARAMETER: Final = "projection"
SHOWN: Final = "shown"
"""The rows the client shows (repeatable; present, even empty: a tracking stream, told
``left`` when a row leaves a watched projection, docs/live.md)."""
MAX_SHOWN: Final = MAX_PAGE_SIZE


class ChangesEndpoint(Endpoint):
    """The stream of one reader's changes."""

    name = "changes"
    method = "GET"
    rule = "/changes"

    async def start(self, site: Site) -> None:
        await site.live.start(site.service())

    async def stop(self, site: Site) -> None:
        await site.live.stop()

    async def respond(self, site: Site, **path: str) -> Response:
        return await self.answer(site, request.args, request.headers)

    async def answer(self, site: Site, args: MultiDict[str, str], headers: Headers) -> Response:
        """The answer for these arguments and headers (the console calls it in process with
        its identity headers)."""
        settings, metrics = site.settings, site.metrics
        actor = await site.identity.actor(headers)  # header or token mode, as on every route
        tenant = actor.tenant_id
        names = args.getlist(PARAMETER)
        if not names:
            raise BadRequest(f"Parameter {PARAMETER!r} is required (a projection to watch)")
        if len(names) > MAX_PROJECTIONS:
            raise BadRequest(f"At most {MAX_PROJECTIONS} projections per stream")
        resumes = headers.getlist("Last-Event-ID")
        if len(resumes) > 1:
            raise BadRequest("Last-Event-ID given more than once")
        tracking = SHOWN in args
        shown_ids = [row for row in args.getlist(SHOWN) if row]
        if len(shown_ids) > MAX_SHOWN:
            raise BadRequest(f"Parameter {SHOWN!r}: at most {MAX_SHOWN} rows per stream")
        running = site.service()
        watches: list[Watch] = []
        for fqn in dict.fromkeys(names):
            projection = running.graph.projections.get(fqn)
            if projection is None:
                raise ProjectionNotFound(f"Unknown projection '{fqn}'")
            spec = running.reads.spec(fqn)
            scope = await site.gate.conditions(projection, actor, spec, None)
            watches.append(Watch(projection, (*scope, *parse_filters(args, spec))))
        # A row the reader cannot read in a projection now is never told to have left it.
        shown = (
            {
                watch.projection.fqn: await readable_ids(running.reads, tenant, watch, shown_ids)
                for watch in watches
            }
            if tracking
            else None
        )
        hub = site.live.hub
        if hub is None or hub.closing:
            raise ServiceUnavailable("This worker is shutting down; reconnect")
        if hub.full():
            raise ServiceUnavailable(
                f"Too many live streams on this worker ({hub.max_streams}); retry later"
            )
        subscription = await hub.subscribe(tenant, tuple(watches), shown)
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

    def describe(self, graph: Graph) -> Operations:
        return {
            "/changes": changes_operation(sorted(graph.projections), MAX_PROJECTIONS, MAX_SHOWN)
        }


CHANGES = ChangesEndpoint()
