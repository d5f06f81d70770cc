"""An endpoint of the API: one route under the prefix, as the app routes it and as the
OpenAPI document describes it (Starlette's ``Route`` and ``SchemaGenerator`` in one object).

Each endpoint is a module-level object (:mod:`host.http.routes`); the app adds a URL rule for
every one of :data:`host.http.routes.ENDPOINTS` and the document (:mod:`host.http.openapi`)
describes every one of them, so a route cannot exist without its description.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from quart import Response

from host.graph import Graph
from host.http.site import Site

__all__ = ["Endpoint", "Operations"]

Operations = dict[str, dict[str, Any]]
"""OpenAPI path (under the prefix) -> the operation of an endpoint's method on it."""


class Endpoint(abc.ABC):
    """A route: its method, its rule (under the prefix, werkzeug syntax), how it answers the
    request of the app whose site it is given, and how the document describes it."""

    name: ClassVar[str]
    """The app's endpoint name (Quart's), unique in the table."""
    method: ClassVar[str]
    """``GET`` or ``POST`` (``OPTIONS`` is answered on every path by the CORS layer)."""
    rule: ClassVar[str]
    """The URL rule under the prefix, e.g. ``/projections/<fqn>``."""
    operator: ClassVar[bool] = False
    """An operator's route (flagged ``x-tessera-operator`` in the document)."""

    @abc.abstractmethod
    async def respond(self, site: Site, **path: str) -> Response:
        """The answer to the current request (Quart's ``request``) of ``site``'s app;
        ``path``: the rule's variables."""

    @abc.abstractmethod
    def describe(self, graph: Graph) -> Operations:
        """The OpenAPI operation of this endpoint on each concrete path it serves for
        ``graph`` (one per projection for ``/projections/<fqn>``, ...)."""

    async def start(self, site: Site) -> None:
        """Called when ``site``'s app starts serving, after its service started."""
        return

    async def stop(self, site: Site) -> None:
        """Called when ``site``'s app stops serving, before its service stops."""
        return

    def __repr__(self) -> str:
        return f"<endpoint {self.name}: {self.method} {self.rule}>"
