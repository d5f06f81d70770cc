"""The console's pages: a Quart blueprint mounted at :data:`CONSOLE_PATH`."""

from __future__ import annotations

import itertools
import json
import operator
import secrets
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from quart import Blueprint, Response, redirect, render_template, request
from werkzeug.datastructures import MultiDict
from werkzeug.sansio.response import Response as BaseResponse

from host.config import Settings
from host.console.documents import Answers, Catalogue, Document, projection_names
from host.console.forms import changed_inputs, filter_params, form_inputs, widget_value
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
from host.console.words import explain
from host.runtime.actor import parse_roles
from plugin_api.errors import BadRequest, ConcurrencyConflict, NotFound, PolicyDenied, TesseraError

__all__ = ["console_blueprint"]

DEFAULT_PAGE_SIZE = 25
PICKER_ROWS = 100
LIST_KEYS = ("sort", "q", "pageSize")
TRAIL = 20
"""How many pages back "previous" can go (then "first page")."""


def _subject_actions(document: Document) -> list[dict[str, Any]]:
    return [a for a in document["actions"] if a["subjectRequired"]]


def _buttons(document: Document) -> list[dict[str, Any]]:
    """Actions a row can run with one click: a subject and no inputs (transitions)."""
    return [a for a in _subject_actions(document) if not a["inputs"]]


