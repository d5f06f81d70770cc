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
``True`` (allow every row the other rules allow), a :class:`RowCondition` or a sequence of them
(allow only rows matching all of them), or anything else to deny with 403 ``PolicyDenied``. A
read policy may look at the actor, the tenant and the projection; it may not read or write the
database, and it never sees SQL: a row condition is typed data (a field, an operator of
:class:`~plugin_api.listing.FilterOperator` and values) that the host validates and binds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from plugin_api._base import JSONScalar, _as_tuples
from plugin_api.listing import FilterOperator

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

    :param field: a declared ``string`` field of the projection's entity (for example the
        field an action stamps with :meth:`~plugin_api.Stamp.actor`).
    :param exempt: roles that see every row.
    """

    field: str
    exempt: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _as_tuples(self, "exempt")


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


@dataclass(frozen=True, kw_only=True, slots=True)
class RowCondition:
    """A typed row condition a read policy returns: ``field <operator> value``.

    :param field: a declared field of the entity, or ``id``, ``created_at``, ``updated_at``.
    :param operator: an operator of :class:`~plugin_api.listing.FilterOperator` that fits the
        field's type (as for list filters).
    :param value: the value in the field's write shape; a tuple for ``in``; ``True`` or
        ``False`` for ``null``.
    """

    field: str
    operator: FilterOperator | str = FilterOperator.EQ
    value: JSONScalar | tuple[JSONScalar, ...] = None

    def __post_init__(self) -> None:
        _as_tuples(self, "value")
        with contextlib.suppress(ValueError, TypeError):
            object.__setattr__(self, "operator", FilterOperator(self.operator))


@dataclass(frozen=True, kw_only=True, slots=True)
class ReadContext:
    """What a read policy sees: the reader and the projection read (never a row)."""

    tenant_id: str
    actor_id: str
    roles: frozenset[str]
    projection: Projection
    subject: str | None
    """The requested subject id of a detail read, ``None`` for a list."""


ReadPolicyResult: TypeAlias = bool | RowCondition | Sequence[RowCondition]
"""``True``: allow; a condition or conditions: allow those rows only; anything else: deny."""

ReadPolicyHandler: TypeAlias = Callable[
    [ReadContext], ReadPolicyResult | Awaitable[ReadPolicyResult]
]
"""A read policy (sync or async). Raising an error of the taxonomy answers with that error."""
