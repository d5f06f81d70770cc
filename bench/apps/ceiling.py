"""The ceiling: a Quart app answering a constant small JSON object (the framework's best case).

Served exactly like the host: ``python -m hypercorn apps.ceiling:app --workers N``.
"""

from __future__ import annotations

from quart import Quart, Response

BODY = b'{"ok":true,"service":"ceiling"}'

app = Quart("ceiling")


@app.get("/")
@app.get("/api/_health")
async def constant() -> Response:
    return Response(BODY, content_type="application/json")
