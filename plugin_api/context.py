"""What custom policies and effects receive: the action context and a query handle.

The host implements these protocols; plugins only use them. Everything a handler does through
the context happens inside the action's single database transaction: if anything later fails
(another policy, the effect, the audit write), all of it is rolled back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

from plugin_api.data import DataAccess
from plugin_api.definitions import Action, Entity


class QueryHandle(Protocol):
    """Runs SQL inside the action's transaction.

    Queries are SQLAlchemy Core statements (preferred) or SQL text with ``:name`` parameters.
    Rows come back as mappings of column name to the database value.
    """

    async def fetch_one(
        self, query: Any, values: Mapping[str, Any] | None = None
    ) -> Mapping[str, Any] | None:
        """Run ``query`` and return its first row, or ``None``."""
        ...

    async def fetch_all(
        self, query: Any, values: Mapping[str, Any] | None = None
    ) -> Sequence[Mapping[str, Any]]:
        """Run ``query`` and return every row."""
        ...

    async def execute(self, query: Any, values: Mapping[str, Any] | None = None) -> None:
        """Run ``query`` for its side effect."""
        ...


class ActionContext(Protocol):
    """The state of one action invocation, as seen by custom policies and effects."""

    @property
    def tenant_id(self) -> str:
        """The active tenant (``X-Tenant-ID``)."""
        ...

    @property
    def actor_id(self) -> str:
        """The acting actor (``X-Actor-Id``, ``anon`` when absent)."""
        ...

    @property
    def roles(self) -> frozenset[str]:
        """The actor's roles, trimmed, empty entries dropped."""
        ...

    @property
    def action(self) -> Action:
        """The definition of the action being run."""
        ...

    @property
    def entity(self) -> Entity:
        """The definition of the action's entity."""
        ...

    @property
    def subject(self) -> Mapping[str, Any] | None:
        """The subject row as read at the start of the action (read shapes of spec 2.6,
        system fields included), or ``None`` for a create."""
        ...

    @property
    def inputs(self) -> Mapping[str, Any]:
        """The request's ``inputs`` object exactly as sent."""
        ...

    @property
    def changes(self) -> Mapping[str, Any]:
        """The field values this action will write, in read shape (grows as stamps,
        inputs and :meth:`set` are applied)."""
        ...

    @property
    def data(self) -> DataAccess:
        """Read (policies and effects) and write (effects) rows of any entity, in this
        tenant and this transaction, in the HTTP shapes (see :mod:`plugin_api.data`).
        Prefer it to :attr:`db`."""
        ...

    @property
    def db(self) -> QueryHandle:
        """Run SQL inside the action's transaction, for what :attr:`data` cannot say.

        Raw SQL sees the physical tables (``helpdesk.ticket`` is ``helpdesk__ticket``), every
        tenant's rows (filter by ``tenant_id`` yourself), and its writes skip what the
        runtime guarantees: no new ``_version`` or ``updated_at``, no audit record, no
        validation."""
        ...

    def set(self, field: str, value: Any) -> None:
        """Write ``value`` (in the field's write shape) into ``field`` of the row being
        created or changed, and report it in the action's outputs.

        Raises :class:`plugin_api.errors.BadRequest` if the value does not fit the field (or
        breaks one of its constraints), :class:`plugin_api.errors.OwnershipDenied` if another
        plugin than the effect's owns the field (plugin API 1.8). Only an effect may call it
        (policies must not change data).
        """
        ...

    async def next_sequence(self, name: str) -> int:
        """Return the next value (1, 2, ...) of the tenant's counter ``name``.

        The counter lives in the action's transaction: it is gapless (a rolled-back action
        gives its number back) and never returns the same value twice for one tenant, also
        under concurrency and across processes.
        """
        ...


PolicyHandler: TypeAlias = Callable[[ActionContext], bool | Awaitable[bool]]
"""A custom policy: returns (or resolves to) ``True`` to allow. Anything else denies with
403 ``PolicyDenied``; raising an error of the taxonomy answers with that error."""

EffectHandler: TypeAlias = Callable[[ActionContext], Awaitable[None] | None]
"""A custom effect: changes the row through :meth:`ActionContext.set`, other rows through
:attr:`ActionContext.data` (or, as a last resort, SQL through :attr:`ActionContext.db`).
Raising an error of the taxonomy answers with that error; anything else is a 500
``EffectFailed``. Either way the whole action is rolled back."""
