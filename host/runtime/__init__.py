"""The action runtime, usable without HTTP."""

from host.runtime.actor import ANONYMOUS, Actor, resolve_actor, resolve_tenant
from host.runtime.engine import ActionRuntime

__all__ = [
    "ANONYMOUS",
    "ActionRuntime",
    "Actor",
    "resolve_actor",
    "resolve_tenant",
]
