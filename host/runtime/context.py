"""The host's implementation of :class:`plugin_api.ActionContext`."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from host.fieldtypes import coerce_write
from host.graph.model import CompiledAction
from host.runtime.actor import Actor
from host.runtime.data import ActionData
from host.runtime.writerules import ownership_refusal
from host.storage import Schema, Storage, Tx
from host.storage.rows import field_renderer
from plugin_api.definitions import Action, Entity

MAX_SEQUENCE_NAME = 200


class InvocationContext:
    """State of one action invocation; handed to custom policies and effects."""

    __slots__ = (
        "_action",
        "_actor",
        "_changes",
        "_data",
        "_inputs",
        "_outputs",
        "_schema",
        "_storage",
        "_subject",
        "_tx",
        "_writable",
    )

    def __init__(
        self,
        *,
        action: CompiledAction,
        actor: Actor,
        subject: Mapping[str, Any] | None,
        inputs: Mapping[str, Any],
        tx: Tx,
        storage: Storage,
        schema: Schema,
        data: ActionData,
    ) -> None:
        self._action = action
        self._actor = actor
        self._subject = None if subject is None else MappingProxyType(dict(subject))
        self._inputs = MappingProxyType(dict(inputs))
        self._tx = tx
        self._storage = storage
        self._schema = schema
        self._data = data
        self._changes: dict[str, Any] = {}
        """Database values to write, by field name."""
        self._outputs: dict[str, None] = {}
        """Fields reported in the outputs, in the order they were first written."""
        self._writable = False

    @property
    def writable(self) -> bool:
        """True while the custom effect runs: only then may the handler change data."""
        return self._writable

    @writable.setter
    def writable(self, value: bool) -> None:
        self._writable = value
        self._data.writable = value

    # -- what handlers read ---------------------------------------------------------------

    @property
    def tenant_id(self) -> str:
        return self._actor.tenant_id

    @property
    def actor_id(self) -> str:
        return self._actor.actor_id

    @property
    def roles(self) -> frozenset[str]:
        return self._actor.roles

    @property
    def action(self) -> Action:
        return self._action.definition

    @property
    def entity(self) -> Entity:
        return self._action.entity.definition

    @property
    def subject(self) -> Mapping[str, Any] | None:
        return self._subject

    @property
    def inputs(self) -> Mapping[str, Any]:
        return self._inputs

    @property
    def changes(self) -> Mapping[str, Any]:
        entity = self._action.entity
        return MappingProxyType(
            {name: field_renderer(entity, name)(value) for name, value in self._changes.items()}
        )

    @property
    def data(self) -> ActionData:
        return self._data

    @property
    def db(self) -> Tx:
        return self._tx

    # -- what handlers may do -------------------------------------------------------------

    def set(self, field: str, value: Any) -> None:
        if not self.writable:
            raise RuntimeError("only a custom effect may change data; policies must not")
        entity = self._action.entity
        definition = entity.fields.get(field)
        if definition is None:
            raise KeyError(f"entity {entity.fqn!r} has no field {field!r}")
        refusal = ownership_refusal(entity, self._data.plugin, (field,))
        if refusal is not None:
            raise refusal
        self.write(field, coerce_write(definition, value), output=True)

    async def next_sequence(self, name: str) -> int:
        if not isinstance(name, str) or not name or len(name) > MAX_SEQUENCE_NAME:
            raise ValueError(f"sequence name must be 1 to {MAX_SEQUENCE_NAME} characters")
        statement = self._storage.increment_sequence(self._schema, self.tenant_id, name)
        return int(await self._tx.fetch_val(statement))

    # -- what the runtime uses ------------------------------------------------------------

    def write(self, field: str, db_value: Any, output: bool) -> None:
        """Record a database value to write; ``output`` reports it in the outputs."""
        self._changes[field] = db_value
        if output:
            self._outputs.setdefault(field, None)

    @property
    def pending(self) -> dict[str, Any]:
        """The database values to write."""
        return self._changes

    @property
    def output_fields(self) -> tuple[str, ...]:
        return tuple(self._outputs)
