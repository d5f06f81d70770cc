"""Tessera's public plugin API: the only package a plugin imports.

A plugin contributes definitions (entities with their workflows, actions, projections) and
named handlers (custom policies and effects) through the hooks of :mod:`plugin_api.hookspecs`,
marked with :data:`hookimpl`, and registers itself through the ``tessera.plugins`` entry-point
group. See ``docs/writing-plugins.md``.
"""

from plugin_api._markers import ENTRY_POINT_GROUP, PROJECT_NAME, hookimpl
from plugin_api.context import ActionContext, EffectHandler, PolicyHandler, QueryHandle
from plugin_api.definitions import (
    NO_DEFAULT,
    SYSTEM_FIELDS,
    Action,
    CreateAction,
    Entity,
    Field,
    FieldType,
    JSONValue,
    Projection,
    Stamp,
    StampSource,
    Transition,
    TransitionAction,
    UpdateAction,
    Workflow,
)
from plugin_api.errors import (
    ActorRequired,
    AuditEmissionFailed,
    BadRequest,
    ConcurrencyConflict,
    EffectFailed,
    InternalError,
    NotFound,
    PolicyDenied,
    PolicySubjectRequired,
    ProjectionNotFound,
    TenantBoundaryViolation,
    TenantContextRequired,
    TesseraError,
    UnknownAction,
    WorkflowGuardDenied,
    WorkflowStateMismatch,
    WorkflowSubjectNotFound,
)
from plugin_api.identity import ANONYMOUS_ACTOR, ROLE_NAME_PATTERN, is_role_name
from plugin_api.listing import MAX_PAGE_SIZE, Filter, FilterOperator, ListOptions
from plugin_api.version import PLUGIN_API_VERSION

__all__ = [
    "ANONYMOUS_ACTOR",
    "ENTRY_POINT_GROUP",
    "MAX_PAGE_SIZE",
    "NO_DEFAULT",
    "PLUGIN_API_VERSION",
    "PROJECT_NAME",
    "ROLE_NAME_PATTERN",
    "SYSTEM_FIELDS",
    "Action",
    "ActionContext",
    "ActorRequired",
    "AuditEmissionFailed",
    "BadRequest",
    "ConcurrencyConflict",
    "CreateAction",
    "EffectFailed",
    "EffectHandler",
    "Entity",
    "Field",
    "FieldType",
    "Filter",
    "FilterOperator",
    "InternalError",
    "JSONValue",
    "ListOptions",
    "NotFound",
    "PolicyDenied",
    "PolicyHandler",
    "PolicySubjectRequired",
    "Projection",
    "ProjectionNotFound",
    "QueryHandle",
    "Stamp",
    "StampSource",
    "TenantBoundaryViolation",
    "TenantContextRequired",
    "TesseraError",
    "Transition",
    "TransitionAction",
    "UnknownAction",
    "UpdateAction",
    "Workflow",
    "WorkflowGuardDenied",
    "WorkflowStateMismatch",
    "WorkflowSubjectNotFound",
    "hookimpl",
    "is_role_name",
]
