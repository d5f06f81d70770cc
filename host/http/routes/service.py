"""The service's own endpoints: liveness (spec part 4), readiness and the OpenAPI document."""

from __future__ import annotations

import logging

from quart import Response

from host.graph import Graph
from host.http.endpoint import Endpoint, Operations
from host.http.envelope import JSON, error_response, json_response
from host.http.openapi_parts import json_answer, ref
from host.http.site import Site
from plugin_api.errors import ServiceUnavailable

__all__ = ["HEALTH", "OPENAPI", "READY"]

logger = logging.getLogger("tessera.http")


class Health(Endpoint):
    """``GET /_health``: always 200 (spec 2.3); no identity resolved."""

    name = "health"
    method = "GET"
    rule = "/_health"

    async def respond(self, site: Site, **path: str) -> Response:
        return json_response(
            {"ok": True, "service": site.settings.service_name, "graphHash": site.graph.hash}
        )

    def describe(self, graph: Graph) -> Operations:
        return {
            "/_health": {
                "operationId": "health",
                "summary": "Liveness probe",
                "tags": ["service"],
                "responses": {"200": json_answer("Always", ref("schemas", "Health"))},
            }
        }


class Ready(Endpoint):
    """``GET /_ready``: readiness (not in the v0.1 spec; health stays liveness only): the
    database must answer within TESSERA_READY_TIMEOUT_S, else 503 in the error envelope."""

    name = "ready"
    method = "GET"
    rule = "/_ready"

    async def respond(self, site: Site, **path: str) -> Response:
        running = site.service()
        problem = await running.storage.probe(site.settings.ready_timeout_s)
        if problem is not None:
            logger.warning("not ready: %s", problem)
            return error_response(ServiceUnavailable(f"Not ready: {problem}"))
        return json_response(
            {
                "ok": True,
                "service": site.settings.service_name,
                "graphHash": site.graph.hash,
                "database": running.storage.dialect.name,
            }
        )

    def describe(self, graph: Graph) -> Operations:
        return {
            "/_ready": {
                "operationId": "ready",
                "summary": "Readiness probe: the database answers",
                "description": "503 ServiceUnavailable in the error envelope when the database "
                "does not answer within TESSERA_READY_TIMEOUT_S.",
                "tags": ["service"],
                "responses": {
                    "200": json_answer("Ready", ref("schemas", "Ready")),
                    "503": json_answer("Not ready", ref("schemas", "ErrorEnvelope")),
                },
            }
        }


class OpenApi(Endpoint):
    """``GET /openapi.json``: the document, built once per app."""

    name = "openapi"
    method = "GET"
    rule = "/openapi.json"

    async def respond(self, site: Site, **path: str) -> Response:
        return Response(site.openapi, content_type=JSON)

    def describe(self, graph: Graph) -> Operations:
        return {
            "/openapi.json": {
                "operationId": "openapi",
                "summary": "This document",
                "tags": ["service"],
                "responses": {"200": json_answer("The OpenAPI document", {"type": "object"})},
            }
        }


HEALTH = Health()
READY = Ready()
OPENAPI = OpenApi()
