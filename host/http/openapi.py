"""The OpenAPI 3.1 document of a compiled graph: what the service really does, per operation.

Every endpoint of the table (:data:`host.http.routes.ENDPOINTS`) describes its operations
(:meth:`~host.http.endpoint.Endpoint.describe`): every projection and every action is an
operation of its own (path ``/projections/<fqn>``, ``/actions/<fqn>``), described from the
definitions: the action's inputs as JSON Schema, its outputs, the subject, the identity
headers, every status and error kind it can answer with (spec part 7), the CORS headers, the
list and detail shapes of the ViewSchema. Every path also has its ``OPTIONS`` preflight. The
document is a pure function of the graph and the prefix (no clock), with the graph hash in
``info``.
"""

from __future__ import annotations

import json
from typing import Any

from host import __version__
from host.graph.model import Graph
from host.http.openapi_availability import AVAILABILITY_SCHEMAS
from host.http.openapi_live import LIVE_SCHEMAS
from host.http.openapi_parts import (
    HEADERS,
    OPENAPI_VERSION,
    PARAMETERS,
    SHARED_SCHEMAS,
    preflight,
)
from host.http.openapi_projections import row_schema
from host.http.routes import ENDPOINTS

__all__ = ["build_openapi", "openapi_text"]


def _paths(graph: Graph) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for endpoint in ENDPOINTS:
        for path, operation in endpoint.describe(graph).items():
            if endpoint.operator:
                operation["x-tessera-operator"] = True
            paths.setdefault(path, {})[endpoint.method.lower()] = operation
    for item in paths.values():
        item["options"] = preflight()
    return paths


def _components(graph: Graph) -> dict[str, Any]:
    schemas: dict[str, Any] = {**SHARED_SCHEMAS, **AVAILABILITY_SCHEMAS, **LIVE_SCHEMAS}
    for fqn in sorted(graph.projections):
        schemas[f"{fqn}.Row"] = row_schema(graph.projections[fqn])
    return {"schemas": schemas, "parameters": PARAMETERS, "headers": HEADERS}


def build_openapi(graph: Graph, prefix: str = "/api") -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``graph`` served under ``prefix``."""
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Tessera",
            "version": __version__,
            "description": (
                "Projections and actions of the installed plugins. Compiled graph "
                f"`{graph.hash}`. The service performs no authentication: a gateway sets "
                "the identity headers (spec part 5). Every route under the prefix is here "
                "(operator routes carry `x-tessera-operator: true` and the tag `operator`); "
                "the built-in console's HTML pages (`/-/console/`) and the metrics "
                "(`/metrics`) are not part of the API and are left out."
            ),
            "x-graph-hash": graph.hash,
            "x-plugins": [
                {"name": p.name, "distribution": p.distribution, "version": p.version}
                for p in graph.plugins
            ],
        },
        "servers": [{"url": prefix or "/"}],
        "tags": [
            {"name": "service"},
            {"name": "live", "description": "Live changes (docs/live.md)"},
            {
                "name": "operator",
                "description": "An operator's routes (TESSERA_AUDIT_ROLES), not an application's",
            },
            *({"name": fqn} for fqn in sorted(graph.entities)),
        ],
        "paths": _paths(graph),
        "components": _components(graph),
    }


def openapi_text(graph: Graph, prefix: str = "/api") -> str:
    """The document as indented JSON with sorted keys (deterministic)."""
    return json.dumps(build_openapi(graph, prefix), indent=2, sort_keys=True, ensure_ascii=False)
