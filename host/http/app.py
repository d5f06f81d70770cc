"""The Quart application factory."""

from __future__ import annotations

import dataclasses
import gc
import logging
from collections.abc import Awaitable, Callable, Sequence

from quart import Quart, Response, request
from werkzeug.datastructures import Headers, MultiDict
from werkzeug.exceptions import HTTPException, MethodNotAllowed, RequestEntityTooLarge

from host import jsonio
from host.auth import identity_for
from host.config import Settings
from host.console import Answers, console_enabled, mount_console
from host.errors import StartupError
from host.fieldtypes import now_db, render_datetime
from host.graph import Graph, build_graph
from host.http.audit import register_audit
from host.http.availability import question, row_annotator
from host.http.bodies import parse_inputs, parse_subject_id
from host.http.cors import CorsMiddleware
from host.http.document import detail_document, offer
from host.http.draining import Draining, stop_all_on_sigterm
from host.http.dryrun import dry_run_requested
from host.http.envelope import JSON, error_body, error_bytes
from host.http.history import AS_OF, item_as_of, register_history
from host.http.lists import list_response
from host.http.live import register_live
from host.http.media import require_json
from host.http.openapi import openapi_text
from host.http.viewschema import ViewSchemaTemplate
from host.logs import request_id_var
from host.metrics import Metrics
from host.query.conditions import Clause
from host.query.params import (
    SCHEMA_1_1,
    SCHEMA_1_2,
    at_least,
    negotiate,
    parse_list_query,
    plain_query,
)
from host.runtime import Actor, idempotency
from host.runtime.access import ReadGate, guarded, needs_gate, offered_actions
from host.service import Service
from host.storage.plan import SchemaEvolutionError
from plugin_api.errors import (
    InternalError,
    ProjectionNotFound,
    ServiceUnavailable,
    TesseraError,
    Unauthenticated,
    UnsupportedMediaType,
)

logger = logging.getLogger("tessera.http")

HTTP_KINDS = {404: "NotFound"}
"""Error kinds of the framework's own errors; every other status maps to ``BadRequest``."""


def json_response(payload: object, status: int = 200) -> Response:
    return Response(jsonio.dumps(payload), status=status, content_type=JSON)


def error_response(error: TesseraError) -> Response:
    return Response(error_bytes(error), status=error.status, content_type=JSON)


async def _freeze_startup_objects() -> None:
    """What exists once a worker has started lives as long as the worker: frozen, the cyclic
    garbage collector no longer walks it on each full collection, which took ~100 ms of CPU
    on a started worker and held every request in flight (docs/benchmarks.md, "Read latency
    tail"). Undone when the app stops (``gc.unfreeze``), so that a process that starts
    another app (the tests) can collect this one. Both are constant-time list moves."""
    gc.freeze()


