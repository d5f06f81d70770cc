"""``POST /actions/<fqn>``: run an action (spec part 4), or rehearse it (``dryRun=true``,
docs/http.md "Dry runs"), once per ``Idempotency-Key`` (docs/http.md, "Idempotency")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from quart import Response, request
from werkzeug.datastructures import Headers

from host import jsonio
from host.graph import Graph
from host.http.bodies import parse_inputs, parse_subject_id
from host.http.dryrun import dry_run_requested
from host.http.endpoint import Endpoint, Operations
from host.http.envelope import JSON, json_response
from host.http.media import require_json
from host.http.openapi_actions import action_operation
from host.http.site import Site
from host.query.params import SCHEMA_1_0, SCHEMA_1_5, at_least, negotiate
from host.runtime import idempotency

__all__ = ["ACTION", "ActionEndpoint"]


async def _counted(site: Site, fqn: str, answer: Callable[[], Awaitable[Response]]) -> Response:
    """``answer()``, its outcome counted per action when metrics are on."""
    metrics = site.metrics
    if metrics is None:
        return await answer()
    label = metrics.action_label(fqn)
    try:
        response = await answer()
    except Exception as error:
        metrics.outcomes.labels(label, getattr(error, "kind", "InternalError")).inc()
        raise
    metrics.outcomes.labels(label, "ok").inc()
    return response


class ActionEndpoint(Endpoint):
    """One operation per action (``invoke.<fqn>``)."""

    name = "action"
    method = "POST"
    rule = "/actions/<fqn>"

    async def respond(self, site: Site, **path: str) -> Response:
        fqn = path["fqn"]

        async def run_action() -> Response:
            # The body is read before anything can refuse the request: an answer sent while
            # the body is still arriving makes Hypercorn drop the keep-alive connection after
            # it, and the client's next request on that connection fails.
            raw = await request.get_data(cache=False, as_text=False)
            assert isinstance(raw, bytes)
            dry_run = dry_run_requested(request.args)  # docs/http.md, "Dry runs"
            version = negotiate(request.args.getlist("acceptSchemaVersions"))
            return await self._answer(
                site, fqn, raw, request.headers, dry_run=dry_run, version=version
            )

        return await _counted(site, fqn, run_action)

    async def answer(
        self, site: Site, fqn: str, raw: bytes, headers: Headers, *, dry_run: bool = False
    ) -> Response:
        """The answer for this body and these headers, counted as the route's: the action
        lane's answer to a plain request (:mod:`host.http.action_lane`), and the console's to
        its forms and, with ``dry_run``, their previews (in process)."""
        return await _counted(
            site, fqn, lambda: self._answer(site, fqn, raw, headers, dry_run=dry_run)
        )

    async def _answer(
        self,
        site: Site,
        fqn: str,
        raw: bytes,
        headers: Headers,
        *,
        dry_run: bool = False,
        version: str = SCHEMA_1_0,
    ) -> Response:
        """``dry_run``: rolled back, docs/http.md "Dry runs"; at ViewSchema ``version`` 1.5.0
        its answer says what the write would schedule (docs/timers.md)."""
        settings = site.settings
        actor = await site.identity.actor(headers, require_actor_id=settings.require_actor_id)
        if settings.require_json_content_type:
            require_json(headers.getlist("Content-Type"))
        key = idempotency.parse_key(headers.getlist(idempotency.HEADER))
        body = jsonio.loads_object(raw)
        running = site.service()
        runtime = running.runtime
        action = runtime.permitted(fqn, actor)
        subject_id = parse_subject_id(action, actor, body)
        inputs = parse_inputs(body)
        if dry_run:
            rehearsal = await runtime.dry_run(action, actor, subject_id, inputs)
            return json_response(rehearsal.body(timers=at_least(version, SCHEMA_1_5)))
        committed = site.live.committed
        if key is None or not idempotency.keyed(actor, settings.anonymous_shared):
            outputs = await runtime.run(action, actor, subject_id, inputs)
            committed()  # docs/live.md: after the commit, never inside the transaction
            return json_response({"ok": True, "outputs": outputs})
        print_ = idempotency.fingerprint(fqn, body)
        answer, replayed = await idempotency.run_once(
            running.idempotency, runtime, action, actor, subject_id, inputs, key, print_
        )
        if not replayed:
            committed()
        response = Response(answer, status=200, content_type=JSON)
        if replayed:
            response.headers["Idempotent-Replayed"] = "true"
        return response

    def describe(self, graph: Graph) -> Operations:
        return {
            f"/actions/{fqn}": action_operation(action, graph)
            for fqn, action in sorted(graph.actions.items())
        }


ACTION = ActionEndpoint()
