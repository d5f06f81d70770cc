"""The action runtime and projection reads, usable without HTTP."""

from host.runtime.actor import ANONYMOUS, Actor, resolve_actor, resolve_tenant
from host.runtime.engine import ActionRuntime
from host.runtime.reads import ProjectionReader, projection_columns

__all__ = [
    "ANONYMOUS",
    "ActionRuntime",
    "Actor",
    "ProjectionReader",
    "projection_columns",
    "resolve_actor",
    "resolve_tenant",
]
