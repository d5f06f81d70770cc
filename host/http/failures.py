"""The answers to what goes wrong while a request is answered: one function per kind of
error, and :func:`failure_response`, which picks among them as Quart's error handlers do
(the most derived class of the error that has one). The app registers each with Quart
(:func:`register_failures`); the action lane (:mod:`host.http.action_lane`), which answers
past Quart's request machinery, calls :func:`failure_response`, so both give the same bytes."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from quart import Quart, Response, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from host.http.envelope import JSON, error_body, error_response, json_response
from host.logs import request_id_var
from plugin_api.errors import (
    InternalError,
    TesseraError,
    Unauthenticated,
    UnsupportedMediaType,
)

__all__ = ["HTTP_KINDS", "failure_response", "register_failures"]

logger = logging.getLogger("tessera.http")

HTTP_KINDS = {404: "NotFound"}
"""Error kinds of the framework's own errors; every other status maps to ``BadRequest``."""


async def _taxonomy_error(error: TesseraError) -> Response:
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


async def _unsupported_media_type(error: UnsupportedMediaType) -> Response:
    response = error_response(error)
    response.headers["Accept"] = JSON  # RFC 9110 15.5.16: what would have been accepted
    return response


async def _unauthenticated(error: Unauthenticated) -> Response:
    response = error_response(error)
    response.headers["WWW-Authenticate"] = error.challenge  # RFC 6750 section 3
    return response


async def _framework_error(error: HTTPException) -> Response:
    status = error.code or 500
    kind = HTTP_KINDS.get(status, "BadRequest" if status < 500 else "InternalError")
    message = _framework_message(status, error)
    response = json_response(error_body(kind, message), status)
    if isinstance(error, MethodNotAllowed) and error.valid_methods:
        methods = sorted({*error.valid_methods, "OPTIONS"} - {"HEAD"})
        response.headers["Allow"] = ", ".join(methods)
    return response


async def _unexpected_error(error: Exception) -> Response:
    request_id = request_id_var.get()
    logger.error("unhandled error (request id %s)", request_id, exc_info=error)
    return error_response(InternalError(f"Internal error (request id {request_id})"))


def _framework_message(status: int, error: HTTPException) -> str:
    if status == 404:  # routing's answers: only Quart's routes raise them (in a request)
        return f"No route for {request.method} {request.path}"
    if status == 405:
        return f"Method {request.method} is not allowed on {request.path}"
    if status == 413:
        return "Request body too large"
    return str(error.description or error.name)


_Answer = Callable[[Any], Awaitable[Response]]

FAILURES: dict[type[Exception], _Answer] = {
    TesseraError: _taxonomy_error,
    UnsupportedMediaType: _unsupported_media_type,
    Unauthenticated: _unauthenticated,
    HTTPException: _framework_error,
    Exception: _unexpected_error,
}
"""The answer to each class of error (and to its subclasses that have none of their own)."""


def register_failures(app: Quart) -> None:
    """Make :data:`FAILURES` ``app``'s error handlers."""
    for kind, answer in FAILURES.items():
        app.register_error_handler(kind, answer)


async def failure_response(error: Exception) -> Response:
    """The answer to ``error``, chosen as Quart chooses among :data:`FAILURES`: the handler
    of the first class in the error's method resolution order that has one."""
    for kind in type(error).__mro__:
        answer = FAILURES.get(kind)
        if answer is not None:
            return await answer(error)
    raise error  # unreachable: Exception has an answer
