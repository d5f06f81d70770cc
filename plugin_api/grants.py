"""Authority a plugin declares beyond its own entities and actions (plugin API 1.9;
docs/security.md, "What a plugin can do").

A plugin's effects and subscribers reach other plugins' data through
:attr:`plugin_api.ActionContext.data`. For a plugin requiring plugin API 1.9:

* :meth:`~plugin_api.data.DataAccess.run` of another plugin's action is refused unless the
  plugin declares :class:`RunsAction` for it; the action then runs as the plugin's own system
  identity (``plugin:<name>`` with the declared roles), or as the current caller where the
  action declares ``accepts_delegation=True``;
* reads (``get``, ``find``, ``history``) of another plugin's entity keep that entity's read
  floor (``Entity(access=...)``) for the acting identity, unless the plugin declares
  :class:`SystemRead` for it (then every row of the tenant, and each such read is logged).

Declare them with the ``tessera_grants`` hook::

    @hookimpl
    def tessera_grants():
        return [
            RunsAction(action="purchasing.request.approve", roles=("approver",)),
            SystemRead(entity="helpdesk.ticket"),
        ]

``tessera graph`` lists every plugin's declarations under ``grants``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeAlias

from plugin_api._base import _as_tuples

__all__ = ["SYSTEM_ACTOR_PREFIX", "Authority", "Grant", "RunsAction", "SystemRead"]

SYSTEM_ACTOR_PREFIX = "plugin:"
"""A plugin's system identity is the actor ``plugin:<plugin name>``."""


class Authority(str, enum.Enum):
    """As whom a nested action runs."""

    PLUGIN = "plugin"
    """The declaring plugin's system identity, with the roles it declares."""
    CALLER = "caller"
    """The actor of the outer action (only an action declaring ``accepts_delegation``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunsAction:
    """The plugin's effects and subscribers may run ``action`` (another plugin's) with
    ``ctx.data.run``, with the ``authority`` given.

    :param action: the FQN of the action.
    :param authority: :attr:`Authority.PLUGIN` (default) or :attr:`Authority.CALLER`.
    :param roles: the roles of the plugin's system identity for this action (with
        :attr:`Authority.PLUGIN`; the action's role check sees them).
    """

    action: str
    authority: Authority = Authority.PLUGIN
    roles: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _as_tuples(self, "roles")
        object.__setattr__(self, "authority", Authority(self.authority))


@dataclass(frozen=True, kw_only=True, slots=True)
class SystemRead:
    """The plugin reads every row of ``entity`` (another plugin's) in the tenant through
    the data API, whatever the entity's read floor says of the acting identity. Each
    such read is logged on ``tessera.audit``."""

    entity: str


Grant: TypeAlias = RunsAction | SystemRead
"""What ``tessera_grants`` returns items of."""
