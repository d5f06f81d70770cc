"""Every endpoint of the API under the prefix, in one table (:data:`ENDPOINTS`): the app adds
a URL rule for each (:func:`host.http.create_app`) and the OpenAPI document describes each
(:func:`host.http.openapi.build_openapi`). ``OPTIONS`` on any path is answered by the CORS
layer (:mod:`host.http.cors`) and described on every path of the document. The console's
HTML pages (:mod:`host.console`) are not endpoints of the API."""

from __future__ import annotations

from typing import Final

from host.http.endpoint import Endpoint
from host.http.routes.actions import ACTION
from host.http.routes.audit import AUDIT_EXPORT, AUDIT_VERIFY
from host.http.routes.availability import AVAILABILITY
from host.http.routes.changes import CHANGES
from host.http.routes.history import HISTORY
from host.http.routes.projections import PROJECTION
from host.http.routes.service import HEALTH, OPENAPI, READY

__all__ = [
    "ACTION",
    "AUDIT_EXPORT",
    "AUDIT_VERIFY",
    "AVAILABILITY",
    "CHANGES",
    "ENDPOINTS",
    "HEALTH",
    "HISTORY",
    "OPENAPI",
    "PROJECTION",
    "READY",
]

ENDPOINTS: Final[tuple[Endpoint, ...]] = (
    HEALTH,
    OPENAPI,
    READY,
    PROJECTION,
    AVAILABILITY,
    HISTORY,
    AUDIT_VERIFY,
    AUDIT_EXPORT,
    CHANGES,
    ACTION,
)
"""The routes, in the order the app adds them."""
