"""Start the host through the app factory and run requests; used as a subprocess.

``python driver.py '<json list of requests>'`` with the plugin on ``PYTHONPATH`` and
``TESSERA_*`` in the environment. A request is ``{"action": fqn, "inputs": {...},
"subject": id}`` (an integer: the id output by that earlier request) or
``{"projection": fqn}``. Prints one JSON list of ``[status, body]``.
Exit status 1 with the error on stderr when the app does not start.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


async def main(requests: list[dict[str, Any]]) -> int:
    from host.http import create_app

    app = create_app()
    try:
        async with app.test_app() as test_app:  # type: ignore[arg-type,unused-ignore]
            client = test_app.test_client()
            headers = {"X-Tenant-ID": "t1", "X-Actor-Id": "alice", "X-Actor-Roles": "staff"}
            results: list[Any] = []
            for request in requests:
                if "action" in request:
                    fqn = request["action"]
                    subject = request.get("subject")
                    if isinstance(subject, int):  # the id created by an earlier request
                        subject = results[subject][1]["outputs"]["id"]
                    if subject is not None:
                        subject = {
                            "tenantId": "t1",
                            "entityFqn": fqn.rsplit(".", 1)[0],
                            "identityHandle": subject,
                        }
                    body = json.dumps({"subject": subject, "inputs": request.get("inputs", {})})
                    response = await client.post(
                        f"/api/actions/{fqn}",
                        data=body.encode(),
                        headers={
                            **headers,
                            "Content-Type": "application/json",
                            "Content-Length": str(len(body.encode())),
                        },
                    )
                else:
                    response = await client.get(
                        f"/api/projections/{request['projection']}", headers=headers
                    )
                results.append([response.status_code, json.loads(await response.get_data())])
    except Exception as exc:
        print(f"startup failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(json.loads(sys.argv[1]) if len(sys.argv) > 1 else [])))
