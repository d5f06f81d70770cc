"""Links between console pages: list URLs, pages by cursor, the return path of a form."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

from host.console.settings import CONSOLE_PATH

__all__ = ["TRAIL", "list_url", "paging", "safe_back"]

TRAIL = 20
"""How many pages back "previous" can go (then "first page")."""


def paging(
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
        next_url = list_url(fqn, [*kept, *[("back", b) for b in trail], ("cursor", following)])
    if earlier:
        where = [("cursor", earlier[-1])] if earlier[-1] else []
        previous_url = list_url(fqn, [*kept, *[("back", b) for b in earlier[:-1]], *where])
    return next_url, previous_url


def list_url(fqn: str, params: Sequence[tuple[str, str]]) -> str:
    query = urlencode(params)
    return f"{CONSOLE_PATH}/p/{fqn}" + (f"?{query}" if query else "")


def safe_back(value: str | None, fqn: str) -> str:
    """Where to go after a form: a console page only (never another site)."""
    if value and value.startswith(CONSOLE_PATH + "/") and "//" not in value and "\\" not in value:
        return value.split("&done=")[0].split("?done=")[0]
    return f"{CONSOLE_PATH}/p/{fqn}"
