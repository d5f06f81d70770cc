"""The action request body (``{"subject": ..., "inputs": ...}``), read into what
:meth:`host.runtime.ActionRuntime.run` takes. Pure: no database work."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from host.graph.model import CompiledAction
from host.runtime import Actor
from plugin_api.errors import BadRequest, PolicySubjectRequired, TenantBoundaryViolation

__all__ = ["parse_inputs", "parse_subject_id"]


def parse_subject_id(action: CompiledAction, actor: Actor, body: Mapping[str, Any]) -> str | None:
    """The subject's id for transition and update actions (``None`` for create)."""
    if action.kind == "create":
        return None
    if "subject" not in body:
        raise BadRequest(f"Action '{action.fqn}' requires a subject; the body has none")
    subject = body["subject"]
    if subject is None:
        raise PolicySubjectRequired(f"Action '{action.fqn}' requires a subject; got null")
    if not isinstance(subject, dict):
        raise BadRequest("subject must be an object {tenantId, entityFqn, identityHandle}")
    tenant = subject.get("tenantId")
    if not isinstance(tenant, str):
        raise BadRequest("subject.tenantId must be a string")
    if tenant != actor.tenant_id:
        raise TenantBoundaryViolation("subject.tenantId differs from the active tenant")
    entity_fqn = subject.get("entityFqn", action.entity.fqn)
    if entity_fqn != action.entity.fqn:
        raise BadRequest(
            f"subject.entityFqn must be '{action.entity.fqn}' for action '{action.fqn}'"
        )
    handle = subject.get("identityHandle")
    if not isinstance(handle, str) or not handle:
        raise BadRequest("subject.identityHandle must be a non-empty string")
    return handle


def parse_inputs(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``inputs`` object (absent or null means no inputs)."""
    inputs = body.get("inputs")
    if inputs is None:
        return {}
    if not isinstance(inputs, dict):
        raise BadRequest("inputs must be an object")
    return inputs