def create_app(
    settings: Settings | None = None,
    *,
    graph: Graph | None = None,
    extra_plugins: Sequence[tuple[str, object]] = (),
    entry_points: bool = True,
    on_startup_failure: Callable[[str], None] | None = None,
) -> Quart:
    """Build the app. The graph is compiled here, so a broken plugin set fails at once
    (with every compiler error); the database is opened when serving starts.

    ``on_startup_failure``: called with one line when serving cannot start for a known
    reason (the database cannot be reached or needs a migration); a Hypercorn worker ends
    the process there (:func:`host.startup.abort_worker`)."""
    settings = settings or Settings.from_env()
    if graph is None:
        graph = build_graph(settings, extra=extra_plugins, entry_points=entry_points)
    compiled_graph = graph

    metrics = Metrics(settings.api_prefix, graph.actions) if settings.metrics else None
    identity = identity_for(settings, metrics.auth_failed if metrics is not None else None)
    app = Quart("tessera")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False
    app.config["RESPONSE_TIMEOUT"] = settings.response_timeout_s
    templates = {
        fqn: ViewSchemaTemplate(projection) for fqn, projection in graph.projections.items()
    }
    gate = ReadGate(graph, anonymous_shared=settings.anonymous_shared)
    state: dict[str, Service] = {}
    prefix = settings.api_prefix

    def service() -> Service:
        return state["service"]

    app.extensions["tessera.service"] = service  # the test harness's way in

    @app.before_serving
    async def start_service() -> None:
        stop_all_on_sigterm()
        try:
            on_delivery = metrics.delivered if metrics is not None else None
            state["service"] = await Service.start(
                settings, compiled_graph, on_delivery=on_delivery
            )
            if metrics is not None:
                state["service"].storage.on_transaction = metrics.transactions.observe
        except (StartupError, SchemaEvolutionError) as exc:
            if on_startup_failure is None:
                raise
            line = str(exc) if isinstance(exc, StartupError) else exc.report()
            on_startup_failure(line)
            raise

    @app.after_serving
    async def stop_service() -> None:
        gc.unfreeze()  # a process that starts another app (tests) collects this one's objects
        await identity.aclose()
        running = state.pop("service", None)
        if running is not None:
            await running.stop()
        if metrics is not None:
            metrics.worker_exited()

    @app.before_request
    async def limit_body() -> None:
        length = request.content_length
        if length is not None and length > settings.max_body_bytes:
            raise RequestEntityTooLarge()

    @app.get(f"{prefix}/_health")
    async def health() -> Response:
        return json_response(
            {"ok": True, "service": settings.service_name, "graphHash": compiled_graph.hash}
        )

    openapi_document = openapi_text(graph, prefix).encode()

    @app.get(f"{prefix}/openapi.json")
    async def openapi() -> Response:
        return Response(openapi_document, content_type=JSON)

    @app.get(f"{prefix}/_ready")
    async def ready() -> Response:
        # Readiness (not in the v0.1 spec; health stays liveness only): the database must
        # answer within TESSERA_READY_TIMEOUT_S, else 503 in the error envelope.
        running = service()
        problem = await running.storage.probe(settings.ready_timeout_s)
        if problem is not None:
            logger.warning("not ready: %s", problem)
            return error_response(ServiceUnavailable(f"Not ready: {problem}"))
        return json_response(
            {
                "ok": True,
                "service": settings.service_name,
                "graphHash": compiled_graph.hash,
                "database": running.storage.dialect.name,
            }
        )

    @app.get(f"{prefix}/projections/<fqn>")
    async def projection(fqn: str) -> Response:
        return await projection_answer(fqn, request.args, request.headers)

    async def projection_answer(fqn: str, args: MultiDict[str, str], headers: Headers) -> Response:
        """The answer of ``GET {prefix}/projections/{fqn}`` for these arguments and headers
        (the console renders its pages from it, in process)."""
        tenant = await identity.tenant(headers)
        template = templates.get(fqn)
        if template is None:
            raise ProjectionNotFound(f"Unknown projection '{fqn}'")
        compiled = template.projection
        reads = service().reads
        spec = reads.spec(fqn)
        subject = args.get("subject")
        scope: tuple[Clause, ...] = ()
        offered: frozenset[str] | None = None
        version = negotiate(args.getlist("acceptSchemaVersions"))
        annotate = None
        availability_asked = at_least(version, SCHEMA_1_2)  # docs/http.md, "Availability"
        gated = needs_gate(compiled)
        if gated or availability_asked:
            actor = await identity.actor(headers)
            if gated:  # docs/http.md, "Read access" (and "Relations")
                scope = await gate.conditions(compiled, actor, spec, subject)
            if guarded(compiled):
                offered = offered_actions(compiled, actor)
            if availability_asked:
                availability = service().runtime.availability
                annotate = row_annotator(availability, compiled, offered, actor)
        generated_at = str(render_datetime(now_db()))
        if subject is None:
            chunk_rows = settings.list_chunk_rows
            query = parse_list_query(args, spec, version, tenant, reads.cursors, scope)
            if query is not None:  # list parameters or 1.1.0 (docs/http.md, "Lists")
                query = dataclasses.replace(query, offered=offered)
                parts = (reads, template, compiled, query, tenant, generated_at, chunk_rows)
                count_limit = settings.list_count_limit
                return await list_response(*parts, annotate=annotate, count_limit=count_limit)
            plain = plain_query(scope)
            listing = await reads.every_row(compiled, tenant, plain, chunk_rows)
            if listing.rest is None:
                return json_response(template.render_list(tenant, generated_at, listing.first))
            # A long list is streamed: memory stays bounded by one chunk of rows, and no
            # database connection is held while the client reads.
            return Response(
                template.list_stream(tenant, generated_at, listing.first, listing.rest),
                content_type=JSON,
            )
        item = await reads.one(compiled, tenant, subject, scope, version)
        as_of = args.get(AS_OF)
        if as_of is not None:  # docs/history.md, "As of"
            reader = await identity.actor(headers)
            item = await item_as_of(service(), compiled, tenant, item, as_of, reader)
        elif annotate is not None and item is not None:  # the row as it is now only
            await annotate([item])
        document = template.render_detail(tenant, generated_at, item)
        if at_least(version, SCHEMA_1_1):
            document = offer(detail_document(document, spec, version, template), offered)
        return json_response(document)

    @app.post(f"{prefix}/availability")
    async def availability_question() -> Response:
        # docs/http.md, "Availability": which of these actions may I run on these rows?
        actor, raw = await posted()
        body = jsonio.loads_object(raw)
        availability = service().runtime.availability
        return json_response(await question(compiled_graph, availability, actor, body))

    async def posted() -> tuple[Actor, bytes]:
        """The actor and the raw body of a POST, its media type checked. The body is read
        before anything can refuse the request: an answer sent while the body is still
        arriving makes Hypercorn drop the keep-alive connection after it, and the client's
        next request on that connection fails."""
        raw = await request.get_data(cache=False, as_text=False)
        assert isinstance(raw, bytes)
        headers = request.headers
        actor = await identity.actor(headers, require_actor_id=settings.require_actor_id)
        if settings.require_json_content_type:
            require_json(headers.getlist("Content-Type"))
        return actor, raw

    register_history(app, prefix, templates, gate, service, identity)
    register_audit(app, prefix, settings, service, identity)
    draining = Draining()
    live = register_live(app, prefix, settings, service, gate, metrics, draining, identity)
    committed = live.committed

    @app.post(f"{prefix}/actions/<fqn>")
    async def action(fqn: str) -> Response:
        return await counted(fqn, lambda: run_action(fqn))

    async def counted(fqn: str, answer: Callable[[], Awaitable[Response]]) -> Response:
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

    async def run_action(fqn: str) -> Response:
        # The body is read before anything can refuse the request: an answer sent while
        # the body is still arriving makes Hypercorn drop the keep-alive connection after
        # it, and the client's next request on that connection fails.
        raw = await request.get_data(cache=False, as_text=False)
        assert isinstance(raw, bytes)
        dry_run = dry_run_requested(request.args)  # docs/http.md, "Dry runs"
        return await action_answer(fqn, raw, request.headers, dry_run=dry_run)

    async def console_action(fqn: str, raw: bytes, headers: Headers) -> Response:
        return await counted(fqn, lambda: action_answer(fqn, raw, headers))

    async def action_answer(
        fqn: str, raw: bytes, headers: Headers, *, dry_run: bool = False
    ) -> Response:
        """The answer of ``POST {prefix}/actions/{fqn}`` for this body and these headers
        (``dry_run``: rolled back, docs/http.md "Dry runs")."""
        actor = await identity.actor(headers, require_actor_id=settings.require_actor_id)
        if settings.require_json_content_type:
            require_json(headers.getlist("Content-Type"))
        key = idempotency.parse_key(headers.getlist(idempotency.HEADER))
        body = jsonio.loads_object(raw)
        running = service()
        runtime = running.runtime
        action = runtime.permitted(fqn, actor)
        subject_id = parse_subject_id(action, actor, body)
        inputs = parse_inputs(body)
        if dry_run:
            rehearsal = await runtime.dry_run(action, actor, subject_id, inputs)
            return json_response(rehearsal.body())
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

    if console_enabled(settings):
        mount_console(
            app,
            settings,
            Answers(
                projection_answer, console_action, openapi_document, identity.actor, live.answer
            ),
        )

    @app.errorhandler(TesseraError)
    async def taxonomy_error(error: TesseraError) -> Response:
        if error.status < 500:
            return error_response(error)
        request_id = request_id_var.get()
        logger.error(
            "%s (request id %s): %s",
            error.kind,
            request_id,
            error.message,
            exc_info=error.__cause__ is not None,
        )
        # A 500 names the request id so an operator can find the logged cause.
        body = error_body(error.kind, f"{error.message} (request id {request_id})")
        return json_response(body, error.status)

    @app.errorhandler(UnsupportedMediaType)
    async def unsupported_media_type(error: UnsupportedMediaType) -> Response:
        response = error_response(error)
        response.headers["Accept"] = JSON  # RFC 9110 15.5.16: what would have been accepted
        return response

    @app.errorhandler(Unauthenticated)
    async def unauthenticated(error: Unauthenticated) -> Response:
        response = error_response(error)
        response.headers["WWW-Authenticate"] = error.challenge  # RFC 6750 section 3
        return response

    @app.errorhandler(HTTPException)
    async def framework_error(error: HTTPException) -> Response:
        status = error.code or 500
        kind = HTTP_KINDS.get(status, "BadRequest" if status < 500 else "InternalError")
        message = _framework_message(status, error)
        response = json_response(error_body(kind, message), status)
        if isinstance(error, MethodNotAllowed) and error.valid_methods:
            methods = sorted({*error.valid_methods, "OPTIONS"} - {"HEAD"})
            response.headers["Allow"] = ", ".join(methods)
        return response

    @app.errorhandler(Exception)
    async def unexpected_error(error: Exception) -> Response:
        request_id = request_id_var.get()
        logger.error("unhandled error (request id %s)", request_id, exc_info=error)
        return error_response(InternalError(f"Internal error (request id {request_id})"))

    app.before_serving(_freeze_startup_objects)  # last: after the service and the live hub
    middleware = CorsMiddleware(
        app.asgi_app,  # type: ignore[arg-type]
        access_log=settings.access_log,
        token_mode=settings.auth_mode == "token",
        draining=draining,
    )
    if metrics is None:
        app.asgi_app = middleware  # type: ignore[assignment,method-assign]
    else:
        app.asgi_app = metrics.middleware(middleware, lambda: in_use(state))  # type: ignore[assignment,method-assign]
    return app


def in_use(state: dict[str, Service]) -> int:
    running = state.get("service")
    return 0 if running is None else running.storage.connections_in_use()


def _framework_message(status: int, error: HTTPException) -> str:
    if status == 404:
        return f"No route for {request.method} {request.path}"
    if status == 405:
        return f"Method {request.method} is not allowed on {request.path}"
    if status == 413:
        return "Request body too large"
    return str(error.description or error.name)
