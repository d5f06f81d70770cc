"""What an action can answer is asked of the compiled action (issue 40): the steps its chain
runs (:attr:`CompiledAction.steps`, which the engine follows) give the error kinds its
operation lists. Entity validators and an effect's writes of owned fields may refuse with any
error of ``plugin_api.errors``; an action without them lists only its own steps' kinds."""

from __future__ import annotations

from host.config import Settings
from host.graph import build_graph
from host.graph.steps import Step
from host.http.openapi import build_openapi
from plugin_api.errors import ALL_ERRORS, EXTENDED_ERRORS
from tests.rules._tracker import Reports, Tracker

from .test_api_openapi import kinds


def test_the_steps_of_each_action_give_its_error_kinds() -> None:
    extra = [("tracker", Tracker()), ("reports", Reports())]
    graph = build_graph(Settings(plugins_only=()), extra=extra, entry_points=False)
    document = build_openapi(graph)
    steps = {fqn: action.steps for fqn, action in graph.actions.items()}
    assert steps["tracker.issue.create"] == (Step.REFERENCES, Step.EFFECT, Step.VALIDATORS)
    assert steps["tracker.issue.done"] == (
        Step.ROLES, Step.SUBJECT, Step.REFERENCES, Step.WORKFLOW, Step.EFFECT, Step.VALIDATORS
    )  # fmt: skip
    assert steps["tracker.project.edit"] == (Step.SUBJECT,)
    everything = {error.kind for error in (*ALL_ERRORS, *EXTENDED_ERRORS)}
    # A validator may refuse with any error: every kind, though the action has no policy.
    issue = kinds(document, "/actions/tracker.issue.edit")
    assert steps["tracker.issue.edit"] == (Step.SUBJECT, Step.REFERENCES, Step.VALIDATORS)
    assert {kind for kinds in issue.values() for kind in kinds} == everything
    assert (
        "tracker.open_project"
        in document["paths"]["/actions/tracker.issue.edit"]["post"]["description"]
    )
    # Another plugin's effect may be refused writing an owned field (403 PolicyDenied).
    assert "PolicyDenied" in kinds(document, "/actions/reports.note.create")[403]
    # Nothing but its own steps: no role, no policy, no validator, no reference, no effect.
    assert kinds(document, "/actions/tracker.project.edit") == {
        400: ["BadRequest", "PolicySubjectRequired"],
        403: ["TenantBoundaryViolation"],
        404: ["NotFound"],
        409: ["ConcurrencyConflict"],
        413: ["BadRequest"],
        415: ["BadRequest"],
        422: ["IdempotencyKeyReused"],
        500: ["AuditEmissionFailed", "InternalError"],
    }
    edit = document["paths"]["/actions/tracker.project.edit"]["post"]
    assert edit["x-tessera-steps"] == ["subject"]
