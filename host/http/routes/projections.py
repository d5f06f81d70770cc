"""``GET /projections/<fqn>``: a projection rendered as a ViewSchema document (spec 2.4 to
2.8), in list or detail shape, with the list parameters, the read access and the negotiated
ViewSchema version of docs/http.md."""

from __future__ import annotations

import dataclasses

from quart import Response, request
from werkzeug.datastructures import Headers, MultiDict

from host.fieldtypes import now_db, render_datetime
from host.graph import Graph
from host.http.availability import row_annotator
from host.http.document import detail_document, offer
from host.http.endpoint import Endpoint, Operations
from host.http.envelope import JSON, json_response
from host.http.history import AS_OF, item_as_of
from host.http.lists import list_response
from host.http.openapi_projections import projection_operation
from host.http.site import Site
from host.query.conditions import Clause
from host.query.params import (
    SCHEMA_1_1,
    SCHEMA_1_2,
    SCHEMA_1_4,
    SCHEMA_1_5,
    at_least,
    negotiate,
    parse_list_query,
    plain_query,
)
from host.runtime.access import guarded, needs_gate, offered_actions
from host.timers.view import add_row_timers
from plugin_api.errors import ProjectionNotFound

__all__ = ["PROJECTION", "ProjectionEndpoint"]


class ProjectionEndpoint(Endpoint):
    """One operation per projection (``render.<fqn>``)."""

    name = "projection"
    method = "GET"
    rule = "/projections/<fqn>"

    async def respond(self, site: Site, **path: str) -> Response:
        return await self.answer(site, path["fqn"], request.args, request.headers)

    async def answer(
        self, site: Site, fqn: str, args: MultiDict[str, str], headers: Headers
    ) -> Response:
        """The answer for these arguments and headers (the console renders its pages from
        it, in process)."""
        settings = site.settings
        identity = site.identity
        tenant = await identity.tenant(headers)
        template = site.templates.get(fqn)
        if template is None:
            raise ProjectionNotFound(f"Unknown projection '{fqn}'")
        compiled = template.projection
        reads = site.service().reads
        spec = reads.spec(fqn)
        subject = args.get("subject")
        scope: tuple[Clause, ...] = ()
        offered: frozenset[str] | None = None
        version = negotiate(args.getlist("acceptSchemaVersions"))
        displays = at_least(version, SCHEMA_1_4)  # each row's _display (docs/http.md)
        annotate = None
        availability_asked = at_least(version, SCHEMA_1_2)  # docs/http.md, "Availability"
        gated = needs_gate(compiled)
        if gated or availability_asked:
            actor = await identity.actor(headers)
            if gated:  # docs/http.md, "Read access" (and "Relations")
                scope = await site.gate.conditions(compiled, actor, spec, subject)
            if guarded(compiled):
                offered = offered_actions(compiled, actor)
            if availability_asked:
                availability = site.service().runtime.availability
                certain = at_least(version, SCHEMA_1_5)  # each verdict's certain
                annotate = row_annotator(availability, compiled, offered, actor, certain=certain)
        generated_at = str(render_datetime(now_db()))
        if subject is None:
            chunk_rows = settings.list_chunk_rows
            query = parse_list_query(args, spec, version, tenant, reads.cursors, scope)
            if query is not None:  # list parameters or 1.1.0 (docs/http.md, "Lists")
                query = dataclasses.replace(query, offered=offered, displays=displays)
                parts = (reads, template, compiled, query, version, tenant, generated_at)
                count_limit = settings.list_count_limit
                return await list_response(
                    *parts, chunk_rows, annotate=annotate, count_limit=count_limit
                )
            plain = plain_query(scope)
            listing = await reads.every_row(compiled, tenant, plain, chunk_rows)
            if listing.rest is None:
                return json_response(template.render_list(tenant, generated_at, listing.first))
            # A long list is streamed: memory stays bounded by one chunk of rows, and no
            # database connection is held while the client reads.
            return Response(
                template.list_stream(tenant, generated_at, listing.first, listing.rest),
                content_type=JSON,
            )
        item = await reads.one(compiled, tenant, subject, scope, displays=displays)
        as_of = args.get(AS_OF)
        if as_of is not None:  # docs/history.md, "As of"
            reader = await identity.actor(headers)
            item = await item_as_of(site.service(), compiled, tenant, item, as_of, reader)
        elif annotate is not None and item is not None:  # the row as it is now only
            await annotate([item])
        document = template.render_detail(tenant, generated_at, item)
        if at_least(version, SCHEMA_1_1):
            document = offer(detail_document(document, spec, version, template), offered)
        if at_least(version, SCHEMA_1_5) and item is not None and as_of is None:
            service = site.service()  # the row's pending timers (issue 41, docs/timers.md)
            await add_row_timers(
                service.graph, service.storage, compiled.entity.fqn, tenant, subject, document
            )
        return json_response(document)

    def describe(self, graph: Graph) -> Operations:
        return {
            f"/projections/{fqn}": projection_operation(projection)
            for fqn, projection in sorted(graph.projections.items())
        }


PROJECTION = ProjectionEndpoint()
