"""The console's only source of data: the API's own answers, asked in process.

:class:`Answers` holds the endpoint objects behind ``GET {prefix}/projections/{fqn}``,
``POST {prefix}/actions/{fqn}`` and ``GET {prefix}/changes`` (:mod:`host.http.routes`, the same
code the routes run) with the site of their app; every page is drawn from the ViewSchema
document these answer at :data:`SCHEMA`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from quart import Response
from werkzeug.datastructures import Headers, MultiDict

from host import jsonio
from host.query.params import SCHEMA_1_5
from host.runtime import Actor
from plugin_api.errors import TesseraError

__all__ = [
    "SCHEMA",
    "ActionEndpoint",
    "Answers",
    "Catalogue",
    "ChangesEndpoint",
    "HistoryEndpoint",
    "ProjectionEndpoint",
    "Readable",
]

SCHEMA = SCHEMA_1_5
"""The newest ViewSchema version the host answers: the one the console renders."""

S = TypeVar("S")
S_contra = TypeVar("S_contra", contravariant=True)
ActorOf = Callable[[Headers], Awaitable[Actor]]
Document = dict[str, Any]


class ProjectionEndpoint(Protocol[S_contra]):
    """``GET {prefix}/projections/{fqn}`` (:data:`host.http.routes.PROJECTION`)."""

    async def answer(
        self, site: S_contra, fqn: str, args: MultiDict[str, str], headers: Headers
    ) -> Response: ...


class ActionEndpoint(Protocol[S_contra]):
    """``POST {prefix}/actions/{fqn}`` (:data:`host.http.routes.ACTION`)."""

    async def answer(
        self, site: S_contra, fqn: str, raw: bytes, headers: Headers, *, dry_run: bool = False
    ) -> Response: ...


class HistoryEndpoint(Protocol[S_contra]):
    """``GET {prefix}/projections/{fqn}/history`` (:data:`host.http.routes.HISTORY`,
    docs/history.md)."""

    async def answer(
        self, site: S_contra, fqn: str, args: MultiDict[str, str], headers: Headers
    ) -> Response: ...


class ChangesEndpoint(Protocol[S_contra]):
    """``GET {prefix}/changes`` (:data:`host.http.routes.CHANGES`, docs/live.md)."""

    async def answer(
        self, site: S_contra, args: MultiDict[str, str], headers: Headers
    ) -> Response: ...


@dataclass(frozen=True, slots=True)
class Answers(Generic[S]):
    """What the host answers, in process: its endpoint objects and their app's ``site``
    (built by :func:`host.http.create_app`)."""

    site: S
    projections: ProjectionEndpoint[S]
    actions: ActionEndpoint[S]
    changes_stream: ChangesEndpoint[S]
    actor: ActorOf
    """The API's own identity resolution (header or token mode) of a request's headers."""
    projection_names: tuple[str, ...]
    """Every projection of the graph, by FQN."""
    histories: HistoryEndpoint[S]

    async def projection(self, fqn: str, args: MultiDict[str, str], headers: Headers) -> Response:
        return await self.projections.answer(self.site, fqn, args, headers)

    async def action(
        self, fqn: str, raw: bytes, headers: Headers, *, dry_run: bool = False
    ) -> Response:
        return await self.actions.answer(self.site, fqn, raw, headers, dry_run=dry_run)

    async def history(self, fqn: str, args: MultiDict[str, str], headers: Headers) -> Response:
        return await self.histories.answer(self.site, fqn, args, headers)

    async def changes(self, args: MultiDict[str, str], headers: Headers) -> Response:
        """The live stream of ``GET {prefix}/changes`` (docs/live.md)."""
        return await self.changes_stream.answer(self.site, args, headers)


async def _body(response: Response) -> Any:
    return jsonio.loads(await response.get_data(as_text=False))


@dataclass(frozen=True, slots=True)
class Readable:
    """A projection the identity may read, as its document names it (and labels it, for
    people: ViewSchema 1.5.0 ``labels``)."""

    fqn: str
    entity: str
    plugin: str
    label: str
    entity_label: str
    plugin_label: str


@dataclass(slots=True)
class Catalogue:
    """The API answers for one console request and one identity."""

    answers: Answers[Any]
    headers: Headers
    projections: Sequence[str]
    _readable: list[Readable] | None = field(default=None)

    async def document(self, fqn: str, params: Sequence[tuple[str, str]] = ()) -> Document:
        """The projection's ViewSchema document (list, or detail with ``subject``).

        :raises TesseraError: what the API would answer instead (its status and kind)."""
        args = MultiDict([*params, ("acceptSchemaVersions", SCHEMA)])
        answer: Document = await _body(await self.answers.projection(fqn, args, self.headers))
        return answer

    async def history(self, fqn: str, subject: str, size: int) -> list[dict[str, Any]]:
        """The newest ``size`` audit records of the row, as its history route answers them
        (docs/history.md)."""
        args = MultiDict([("subject", subject), ("pageSize", str(size))])
        answer = await _body(await self.answers.history(fqn, args, self.headers))
        items: list[dict[str, Any]] = answer["data"]["items"]
        return items

    async def act(
        self, fqn: str, body: dict[str, Any], key: str, *, dry_run: bool = False
    ) -> dict[str, Any]:
        """Run an action as ``POST {prefix}/actions/{fqn}`` would, with an Idempotency-Key
        (``dry_run``: rehearse it, ``?dryRun=true``, docs/http.md "Dry runs")."""
        headers = Headers(self.headers)
        headers["Content-Type"] = "application/json"
        headers["Idempotency-Key"] = key
        raw = jsonio.dumps(body)
        answer: dict[str, Any] = await _body(
            await self.answers.action(fqn, raw, headers, dry_run=dry_run)
        )
        return answer

    async def readable(self) -> list[Readable]:
        """Every projection whose first page the identity may read (asked of the API)."""
        if self._readable is None:
            found = []
            for fqn in self.projections:
                try:
                    document = await self.document(fqn, [("pageSize", "1")])
                except TesseraError as error:
                    if error.status == 400:
                        raise  # no identity (or a broken one): the page says so
                    continue
                entity = document["metadata"]["entity"]
                labels = document["labels"]
                found.append(
                    Readable(
                        fqn,
                        entity,
                        fqn.split(".", 1)[0],
                        labels["projection"],
                        labels["entity"],
                        labels["plugin"],
                    )
                )
            self._readable = found
        return self._readable

    async def projection_of(self, entity: str) -> str | None:
        """A readable projection of ``entity`` (the first declared), for links and pickers."""
        for readable in await self.readable():
            if readable.entity == entity:
                return readable.fqn
        return None