def console_blueprint(settings: Settings, answers: Answers) -> Blueprint:
    """The console's routes; every page asks ``answers`` for its documents."""
    pages = Blueprint(
        "console",
        __name__,
        url_prefix=CONSOLE_PATH,
        template_folder="templates",
        static_folder="static",
    )
    signer = Signer(settings.console_secret)
    act_as = loopback_bind(settings.serve_bind)
    projections = projection_names(answers.openapi)

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
        actor, problem = who(identity_headers(current, request.headers, act_as))
        html = await render_template(
            template,
            base=CONSOLE_PATH,
            who=None if actor is None else as_mapping(actor),
            who_problem=problem,
            act_as=act_as,
            csrf=signer.csrf_token(current),
            widget_value=widget_value,
            cell=_cell,
            possible=_possible,
            **context,
        )
        response = Response(html, status=status, content_type="text/html; charset=utf-8")
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
            "frame-ancestors 'none'; base-uri 'none'"
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
        groups = [
            (
                plugin,
                [
                    (entity, list(items))
                    for entity, items in itertools.groupby(rows, lambda r: r.entity)
                ],
            )
            for plugin, rows in itertools.groupby(
                sorted(readable, key=lambda r: (r.plugin, r.entity, r.fqn)), lambda r: r.plugin
            )
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
        cursor = args.get("cursor")
        if cursor:
            params.append(("cursor", cursor))
        document = await found.document(fqn, params)
        kept = [(k, v) for k, v in args.items(multi=True) if k not in ("cursor", "back", "done")]
        next_url, previous_url = _paging(
            fqn, kept, args.getlist("back"), cursor, document["data"]["pagination"]["nextCursor"]
        )
        creates = [a for a in document["actions"] if not a["subjectRequired"]]
        return await page(
            "list.html",
            fqn=fqn,
            document=document,
            args=args,
            buttons=_buttons(document),
            creates=creates,
            links=await _links(found, document),
            next_url=next_url,
            key=_key,
            previous_url=previous_url,
            first_url=_url(fqn, kept) if cursor else None,
            here=_url(fqn, [*kept, *([("cursor", cursor)] if cursor else [])]),
            done=args.get("done"),
        )

    @pages.get("/p/<fqn>/<subject>")
    async def detail(fqn: str, subject: str) -> Response:
        found = catalogue()
        document = await found.document(fqn, [("subject", subject)])
        item = document["data"]["item"]
        if item is None:
            raise NotFound(f"No row {subject!r} in {fqn} for this tenant")
        forms = [a for a in _subject_actions(document) if a["inputs"]]
        pickers = {a["fqn"]: await _pickers(found, a["inputs"]) for a in forms}
        return await page(
            "detail.html",
            fqn=fqn,
            subject=subject,
            document=document,
            item=item,
            buttons=_buttons(document),
            forms=forms,
            pickers=pickers,
            links=await _links(found, document),
            key=_key,
            here=request.full_path,
            done=request.args.get("done"),
        )

    @pages.get("/new/<fqn>/<action>")
    async def create_form(fqn: str, action: str) -> Response:
        found = catalogue()
        document = await found.document(fqn, [("pageSize", "1")])
        descriptor = _action(document, action)
        return await page(
            "action.html",
            fqn=fqn,
            subject=None,
            action=descriptor,
            values={},
            pickers=await _pickers(found, descriptor["inputs"]),
            key=_key(),
            problem=None,
            back=_back(request.args.get("back"), fqn),
        )

    @pages.post("/run/<fqn>/<action>")
    async def run(fqn: str, action: str) -> Response | Any:
        form = await checked_form()
        found = catalogue()
        subject = form.get("_subject") or None
        back = _back(form.get("_back"), fqn)
        params = [("subject", subject)] if subject else [("pageSize", "1")]
        document = await found.document(fqn, params)
        descriptor = _action(document, action)
        key = form.get("_key") or _key()
        values = {k[3:]: v for k, v in form.items() if k.startswith("in.")}
        try:
            outputs = await _perform(found, document, descriptor, subject, form, key)
        except TesseraError as error:
            return await page(
                "action.html",
                error.status,
                fqn=fqn,
                subject=subject,
                action=descriptor,
                values=values,
                pickers=await _pickers(found, descriptor["inputs"]),
                key=key,
                problem=explain(error),
                back=back,
            )
        if subject is None and isinstance(outputs.get("id"), str):
            back = f"{CONSOLE_PATH}/p/{fqn}/{outputs['id']}"
        joiner = "&" if "?" in back else "?"
        return redirect(back + joiner + urlencode({"done": descriptor["label"]}), 303)

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


async def _perform(
    found: Catalogue,
    document: Document,
    descriptor: Mapping[str, Any],
    subject: str | None,
    form: Mapping[str, str],
    key: str,
) -> dict[str, Any]:
    """Run the action of a submitted form; an update sends only what changed, and refuses a
    form whose row changed since it was drawn (the ``_version`` it showed)."""
    inputs = descriptor["inputs"]
    if "initialValues" in descriptor:
        initial = json.loads(form.get("_initial") or "{}")
        seen = form.get("_version")
        item = document["data"]["item"] or {}
        if seen and "_version" in item and item["_version"] != seen:
            raise ConcurrencyConflict("The row was modified since the form was drawn")
        values = changed_inputs(inputs, form, initial)
    else:
        values = form_inputs(inputs, form)
    body: dict[str, Any] = {"inputs": values}
    if subject is not None:
        body["subject"] = {
            "tenantId": document["metadata"]["tenant"],
            "entityFqn": document["metadata"]["entity"],
            "identityHandle": subject,
        }
    answer = await found.act(descriptor["fqn"], body, key)
    outputs: dict[str, Any] = answer.get("outputs") or {}
    return outputs


def _action(document: Document, fqn: str) -> dict[str, Any]:
    for descriptor in document["actions"]:
        if descriptor["fqn"] == fqn:
            found: dict[str, Any] = descriptor
            return found
    raise NotFound(f"The document offers no action {fqn!r} here")


async def _links(found: Catalogue, document: Document) -> dict[str, str]:
    """For each reference field: the projection its values link to (when one is readable)."""
    links = {}
    for field in document["fields"]:
        if field["type"] == "reference":
            target = await found.projection_of(field["typeOptions"]["entity"])
            if target is not None:
                links[field["name"]] = target
    return links


async def _pickers(
    found: Catalogue, inputs: Sequence[Mapping[str, Any]]
) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """For each reference input: (target projection, [(id, label)]) of its first rows."""
    pickers = {}
    for descriptor in inputs:
        if descriptor["type"] != "reference":
            continue
        target = await found.projection_of(descriptor["typeOptions"]["entity"])
        if target is None:
            continue
        document = await found.document(target, [("pageSize", str(PICKER_ROWS))])
        choices = [(row["id"], _row_label(row)) for row in document["data"]["items"]]
        pickers[descriptor["name"]] = (target, choices)
    return pickers


def _row_label(row: Mapping[str, Any]) -> str:
    for name, value in row.items():
        if name != "id" and isinstance(value, str) and not name.startswith("_"):
            return f"{value} ({row['id']})"
    return str(row["id"])


def by(rows: Sequence[Any], attribute: str) -> Iterator[tuple[str, Iterator[Any]]]:
    """``rows`` (sorted) in runs of equal ``attribute``."""
    return itertools.groupby(rows, operator.attrgetter(attribute))


def _possible(workflow: Mapping[str, Any] | None, fqn: str, row: Mapping[str, Any]) -> bool:
    """Whether the 1.3.0 workflow lets action ``fqn`` start from the row's state (true for
    actions that perform no transition, and when the row does not show its state)."""
    if workflow is None or workflow["field"] not in row:
        return True
    sources = [t["from"] for t in workflow["transitions"] if fqn in t["actions"]]
    return not sources or any(row[workflow["field"]] in found for found in sources)


def _cell(field: Mapping[str, Any], value: Any) -> str:
    """A row value as text."""
    if value is None:
        return "—"
    if field["type"] == "money" and isinstance(value, Mapping):
        return f"{value.get('amount')} {value.get('currency')}"
    if field["type"] == "boolean":
        return "yes" if value else "no"
    return str(value)


def _key() -> str:
    """A fresh Idempotency-Key: one per drawn form, so a double click acts once."""
    return secrets.token_urlsafe(18)


def _paging(
    fqn: str,
    kept: Sequence[tuple[str, str]],
    earlier: Sequence[str],
    cursor: str | None,
    following: str | None,
) -> tuple[str | None, str | None]:
    """The links to the next and previous pages. Cursors only go forward, so the link to
    the next page carries the cursors of the pages before it (``back``, at most
    :data:`TRAIL` of them: the links stay short on page 1,000 too)."""
    next_url = previous_url = None
    if following:
        trail = [*earlier, cursor or ""][-TRAIL:]
        next_url = _url(fqn, [*kept, *[("back", b) for b in trail], ("cursor", following)])
    if earlier:
        where = [("cursor", earlier[-1])] if earlier[-1] else []
        previous_url = _url(fqn, [*kept, *[("back", b) for b in earlier[:-1]], *where])
    return next_url, previous_url


def _url(fqn: str, params: Sequence[tuple[str, str]]) -> str:
    query = urlencode(params)
    return f"{CONSOLE_PATH}/p/{fqn}" + (f"?{query}" if query else "")


def _back(value: str | None, fqn: str) -> str:
    """Where to go after a form: a console page only (never another site)."""
    if value and value.startswith(CONSOLE_PATH + "/") and "//" not in value and "\\" not in value:
        return value.split("&done=")[0].split("?done=")[0]
    return f"{CONSOLE_PATH}/p/{fqn}"


def _set_cookie(response: BaseResponse, value: str) -> None:
    response.set_cookie(COOKIE, value, httponly=True, samesite="Strict", path=CONSOLE_PATH)
