"""The closed error taxonomy of the interface (spec part 7), and the host's few additions.

Every error the service answers with is one of these classes. Each carries its HTTP
``status`` and its wire ``kind`` on the class; the host renders any of them as the error
envelope ``{"ok": false, "error": {"kind": ..., "message": ...}}``. A plugin's custom policy
or effect may raise any of them and the client sees exactly that status, kind and message.
Anything else raised by a plugin is treated as a bug in the plugin: the client gets a 500
with a generic message and the cause goes to the log.

:data:`ALL_ERRORS` is the spec's table; :data:`EXTENDED_ERRORS` the errors the host answers
with beyond it (not in the v0.1 spec's table: a status or a kind a v0.1 client may not know).
"""

from __future__ import annotations

from typing import ClassVar


class TesseraError(Exception):
    """Base of the taxonomy. Do not raise it directly; raise one of its subclasses."""

    status: ClassVar[int] = 500
    kind: ClassVar[str] = "InternalError"
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None) -> None:
        self.message = message if message is not None else self.default_message
        super().__init__(self.message)


class BadRequest(TesseraError):
    """400: missing header, body that is not a JSON object, or a value that does not fit."""

    status = 400
    kind = "BadRequest"
    default_message = "Bad request"


class PolicySubjectRequired(TesseraError):
    """400: an action that needs a subject was invoked with ``subject: null``."""

    status = 400
    kind = "PolicySubjectRequired"
    default_message = "This action requires a subject"


class ActorRequired(TesseraError):
    """400: reserved; never raised by the host in v0.1.x."""

    status = 400
    kind = "ActorRequired"
    default_message = "An actor is required"


class TenantContextRequired(TesseraError):
    """400: reserved; never raised by the host in v0.1.x."""

    status = 400
    kind = "TenantContextRequired"
    default_message = "A tenant context is required"


class PolicyDenied(TesseraError):
    """403: the actor lacks a required role, or a custom policy said no."""

    status = 403
    kind = "PolicyDenied"
    default_message = "Policy denied"


class OwnershipDenied(PolicyDenied):
    """403 with the ``PolicyDenied`` kind (plugin API 1.8): a write by one plugin of a field
    another plugin owns (``Field(written_by=...)``), or of a field only effects write from a
    request's inputs. The message names the field and the owning plugin. The kind stays one
    every client knows (the spec's taxonomy is closed)."""


class TenantBoundaryViolation(TesseraError):
    """403: ``subject.tenantId`` differs from the active tenant."""

    status = 403
    kind = "TenantBoundaryViolation"
    default_message = "Subject belongs to another tenant"


class WorkflowGuardDenied(TesseraError):
    """403: reserved; not raised by the host in v0.1.x."""

    status = 403
    kind = "WorkflowGuardDenied"
    default_message = "Workflow guard denied"


class UnknownAction(TesseraError):
    """404: the action FQN is not in the graph."""

    status = 404
    kind = "UnknownAction"
    default_message = "Unknown action"


class NotFound(TesseraError):
    """404: the subject of an update or transition does not exist in this tenant."""

    status = 404
    kind = "NotFound"
    default_message = "Not found"


class WorkflowSubjectNotFound(TesseraError):
    """404: a workflow guard could not find the subject mid-evaluation."""

    status = 404
    kind = "WorkflowSubjectNotFound"
    default_message = "Workflow subject not found"


class ProjectionNotFound(TesseraError):
    """404: the projection FQN is not in the graph."""

    status = 404
    kind = "ProjectionNotFound"
    default_message = "Unknown projection"


class WorkflowStateMismatch(TesseraError):
    """409: the subject is not in a source state of the transition."""

    status = 409
    kind = "WorkflowStateMismatch"
    default_message = "The subject is not in a state this action applies to"


class ConcurrencyConflict(TesseraError):
    """409: the row changed between read and write (optimistic lock)."""

    status = 409
    kind = "ConcurrencyConflict"
    default_message = "The subject was modified concurrently; read it again and retry"


class EffectFailed(TesseraError):
    """500: a custom effect raised something outside this taxonomy."""

    status = 500
    kind = "EffectFailed"
    default_message = "The action's effect failed"


class AuditEmissionFailed(TesseraError):
    """500: the audit record could not be written; the action was rolled back."""

    status = 500
    kind = "AuditEmissionFailed"
    default_message = "The audit record could not be written; nothing was changed"


class InternalError(TesseraError):
    """500: any other failure."""

    status = 500
    kind = "InternalError"
    default_message = "Internal error"


class UnsupportedMediaType(BadRequest):
    """415 with the ``BadRequest`` kind: an action body whose ``Content-Type`` is not a JSON
    media type. Not in the v0.1 spec's table: the spec's error taxonomy is closed, so the
    status says what is wrong and the kind stays one every client knows (like 405 and 413)."""

    status = 415


class IdempotencyKeyReused(TesseraError):
    """422: the key was already used, within the retention window, for another request. Not
    in the v0.1 spec's table (``Idempotency-Key`` is an addition, docs/http.md)."""

    status = 422
    kind = "IdempotencyKeyReused"
    default_message = "This Idempotency-Key was already used with a different request"


class ServiceUnavailable(TesseraError):
    """503: the service is not ready (``/_ready``: the database does not answer in time). Not
    in the v0.1 spec's table (readiness is an addition; health stays liveness only)."""

    status = 503
    kind = "ServiceUnavailable"
    default_message = "Not ready"


class Unauthenticated(TesseraError):
    """401: token mode (``TESSERA_AUTH_MODE=token``) found no valid bearer token. Not in the
    v0.1 spec's table (there the gateway answers it, spec part 5). The answer carries
    ``WWW-Authenticate: Bearer`` with an RFC 6750 error code (:attr:`challenge`) and no
    other hint of what was wrong with the token."""

    status = 401
    kind = "Unauthenticated"
    default_message = "A valid bearer token is required"

    def __init__(self, message: str | None = None, *, error: str | None = "invalid_token") -> None:
        super().__init__(message)
        self.error = error

    @property
    def challenge(self) -> str:
        """The ``WWW-Authenticate`` value: ``Bearer``, with ``error="..."`` when a token
        was sent (RFC 6750 section 3)."""
        return "Bearer" if self.error is None else f'Bearer error="{self.error}"'


class DryRunUnsupported(TesseraError):
    """422: a dry run (``?dryRun=true``) of an action whose effect or transactional
    subscriber is not declared safe to dry-run (:func:`plugin_api.dry_run_safe`); nothing
    ran. Not in the v0.1 spec's table (dry runs are an addition, docs/http.md)."""

    status = 422
    kind = "DryRunUnsupported"
    default_message = "This action cannot be dry-run"


ALL_ERRORS: tuple[type[TesseraError], ...] = (
    BadRequest,
    PolicySubjectRequired,
    ActorRequired,
    TenantContextRequired,
    PolicyDenied,
    TenantBoundaryViolation,
    WorkflowGuardDenied,
    UnknownAction,
    NotFound,
    WorkflowSubjectNotFound,
    ProjectionNotFound,
    WorkflowStateMismatch,
    ConcurrencyConflict,
    EffectFailed,
    AuditEmissionFailed,
    InternalError,
)
"""Every class of the taxonomy, in the order of the spec's table."""

EXTENDED_ERRORS: tuple[type[TesseraError], ...] = (
    UnsupportedMediaType,
    IdempotencyKeyReused,
    DryRunUnsupported,
    ServiceUnavailable,
    Unauthenticated,
    OwnershipDenied,
)
"""The errors the host answers with beyond the spec's table (not in the v0.1 spec), by status."""
