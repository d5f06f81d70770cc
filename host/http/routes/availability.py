"""``POST /availability`` (docs/http.md, "Availability"): which of these actions may I run on
these rows?"""

from __future__ import annotations

from quart import Response, request

from host import jsonio
from host.graph import Graph
from host.http.availability import question
from host.http.endpoint import Endpoint, Operations
from host.http.envelope import json_response
from host.http.media import require_json
from host.http.openapi_availability import availability_operation
from host.http.openapi_parts import IDENTITY_HEADERS, error_responses, json_answer, ref
from host.http.site import Site
from host.query.params import SCHEMA_1_5, at_least, negotiate
from host.runtime import Actor

__all__ = ["AVAILABILITY"]


async def _posted(site: Site) -> tuple[Actor, bytes]:
    """The actor and the raw body of a POST, its media type checked. The body is read
    before anything can refuse the request: an answer sent while the body is still
    arriving makes Hypercorn drop the keep-alive connection after it, and the client's
    next request on that connection fails."""
    raw = await request.get_data(cache=False, as_text=False)
    assert isinstance(raw, bytes)
    headers = request.headers
    settings = site.settings
    actor = await site.identity.actor(headers, require_actor_id=settings.require_actor_id)
    if settings.require_json_content_type:
        require_json(headers.getlist("Content-Type"))
    return actor, raw


class AvailabilityEndpoint(Endpoint):
    """The batch question of availability."""

    name = "availability"
    method = "POST"
    rule = "/availability"

    async def respond(self, site: Site, **path: str) -> Response:
        actor, raw = await _posted(site)
        body = jsonio.loads_object(raw)
        availability = site.service().runtime.availability
        version = negotiate(request.args.getlist("acceptSchemaVersions"))
        certain = at_least(version, SCHEMA_1_5)  # each verdict's certain (docs/http.md)
        answer = await question(site.graph, availability, actor, body, certain=certain)
        return json_response(answer)

    def describe(self, graph: Graph) -> Operations:
        identity = [ref("parameters", name) for name in IDENTITY_HEADERS]
        return {"/availability": availability_operation(identity, error_responses, json_answer)}


AVAILABILITY = AvailabilityEndpoint()
