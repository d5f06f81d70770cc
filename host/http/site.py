"""What the endpoints of one app share (:class:`Site`): the settings, the compiled graph, the
identity resolution, the read gate, the ViewSchema templates, the metrics, the running
service and the worker's live hub. The endpoints are module-level objects
(:mod:`host.http.routes`); each request is answered with the site of its app."""

from __future__ import annotations

from collections.abc import Mapping

from host.auth import Identity
from host.config import Settings
from host.graph import Graph
from host.http.draining import Draining
from host.http.livehub import LiveHub
from host.http.viewschema import ViewSchemaTemplate
from host.metrics import Metrics
from host.runtime.access import ReadGate
from host.service import Service

__all__ = ["Site"]


class Site:
    """One app's shared state; the service is set when serving starts."""

    def __init__(
        self,
        settings: Settings,
        graph: Graph,
        *,
        identity: Identity,
        metrics: Metrics | None,
        openapi: bytes,
    ) -> None:
        self.settings = settings
        self.graph = graph
        self.identity = identity
        self.metrics = metrics
        self.openapi = openapi
        """The OpenAPI document served (:mod:`host.http.openapi`)."""
        self.templates: Mapping[str, ViewSchemaTemplate] = {
            fqn: ViewSchemaTemplate(projection, graph.plugin_labels.get(projection.plugin.name))
            for fqn, projection in graph.projections.items()
        }
        self.gate = ReadGate(graph, anonymous_shared=settings.anonymous_shared)
        self.draining = Draining()
        self.live = LiveHub(settings, metrics, self.draining)
        self.running: Service | None = None
        """The service once serving has started (``None`` before and after)."""

    @property
    def prefix(self) -> str:
        return self.settings.api_prefix

    def service(self) -> Service:
        """The running service."""
        running = self.running
        if running is None:
            raise RuntimeError("the service is not running")
        return running

    def connections_in_use(self) -> int:
        running = self.running
        return 0 if running is None else running.storage.connections_in_use()
