"""The console's only source of data: the API's own answers, asked in process.

:class:`Answers` holds the functions behind ``GET {prefix}/projections/{fqn}``,
``POST {prefix}/actions/{fqn}`` and ``GET {prefix}/changes`` (the same code the routes run)
and the OpenAPI document;
every page is drawn from the ViewSchema document these answer at :data:`SCHEMA`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from quart import Response
from werkzeug.datastructures import Headers, MultiDict

from host import jsonio
from host.query.params import SCHEMA_1_4
from host.runtime import Actor
from plugin_api.errors import TesseraError

__all__ = ["SCHEMA", "Answers", "Catalogue", "Readable"]

SCHEMA = SCHEMA_1_4
"""The newest ViewSchema version the host answers: the one the console renders."""

ProjectionAnswer = Callable[[str, MultiDict[str, str], Headers], Awaitable[Response]]
ActionAnswer = Callable[[str, bytes, Headers], Awaitable[Response]]
ActorOf = Callable[[Headers], Awaitable[Actor]]
ChangesAnswer = Callable[[MultiDict[str, str], Headers], Awaitable[Response]]
Document = dict[str, Any]


class Answers(NamedTuple):
    """What the host answers, in process (built by :func:`host.http.create_app`)."""

    projection: ProjectionAnswer
    action: ActionAnswer
    openapi: bytes
    actor: ActorOf
    """The API's own identity resolution (header or token mode) of a request's headers."""
    changes: ChangesAnswer
    """The live stream of ``GET {prefix}/changes`` (docs/live.md)."""


async def _body(response: Response) -> Any:
    return jsonio.loads(await response.get_data(as_text=False))


@dataclass(frozen=True, slots=True)
class Readable:
    """A projection the identity may read, as its document names it."""

    fqn: str
    entity: str
    plugin: str


@dataclass(slots=True)
class Catalogue:
    """The API answers for one console request and one identity."""

    answers: Answers
    headers: Headers
    projections: Sequence[str]
    _readable: list[Readable] | None = field(default=None)

    async def document(self, fqn: str, params: Sequence[tuple[str, str]] = ()) -> Document:
        """The projection's ViewSchema document (list, or detail with ``subject``).

        :raises TesseraError: what the API would answer instead (its status and kind)."""
        args = MultiDict([*params, ("acceptSchemaVersions", SCHEMA)])
        answer: Document = await _body(await self.answers.projection(fqn, args, self.headers))
        return answer

    async def act(self, fqn: str, body: dict[str, Any], key: str) -> dict[str, Any]:
        """Run an action as ``POST {prefix}/actions/{fqn}`` would, with an Idempotency-Key."""
        headers = Headers(self.headers)
        headers["Content-Type"] = "application/json"
        headers["Idempotency-Key"] = key
        answer: dict[str, Any] = await _body(
            await self.answers.action(fqn, jsonio.dumps(body), headers)
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
                found.append(Readable(fqn, entity, fqn.split(".", 1)[0]))
            self._readable = found
        return self._readable

    async def projection_of(self, entity: str) -> str | None:
        """A readable projection of ``entity`` (the first declared), for links and pickers."""
        for readable in await self.readable():
            if readable.entity == entity:
                return readable.fqn
        return None


def projection_names(openapi: bytes) -> list[str]:
    """The projections the OpenAPI document lists (``/projections/{fqn}`` paths)."""
    document = jsonio.loads(openapi)
    assert isinstance(document, dict)
    marker = "/projections/"
    return [path[len(marker) :] for path in document["paths"] if path.startswith(marker)]
