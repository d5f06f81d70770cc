"""``TESSERA_WEBHOOKS``: the webhook endpoints, parsed and validated once at startup.

The value is a JSON array of objects ``{"url": ..., "secret": ..., "events": [patterns]}``;
a pattern is an action FQN (``billing.invoice.pay``), a prefix ending in ``*``
(``billing.*``), or ``*`` for every action. Optional keys: ``name`` (the subscriber name its
deliveries are kept under; default ``webhook:`` and the URL as :func:`shown_url` shows it) and
``timeout_s`` (default 10). A URL with user info (``user:password@``) is refused: the
signature authenticates a delivery; a token in the query string is never shown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

__all__ = ["Webhook", "parse_webhooks", "shown_url"]

_PATTERN: Final = re.compile(r"^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?)$")
_KEYS: Final = frozenset({"url", "secret", "events", "name", "timeout_s"})


def shown_url(url: str) -> str:
    """``url`` as logs, errors, metric labels and the default subscriber name show it: no
    user info, and a query string or fragment replaced by ``?...``."""
    parts = urlsplit(url)
    shown = urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
    return shown + ("?..." if parts.query or parts.fragment else "")


@dataclass(frozen=True, kw_only=True, slots=True)
class Webhook:
    """One endpoint: where matching events are POSTed and the key they are signed with."""

    name: str
    url: str
    secret: str = field(repr=False)
    events: tuple[str, ...]
    timeout_s: float = 10.0

    def __repr__(self) -> str:  # ``tessera config`` prints it: no secret, no credentials
        return (
            f"Webhook(name={self.name!r}, url={self.shown_url!r}, events={self.events!r}, "
            f"timeout_s={self.timeout_s!r})"
        )

    @property
    def shown_url(self) -> str:
        """The URL without user info or query string (:func:`shown_url`)."""
        return shown_url(self.url)

    def wants(self, action: str, entity: str | None = None) -> bool:
        """Whether an event of ``action`` matches one of the patterns (patterns name actions;
        ``entity`` is taken, and ignored, so every target answers the same call)."""
        for pattern in self.events:
            if pattern == "*" or pattern == action:
                return True
            if pattern.endswith("*") and action.startswith(pattern[:-1]):
                return True
        return False


def _endpoint(index: int, item: Any) -> Webhook:
    where = f"item {index}"
    if not isinstance(item, dict):
        raise ValueError(f"{where} must be an object with url, secret and events")
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        raise ValueError(f"{where} has unknown key(s) {', '.join(unknown)}")
    url = item.get("url")
    if (
        not isinstance(url, str)
        or urlsplit(url).scheme not in {"http", "https"}
        or not urlsplit(url).netloc
    ):
        shown = shown_url(url) if isinstance(url, str) else url
        raise ValueError(f"{where}: url must be an http(s) URL, got {shown!r}")
    if "@" in urlsplit(url).netloc:
        raise ValueError(
            f"{where}: url {shown_url(url)!r} carries credentials (user info before '@'), "
            "which would be shown in logs and stored; remove them: the Tessera-Signature "
            "header authenticates each delivery"
        )
    secret = item.get("secret")
    if not isinstance(secret, str) or len(secret) < 16:
        raise ValueError(f"{where}: secret must be a string of at least 16 characters")
    events = item.get("events")
    if not isinstance(events, list) or not events:
        raise ValueError(f"{where}: events must be a non-empty array of patterns")
    for pattern in events:
        if not isinstance(pattern, str) or not _PATTERN.match(pattern):
            raise ValueError(
                f"{where}: event pattern {pattern!r} is not an action FQN, a prefix ending "
                "in '.*', or '*'"
            )
    name = item.get("name", f"webhook:{shown_url(url)}")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: name must be a non-empty string")
    timeout = item.get("timeout_s", 10.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"{where}: timeout_s must be a positive number, got {timeout!r}")
    return Webhook(name=name, url=url, secret=secret, events=tuple(events), timeout_s=timeout)


def parse_webhooks(raw: str) -> tuple[Webhook, ...]:
    """Parse the value of ``TESSERA_WEBHOOKS``; :class:`ValueError` in one line on a misfit."""
    if not raw.strip():
        return ()
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(document, list):
        raise ValueError("expected a JSON array of {url, secret, events} objects")
    hooks = tuple(_endpoint(index, item) for index, item in enumerate(document))
    names = [hook.name for hook in hooks]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"two webhooks named {name!r}; give one a distinct 'name'")
    return hooks
