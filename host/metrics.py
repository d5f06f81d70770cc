"""Prometheus metrics (``TESSERA_METRICS=1``, the ``metrics`` extra: ``prometheus-client``).

Hypercorn runs several worker processes; ``prometheus-client``'s multiprocess mode makes
every worker write its samples to files in one directory, and ``GET /metrics`` (answered by
any worker) adds up the files of all of them. The directory is ``PROMETHEUS_MULTIPROC_DIR``
when set, else ``<tmp>/tessera-metrics-<pid of the Hypercorn master>``, shared by the
workers of one server. Labels only take bounded values: route names, action FQNs of the
graph (``unknown`` for others), statuses and error kinds.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Container, MutableMapping
from pathlib import Path
from typing import Any

from host.errors import StartupError

__all__ = ["Metrics", "metrics_dir"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LAG_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0)


def metrics_dir() -> Path:
    """The directory the workers of this server share (created if missing)."""
    configured = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    path = Path(configured or Path(tempfile.gettempdir()) / f"tessera-metrics-{os.getppid()}")
    path.mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(path)
    return path


class Metrics:
    """The metrics of one worker process."""

    def __init__(self, prefix: str, actions: Container[str]) -> None:
        self.directory = metrics_dir()  # before prometheus_client is imported
        try:
            import prometheus_client as prom
            from prometheus_client import multiprocess
        except ImportError:
            raise StartupError(
                "TESSERA_METRICS=1: prometheus-client is not installed; install it with: "
                "pip install 'tessera-host[metrics]'"
            ) from None
        self._prom = prom
        self._multiprocess = multiprocess
        self._prefix = prefix
        self._actions = actions
        self.requests = prom.Counter(
            "tessera_http_requests_total",
            "HTTP requests by route, action and status.",
            ("route", "action", "status"),
        )
        self.latency = prom.Histogram(
            "tessera_http_request_duration_seconds",
            "Time to answer a request, by route.",
            ("route",),
            buckets=LATENCY_BUCKETS,
        )
        self.outcomes = prom.Counter(
            "tessera_action_outcomes_total",
            "Action outcomes: ok, or the error kind.",
            ("action", "outcome"),
        )
        self.transactions = prom.Histogram(
            "tessera_db_transaction_seconds",
            "Time of a unit of work (one transaction), commit included.",
            buckets=LATENCY_BUCKETS,
        )
        self.deliveries = prom.Counter(
            "tessera_event_deliveries_total",
            "Event delivery attempts by subscriber and outcome: delivered, failed (to be "
            "retried), dead, lease_lost.",
            ("subscriber", "outcome"),
        )
        self.delivery_lag = prom.Histogram(
            "tessera_event_delivery_lag_seconds",
            "Time from an action's commit to the delivery of its event, by subscriber.",
            ("subscriber",),
            buckets=LAG_BUCKETS,
        )
        self.auth_failures = prom.Counter(
            "tessera_auth_failures_total",
            "Requests refused in token mode, by reason: missing, malformed, algorithm, "
            "unknown_key, signature, expired, not_yet_valid, issuer, audience, claims, "
            "identity_headers, tenant, keys_unavailable.",
            ("reason",),
        )
        self.pool_in_use = prom.Gauge(
            "tessera_db_connections_in_use",
            "Database connections in use, summed over live workers.",
            multiprocess_mode="livesum",
        )

        self.live_streams = prom.Gauge(
            "tessera_live_streams",
            "Open live change streams (GET /changes), summed over live workers.",
            multiprocess_mode="livesum",
        )
        self.live_messages = prom.Counter(
            "tessera_live_messages_total", "Change messages sent on live streams."
        )
        self.live_lag = prom.Histogram(
            "tessera_live_lag_seconds",
            "Time from a change's write to its message on a live stream.",
            buckets=LATENCY_BUCKETS,
        )

        self.timer_firings = prom.Counter(
            "tessera_timer_firings_total",
            "Timers settled by this worker's timer loop, by outcome: fired, failed (the action "
            "refused; not retried).",
            ("outcome",),
        )
        self.timer_lag = prom.Histogram(
            "tessera_timer_lag_seconds",
            "Time from a timer's due time to the commit of its firing.",
            buckets=LAG_BUCKETS,
        )
        self.timer_purges = prom.Counter(
            "tessera_timers_purged_total",
            "Settled timers (fired, failed, cancelled) older than TESSERA_TIMERS_RETENTION "
            "deleted by this worker's timer loop.",
        )
        self.timers_pending = prom.Gauge(
            "tessera_timers_pending",
            "Pending timers in the database, as a timer loop last counted them (every 10 s): "
            "due=later, or due=overdue (due and not fired yet).",
            ("due",),
            multiprocess_mode="max",
        )

    def timer_settled(self, outcome: str, lag_s: float) -> None:
        """Count one timer settled by the timer loop (``fired`` or ``failed``)."""
        self.timer_firings.labels(outcome).inc()
        self.timer_lag.observe(lag_s)

    def timers_purged(self, purged: int) -> None:
        """Count settled timers a purge deleted."""
        self.timer_purges.inc(purged)

    def timers_counted(self, pending: int, overdue: int) -> None:
        """Record the pending timers a timer loop counted."""
        self.timers_pending.labels("later").set(pending - overdue)
        self.timers_pending.labels("overdue").set(overdue)

    def live_sent(self, count: int, lags: list[float]) -> None:
        """Count messages sent on a live stream, with their lags in seconds."""
        self.live_messages.inc(count)
        for lag in lags:
            self.live_lag.observe(lag)

    def action_label(self, fqn: str) -> str:
        return fqn if fqn in self._actions else "unknown"

    def route(self, path: str) -> tuple[str, str]:
        """(route name, action label) of a request path."""
        rest = path[len(self._prefix) :] if path.startswith(self._prefix) else ""
        if path == "/metrics":
            return "metrics", ""
        if rest in {"/_health", "/_ready"}:
            return rest[1:], ""
        if rest.startswith("/projections/"):
            return "projections", ""
        if rest == "/changes":
            return "changes", ""
        if rest.startswith("/actions/"):
            return "actions", self.action_label(rest[len("/actions/") :])
        return "other", ""

    def exposition(self) -> bytes:
        registry = self._prom.CollectorRegistry()
        self._multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        data: bytes = self._prom.generate_latest(registry)
        return data

    def delivered(self, subscriber: str, outcome: str, lag_s: float) -> None:
        """Count one delivery attempt of an event (the dispatcher's ``on_outcome``);
        subscriber names come from the graph and ``TESSERA_WEBHOOKS``: bounded."""
        self.deliveries.labels(subscriber, outcome).inc()
        if outcome == "delivered":
            self.delivery_lag.labels(subscriber).observe(lag_s)

    def auth_failed(self, reason: str) -> None:
        """Count a request token mode refused."""
        self.auth_failures.labels(reason).inc()

    def worker_exited(self) -> None:
        """Drop this worker's live gauges (its counters still count)."""
        self._multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    def middleware(self, app: ASGIApp, in_use: Callable[[], int]) -> ASGIApp:
        """``app`` counting its requests, and answering ``GET /metrics`` itself."""

        async def metered(scope: Scope, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            if scope["path"] == "/metrics" and scope["method"] == "GET":
                body = self.exposition()
                headers = [(b"content-type", CONTENT_TYPE.encode())]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
            started = time.perf_counter()
            status = 0

            async def send_status(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            try:
                await app(scope, receive, send_status)
            finally:
                route, action = self.route(scope["path"])
                self.requests.labels(route, action, str(status)).inc()
                self.latency.labels(route).observe(time.perf_counter() - started)
                self.pool_in_use.set(in_use())

        return metered
