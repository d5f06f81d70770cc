"""Entity validators: rules a row must satisfy whoever writes it (plugin API 1.8).

An entity names its validators (``Entity(validators=("tracker.open_project",))``); a plugin
implements them through the ``tessera_validators`` hook, by name. The host runs every
validator of the entity on every create, update and transition of one of its rows, whoever
writes it: a create, update or transition action over HTTP, or any plugin's effect or
transactional subscriber through the data API (``ctx.data.create``, ``patch``,
``transition``, ``run``). A validator runs inside the writing transaction once the values
are assembled (defaults, inputs, stamps and, for an action's own row, its effect's
:meth:`~plugin_api.ActionContext.set` calls) and before the row is written::

    async def open_project(write: RowWrite) -> None:
        project = await write.data.get("tracker.project", write.after["project"])
        if project is not None and project["archived"]:
            raise BadRequest("Project is archived: no issue may be added or changed")

    @hookimpl
    def tessera_validators() -> Mapping[str, ValidatorHandler]:
        return {"tracker.open_project": open_project}

To refuse, raise an error of the taxonomy (:mod:`plugin_api.errors`): the client gets exactly
it, and the whole action (every write it made) is rolled back. Anything else a validator
raises is a bug: 500 ``InternalError``, rolled back the same way. A validator only reads
(:attr:`RowWrite.data` refuses writes); it also runs in dry runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from plugin_api.data import DataAccess, Row

__all__ = ["RowWrite", "ValidatorHandler"]


@dataclass(frozen=True, kw_only=True, slots=True)
class RowWrite:
    """One write of one row, as a validator sees it (plugin API 1.8).

    :param entity: the FQN of the row's entity.
    :param kind: ``create``, ``update`` (an update action or a data-API ``patch``) or
        ``transition``.
    :param transition: the workflow transition's name (``None`` unless ``kind`` is
        ``transition``).
    :param before: the row before the write, in read shape (``None`` for a create).
    :param changes: every declared field the write sets, in read shape (a create: every
        value of the new row, defaults and the initial state included).
    :param after: the row as it will be written, in read shape, system fields included
        (``id``, ``_version`` and ``updated_at`` are the new ones).
    :param tenant_id: the tenant.
    :param actor_id: who acts (for a subscriber's write: the subscriber's name).
    :param roles: the actor's roles.
    :param action: the FQN of the action that caused the write (the action whose effect or
        subscriber wrote through the data API).
    :param plugin: the name (entry-point name) of the plugin that wrote: the action's plugin
        for its inputs and stamps, the effect's or subscriber's plugin for its writes.
    :param data: read-only data API in the writing transaction (a write raises
        :class:`RuntimeError`).
    """

    entity: str
    kind: str
    transition: str | None
    before: Row | None
    changes: Mapping[str, Any]
    after: Row
    tenant_id: str
    actor_id: str
    roles: frozenset[str]
    action: str
    plugin: str | None
    data: DataAccess


ValidatorHandler: TypeAlias = Callable[[RowWrite], Awaitable[None] | None]
"""An entity validator: returns (or resolves to) anything to accept the write; raises an
error of the taxonomy to refuse it (sync or async)."""
