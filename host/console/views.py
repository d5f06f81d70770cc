"""The console's pages: a Quart blueprint mounted at :data:`CONSOLE_PATH`."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

from quart import Blueprint, Response, redirect, render_template, request
from werkzeug.datastructures import Headers, MultiDict
from werkzeug.sansio.response import Response as BaseResponse

from host.config import Settings
from host.console.actions import (
    action_of,
    buttons,
    new_key,
    perform,
    pickers,
    possible,
    reference_links,
    rehearse,
    subject_actions,
)
from host.console.documents import Answers, Catalogue
from host.console.forms import filter_params, widget_value
from host.console.lists import EXPORTS, facet_fields, facet_links, query_params
from host.console.navigation import list_url, paging, safe_back
from host.console.preview import preview
from host.console.session import (
    COOKIE,
    Session,
    Signer,
    as_mapping,
    identity_headers,
    new_session,
    who,
)
from host.console.settings import CONSOLE_PATH, loopback_bind
from host.console.story import pending_timers, timeline
from host.console.words import explain, row_title
from host.runtime.actor import parse_roles
from plugin_api.errors import BadRequest, NotFound, PolicyDenied, TesseraError

__all__ = ["console_blueprint"]

DEFAULT_PAGE_SIZE = 25
LIST_KEYS = ("sort", "q", "pageSize")
AS_OF = "asOf"
"""The detail's parameter of a past version (docs/history.md, "As of")."""
PROJECTION = "projection"
"""The parameter of the changes stream: the projection a page shows."""
SHOWN = "shown"
"""... and the rows a list page shows (docs/live.md, "Rows leaving a list")."""
STREAM_KEYS = (PROJECTION, SHOWN)


def _stream_key(name: str) -> bool:
    """Whether the console passes ``name`` on to the live stream (docs/live.md)."""
    return name in STREAM_KEYS or name.startswith("filter.")


