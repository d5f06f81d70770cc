"""Webhook delivery: the signed POST of one event (Stripe's signature scheme).

The body is the event as JSON; the header ``Tessera-Signature: t=<unix seconds>,v1=<hex>``
carries HMAC-SHA256 with the endpoint's secret over ``<t>.<raw body>``. A receiver recomputes
it over the bytes it received, compares in constant time, and rejects a ``t`` too far from
its own clock (``docs/events.md``). Any 2xx answer is a delivery; anything else, a timeout or
a connection error is a failed attempt.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any, Final

import httpx

from host import __version__, jsonio
from host.webhook_settings import Webhook
from plugin_api.events import Event

__all__ = ["SIGNATURE_HEADER", "WebhookFailed", "body", "post", "sign"]

SIGNATURE_HEADER: Final = "Tessera-Signature"


class WebhookFailed(Exception):
    """The endpoint answered with a status other than 2xx."""


def body(event: Event, attempt: int) -> bytes:
    """The JSON body of ``event`` (keys as on the HTTP surface: camelCase)."""
    document: dict[str, Any] = {
        "id": event.id,
        "tenantId": event.tenant_id,
        "actorId": event.actor_id,
        "action": event.action,
        "entity": event.entity,
        "subjectId": event.subject_id,
        "outputs": event.outputs,
        "graphHash": event.graph_hash,
        "occurredAt": event.occurred_at,
        "attempt": attempt,
    }
    return jsonio.dumps(document)


def sign(secret: str, payload: bytes, timestamp: int) -> str:
    """The ``Tessera-Signature`` value of ``payload`` sent at ``timestamp``."""
    signed = f"{timestamp}.".encode() + payload
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


async def post(client: httpx.AsyncClient, hook: Webhook, event: Event, attempt: int) -> None:
    """POST ``event`` to ``hook``; :class:`WebhookFailed` or httpx's error unless 2xx."""
    payload = body(event, attempt)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": f"tessera/{__version__}",
        SIGNATURE_HEADER: sign(hook.secret, payload, int(time.time())),
        "Tessera-Event-Id": event.id,
    }
    response = await client.post(hook.url, content=payload, headers=headers)
    if not 200 <= response.status_code < 300:
        raise WebhookFailed(f"{hook.shown_url} answered {response.status_code}")
