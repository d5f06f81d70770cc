"""Entity validators (plugin API 1.8, :mod:`plugin_api.validators`): run every validator of
an entity on one write of one of its rows, whoever writes it.

The action chain (:mod:`host.runtime.engine`) and the data API (:mod:`host.runtime.data`)
call :func:`validate` once the write's values are assembled and before its statement runs,
inside the writing transaction, with a read-only data API. A validator refuses by raising
an error of the taxonomy; anything else it raises is a bug in it: 500 ``InternalError``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any

from host.graph.model import CompiledEntity, Graph, RegisteredHandler
from host.runtime.actor import Actor
from plugin_api.data import DataAccess, Row
from plugin_api.errors import InternalError, TesseraError
from plugin_api.validators import RowWrite, ValidatorHandler

__all__ = ["validate", "validators_of"]

logger = logging.getLogger("tessera.runtime")

Validators = tuple[RegisteredHandler[ValidatorHandler], ...]


def validators_of(graph: Graph) -> dict[str, Validators]:
    """Each entity's validators, in the order its definition names them."""
    return {
        fqn: tuple(graph.validators[name] for name in entity.definition.validators)
        for fqn, entity in graph.entities.items()
    }


async def validate(
    validators: Validators,
    entity: CompiledEntity,
    *,
    kind: str,
    transition: str | None,
    before: Row | None,
    changes: Mapping[str, Any],
    after: Row,
    actor: Actor,
    cause: str,
    plugin: str | None,
    reader: DataAccess,
) -> None:
    """Run ``validators`` on one write (read shapes); the first refusal is raised.

    :raises TesseraError: a validator's refusal, or ``InternalError`` for its bug.
    """
    write = RowWrite(
        entity=entity.fqn,
        kind=kind,
        transition=transition,
        before=before,
        changes=changes,
        after=after,
        tenant_id=actor.tenant_id,
        actor_id=actor.actor_id,
        roles=actor.roles,
        action=cause,
        plugin=plugin,
        data=reader,
    )
    for registered in validators:
        try:
            result = registered.handler(write)
            if inspect.isawaitable(result):
                await result
        except TesseraError:
            raise
        except Exception as exc:
            logger.error(
                "validator %r of %s raised",
                registered.name,
                registered.plugin.describe(),
                exc_info=exc,
            )
            raise InternalError() from exc