def console_blueprint(settings: Settings, answers: Answers[Any]) -> Blueprint:
    """The console's routes; every page asks ``answers`` for its documents."""
    pages = Blueprint(
        "console",
        __name__,
        url_prefix=CONSOLE_PATH,
        template_folder="templates",
        static_folder="static",
    )
    signer = Signer(settings.console_secret)
    # Act as: loopback binds in header mode only (a token mode identity is the token's).
    act_as = loopback_bind(settings.serve_bind) and settings.auth_mode == "headers"
    projections = answers.projection_names

    def session() -> Session | None:
        return signer.read(request.cookies.get(COOKIE))

    def catalogue() -> Catalogue:
        headers = identity_headers(session(), request.headers, act_as)
        return Catalogue(answers, headers, projections)

    async def page(template: str, status: int = 200, **context: Any) -> Response:
        """Render ``template`` with who the visitor is and a CSRF token; sets the cookie
        when the visitor has none yet."""
        current = session()
        fresh = current is None
        if current is None:
            current = new_session()
        sent = identity_headers(current, request.headers, act_as)
        actor, problem = await who(sent, answers.actor)
        html = await render_template(
            template,
            base=CONSOLE_PATH,
            who=None if actor is None else as_mapping(actor),
            who_problem=problem,
            act_as=act_as,
            csrf=signer.csrf_token(current),
            widget_value=widget_value,
            cell=_cell,
            possible=possible,
            **context,
        )
        response = Response(html, status=status, content_type="text/html; charset=utf-8")
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; "
            "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        )
        if fresh:
            _set_cookie(response, signer.dump(current))
        return response

    async def checked_form() -> MultiDict[str, str]:
        form = await request.form
        if not signer.csrf_valid(session(), form.get("_csrf")):
            raise PolicyDenied(
                "This form is not from this console session (missing or stale CSRF token); "
                "reload the page and send it again"
            )
        return form

    @pages.errorhandler(TesseraError)
    async def refused(error: TesseraError) -> Response:
        return await page("problem.html", error.status, problem=explain(error))

    @pages.get("/")
    async def home() -> Response:
        found = catalogue()
        try:
            readable = await found.readable()
        except TesseraError as error:
            if act_as:  # a first visit on a developer's machine: say who to be
                return await page("as.html", problem=None, welcome=True)
            return await page("home.html", groups=[], problem=explain(error))
        ordered = sorted(readable, key=lambda r: (r.plugin_label, r.entity_label, r.fqn))
        groups = [
            (plugin, [(entity, list(rows)) for entity, rows in _runs(in_plugin, "entity_label")])
            for plugin, in_plugin in _runs(ordered, "plugin_label")
        ]
        return await page("home.html", groups=groups, problem=None)

    @pages.get("/p/<fqn>")
    async def listing(fqn: str) -> Response:
        found = catalogue()
        args = request.args
        probe = await found.document(fqn, [("pageSize", "1")])
        params = [(k, args[k]) for k in LIST_KEYS if args.get(k, "").strip()]
        if "pageSize" not in args:
            size = min(DEFAULT_PAGE_SIZE, probe["data"]["pagination"]["maxPageSize"])
            params.append(("pageSize", str(size)))
        params += filter_params(args, probe["filters"])
        params.append(("count", "true"))  # docs/lists-search.md: bounded, exact or a floor
        params += [("facet", name) for name in facet_fields(probe["filters"])]
        cursor = args.get("cursor")
        if cursor:
            params.append(("cursor", cursor))
        document = await found.document(fqn, params)
        kept = [(k, v) for k, v in args.items(multi=True) if k not in ("cursor", "back", "done")]
        next_url, previous_url = paging(
            fqn, kept, args.getlist("back"), cursor, document["data"]["pagination"]["nextCursor"]
        )
        creates = [a for a in document["actions"] if not a["subjectRequired"]]
        items = document["data"]["items"]
        # The stream tracks the rows shown under the list's filters: one leaving is told.
        stream = [(PROJECTION, fqn), *filter_params(args, probe["filters"])]
        stream += [(SHOWN, row["id"]) for row in items] or [(SHOWN, "")]
        states = {s["name"]: s["label"] for s in (document.get("workflow") or {}).get("states", [])}
        facets = document["data"].get("facets") or {}
        return await page(
            "list.html",
            facets=facet_links(fqn, facets, document["filters"], kept, states),
            exports=[
                (kind, f"{CONSOLE_PATH}/export/{fqn}?{urlencode([*kept, ('format', kind)])}")
                for kind in EXPORTS
            ],
            fqn=fqn,
            document=document,
            args=args,
            stream=f"{CONSOLE_PATH}/changes?{urlencode(stream)}",
            displays={row["id"]: row_title(document, row) for row in items},
            buttons=buttons(document),
            creates=creates,
            links=await reference_links(found, document),
            next_url=next_url,
            key=new_key,
            previous_url=previous_url,
            first_url=list_url(fqn, kept) if cursor else None,
            here=list_url(fqn, [*kept, *([("cursor", cursor)] if cursor else [])]),
            done=args.get("done"),
        )

    @pages.get("/export/<fqn>")
    async def export(fqn: str) -> Response:
        """What the list shows, whole, as the API's CSV or NDJSON file (``format=``)."""
        found = catalogue()
        args = request.args
        probe = await found.document(fqn, [("pageSize", "1")])
        params = query_params(args, filter_params(args, probe["filters"]))
        params.append(("format", args.get("format", "csv")))
        return await answers.projection(fqn, MultiDict(params), found.headers)

    @pages.get("/p/<fqn>/<subject>")
    async def detail(fqn: str, subject: str) -> Response:
        found = catalogue()
        as_of = request.args.get(AS_OF) or None
        document = await found.document(
            fqn, [("subject", subject), *([(AS_OF, as_of)] if as_of else [])]
        )
        item = document["data"]["item"]
        if item is None:
            raise NotFound(f"No row {subject!r} in {fqn} for this tenant")
        story, untold = await timeline(found, fqn, subject, document)
        forms = [a for a in subject_actions(document) if a["inputs"]]
        choices = {a["fqn"]: await pickers(found, a["inputs"]) for a in forms}
        return await page(
            "detail.html",
            title=row_title(document, item),
            as_of=as_of,
            story=story,
            untold=untold,
            timers=[] if as_of else pending_timers(document),
            fqn=fqn,
            subject=subject,
            document=document,
            item=item,
            buttons=buttons(document),
            forms=forms,
            pickers=choices,
            links=await reference_links(found, document),
            key=new_key,
            here=request.full_path,
            done=request.args.get("done"),
        )

    @pages.get("/changes")
    async def changes() -> Response:
        """The API's live stream (docs/live.md) with the console's identity: an
        ``EventSource`` sends the cookie but no identity headers (static/live.js)."""
        headers = Headers(catalogue().headers)
        for resume in request.headers.getlist("Last-Event-ID"):  # EventSource reconnecting
            headers.add("Last-Event-ID", resume)
        args = MultiDict([(k, v) for k, v in request.args.items(multi=True) if _stream_key(k)])
        return await answers.changes(args, headers)

    @pages.get("/new/<fqn>/<action>")
    async def create_form(fqn: str, action: str) -> Response:
        found = catalogue()
        document = await found.document(fqn, [("pageSize", "1")])
        descriptor = action_of(document, action)
        return await page(
            "action.html",
            labels=document.get("labels"),
            fqn=fqn,
            subject=None,
            action=descriptor,
            values={},
            pickers=await pickers(found, descriptor["inputs"]),
            key=new_key(),
            problem=None,
            back=safe_back(request.args.get("back"), fqn),
        )

    @pages.post("/run/<fqn>/<action>")
    async def run(fqn: str, action: str) -> Response | Any:
        form = await checked_form()
        found = catalogue()
        subject = form.get("_subject") or None
        back = safe_back(form.get("_back"), fqn)
        params = [("subject", subject)] if subject else [("pageSize", "1")]
        document = await found.document(fqn, params)
        descriptor = action_of(document, action)
        key = form.get("_key") or new_key()
        values = {k[3:]: v for k, v in form.items() if k.startswith("in.")}
        try:
            outputs = await perform(found, document, descriptor, subject, form, key)
        except TesseraError as error:
            return await page(
                "action.html",
                error.status,
                labels=document.get("labels"),
                fqn=fqn,
                subject=subject,
                action=descriptor,
                values=values,
                pickers=await pickers(found, descriptor["inputs"]),
                key=key,
                problem=explain(error),
                back=back,
            )
        if subject is None and isinstance(outputs.get("id"), str):
            back = f"{CONSOLE_PATH}/p/{fqn}/{outputs['id']}"
        joiner = "&" if "?" in back else "?"
        return redirect(back + joiner + urlencode({"done": descriptor["label"]}), 303)

    @pages.post("/confirm/<fqn>/<action>")
    async def confirm(fqn: str, action: str) -> Response:
        """Before a one-click action: its dry run, then a button that runs it for real with
        the same Idempotency-Key (docs/console.md, "Before the click")."""
        form = await checked_form()
        found = catalogue()
        subject = form.get("_subject", "")
        back = safe_back(form.get("_back"), fqn)
        document = await found.document(fqn, [("subject", subject)])
        item = document["data"]["item"]
        if item is None:
            raise NotFound(f"No row {subject!r} in {fqn} for this tenant")
        descriptor = action_of(document, action)
        key = form.get("_key") or new_key()
        context: dict[str, Any] = {"problem": None, "shown": None, "unsupported": None}
        try:
            rehearsal = await rehearse(found, document, descriptor, subject, key)
            context["shown"] = preview(rehearsal, item, document["fields"])
        except TesseraError as error:
            if error.kind == "DryRunUnsupported":  # no preview; the action may still run
                context["unsupported"] = error.message
            else:
                context["problem"] = explain(error)
        return await page(
            "confirm.html",
            fqn=fqn,
            subject=subject,
            title=row_title(document, item),
            labels=document["labels"],
            action=descriptor,
            key=key,
            back=back,
            **context,
        )

    @pages.route("/as", methods=["GET", "POST"])
    async def acting() -> Response | Any:
        if not act_as:
            raise PolicyDenied(
                "'Act as' is only for a console served on a loopback address (tessera serve "
                "--bind 127.0.0.1:PORT); here your identity comes from the gateway's headers"
            )
        if request.method == "GET":
            return await page("as.html", problem=None)
        form = await checked_form()
        tenant = form.get("tenant", "").strip()
        actor = form.get("actor", "").strip()
        roles = form.get("roles", "").strip()
        try:
            if not tenant:
                raise BadRequest("A tenant is needed")
            parse_roles(roles)  # refused as the API would refuse the header
        except TesseraError as error:
            return await page("as.html", error.status, problem=explain(error))
        current = session() or new_session()
        response = redirect(f"{CONSOLE_PATH}/", 303)
        _set_cookie(response, signer.dump(current.acting_as(tenant, actor, roles)))
        return response

    return pages


def _runs(rows: Iterable[Any], attribute: str) -> Iterator[tuple[str, Iterator[Any]]]:
    """``rows`` (sorted) in runs of an equal ``attribute``."""
    return itertools.groupby(rows, operator.attrgetter(attribute))


def _cell(field: Mapping[str, Any], value: Any) -> str:
    """A row value as text."""
    if value is None:
        return "—"
    if field["type"] == "money" and isinstance(value, Mapping):
        return f"{value.get('amount')} {value.get('currency')}"
    if field["type"] == "boolean":
        return "yes" if value else "no"
    return str(value)


def _set_cookie(response: BaseResponse, value: str) -> None:
    response.set_cookie(COOKIE, value, httponly=True, samesite="Strict", path=CONSOLE_PATH)
