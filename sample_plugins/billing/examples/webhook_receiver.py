"""A tiny webhook receiver for Tessera events: verifies ``Tessera-Signature`` and prints
every event it accepts (one JSON line each), dropping duplicates by event id.

    WEBHOOK_SECRET=... python webhook_receiver.py --port 8001 [--log events.jsonl] [--delay S]

Standard library only. Answers 204 to a verified event, 400 to a bad or stale signature.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_S = 300  # reject signatures older (or newer) than five minutes: replays


def verify(secret: str, header: str, body: bytes, now: float, tolerance: float = 300) -> bool:
    """Whether ``header`` (``t=<unix>,v1=<hex>``) signs ``body`` with ``secret``, recently."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False  # too old (a replay) or from a clock far off
    signed = f"{timestamp}.".encode() + body  # the raw bytes received, not re-serialised JSON
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts.get("v1", ""))


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the host reuses its connections
    secret = ""
    seen: set[str] = set()
    lock = threading.Lock()
    out = sys.stdout
    delay = 0.0

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        header = self.headers.get("Tessera-Signature", "")
        if not verify(self.secret, header, body, time.time(), TOLERANCE_S):
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        event = json.loads(body)
        time.sleep(self.delay)  # a slow receiver, for tests
        with self.lock:
            duplicate = event["id"] in self.seen
            self.seen.add(event["id"])
            record = {**event, "duplicate": duplicate}
            self.out.write(json.dumps(record, sort_keys=True) + "\n")
            self.out.flush()
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the events are the output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--log", help="append events to this file instead of stdout")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to take per event")
    args = parser.parse_args()
    Receiver.secret = os.environ["WEBHOOK_SECRET"]
    Receiver.delay = args.delay
    ThreadingHTTPServer.request_queue_size = 128  # the host POSTs many events at once
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Receiver)
    with open(args.log, "a", encoding="utf-8") if args.log else sys.stdout as out:
        Receiver.out = out
        print(f"listening on http://127.0.0.1:{args.port}/", file=sys.stderr, flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()


if __name__ == "__main__":
    main()
