"""Read access control of a projection: who may read it, and which rows (docs/writing-plugins.md,
"Read access").

A :class:`~plugin_api.definitions.Projection` may carry a :class:`ReadAccess`::

    Projection(
        fqn="helpdesk.ticket.mine",
        entity="helpdesk.ticket",
        fields=("id", "title", "state", "requester"),
        access=ReadAccess(
            roles=("requester", "agent"),                          # any-of, like actions
            scope=RowScope(field="requester", exempt=("agent",)),  # requesters: their rows
            policies=("helpdesk.office_hours",),                   # custom read policies
        ),
    )

A projection without ``access`` is readable by anyone who names the tenant, as in v0.1.

A *read policy* (hook ``tessera_read_policies``) gets a :class:`ReadContext` and returns
``True`` (allow every row the other rules allow), a :class:`~plugin_api.conditions.Condition`
or a sequence of them (allow only rows matching all of them; an
:class:`~plugin_api.conditions.AnyOf` matches when one of its conditions does, and a
condition's field may follow a reference, ``project.owner``: plugin API 1.8), or anything else
to deny with 403 ``PolicyDenied``. A read policy may look at the actor, the tenant and the
projection; it may not read or write the database, and it never sees SQL: a condition is typed
data (a field, an :class:`~plugin_api.conditions.Operator` and values) that the host validates
and binds, with the rules of list filters. (``RowCondition`` is the condition's deprecated
name.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from plugin_api._base import _as_tuples
from plugin_api.conditions import AnyOf, Condition

if TYPE_CHECKING:
    from plugin_api.definitions import Projection

__all__ = [
    "ReadAccess",
    "ReadContext",
    "ReadPolicyHandler",
    "ReadPolicyResult",
    "RowCondition",
    "RowScope",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class RowScope:
    """Rows whose ``field`` equals the reading actor's id (``X-Actor-Id``), unless the actor
    holds one of the ``exempt`` roles (then every row of the tenant).

    Give ``field`` or ``fields`` (plugin API 1.8), not both. Each may follow a reference of
    the entity one hop (``"project.owner"``: the rows whose project's ``owner`` is the
    reader; a project the reader may not read counts as no owner).

    :param field: a declared ``string`` field of the projection's entity (for example the
        field an action stamps with :meth:`~plugin_api.Stamp.actor`), or a followed one.
    :param fields: several such fields: the rows where *any* of them is the reader
        (``("reporter", "assignee")``: reporter or assignee), plugin API 1.8.
    :param exempt: roles that see every row.
    """

    field: str | None = None
    exempt: tuple[str, ...] = ()
    fields: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _as_tuples(self, "exempt", "fields")

    @property
    def names(self) -> tuple[str, ...]:
        """The scope's fields: ``(field,)`` or ``fields`` (any of them names the reader)."""
        if self.fields is not None:
            return self.fields
        return () if self.field is None else (self.field,)


@dataclass(frozen=True, kw_only=True, slots=True)
class ReadAccess:
    """Who may read a projection (list and detail), and which rows.

    :param roles: any-of role list; empty means no role is required. A reader without one of
        them gets 403 ``PolicyDenied`` and nothing is read.
    :param scope: restricts the rows by the reading actor (:class:`RowScope`).
    :param policies: names of read policies (hook ``tessera_read_policies``); each must
        allow, and the row conditions they return all apply.
    """

    roles: tuple[str, ...] = ()
    scope: RowScope | None = None
    policies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _as_tuples(self, "roles", "policies")


RowCondition = Condition
"""Deprecated name of :class:`plugin_api.conditions.Condition` (the same class): what a read
policy returns."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReadContext:
    """What a read policy sees: the reader and the projection read (never a row)."""

    tenant_id: str
    actor_id: str
    roles: frozenset[str]
    projection: Projection
    subject: str | None
    """The requested subject id of a detail read, ``None`` for a list."""
    followed: str | None = None
    """Plugin API 1.8: ``None`` when the policy guards the rows of ``projection``'s entity;
    else the reference field of that entity through which another entity's rows are read
    (``"project"`` for ``project.key``): the policy is then that entity's read floor, and
    its conditions name that entity's fields."""


ReadPolicyResult: TypeAlias = bool | Condition | AnyOf | Sequence[Condition | AnyOf]
"""``True``: allow; a condition or conditions (each a :class:`Condition` or an
:class:`~plugin_api.conditions.AnyOf`): allow the rows matching all of them; anything else:
deny."""

ReadPolicyHandler: TypeAlias = Callable[
    [ReadContext], ReadPolicyResult | Awaitable[ReadPolicyResult]
]
"""A read policy (sync or async). Raising an error of the taxonomy answers with that error."""
