"""``tessera events``: what the event dispatchers have waiting, retrying dead deliveries, and a
dispatcher process of its own (``run``).

``stats``, ``list``, ``retry`` and ``discard`` work on the database alone (no host needs to
run). Exit statuses: 0 done; 1 the database
cannot be reached or has no event tables yet; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timezone
from typing import TypeVar

from host.config import Settings
from host.errors import StartupError
from host.graph import Graph, GraphError, build_graph
from host.startup import check_database_url, reachable
from host.storage import Storage
from host.storage.deliveries import DEAD, FAILED, DeliveryStore
from host.storage.outbox import PENDING, now_ms
from host.storage.schema import AUDIT_TABLE, DELIVERIES_TABLE

__all__ = ["add_parser", "events"]

T = TypeVar("T")
EXIT_FAILED = 1
STATES = (PENDING, FAILED, DEAD)


def add_parser(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """Declare ``tessera events`` and its subcommands."""
    parser = command("events", "show pending, failed and dead event deliveries; retry dead ones")
    sub = parser.add_subparsers(dest="events_command", required=True, metavar="SUBCOMMAND")

    def subcommand(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")

    stats = subcommand(
        "stats", "per subscriber: pending, failed and dead deliveries and the lag (seconds)"
    )
    stats.add_argument("--json", action="store_true", help="print JSON")
    listing = subcommand("list", "list deliveries still waiting or dead, oldest first")
    listing.add_argument(
        "--state",
        action="append",
        choices=STATES,
        help="only this state (repeatable; default: all three)",
    )
    listing.add_argument("--subscriber", help="only this subscriber")
    listing.add_argument("--limit", type=int, default=100, help="default: %(default)s")
    listing.add_argument("--json", action="store_true", help="print JSON lines")
    retry = subcommand("retry", "make dead deliveries pending again, with a fresh attempt count")
    which = retry.add_mutually_exclusive_group(required=True)
    which.add_argument("event_id", nargs="?", help="the event whose dead deliveries to retry")
    which.add_argument("--all-dead", action="store_true", help="retry every dead delivery")
    retry.add_argument("--subscriber", help="only this subscriber's")
    discard = subcommand(
        "discard", "delete every delivery kept for a subscriber (one that was removed)"
    )
    discard.add_argument("--subscriber", required=True, help="the subscriber's name")
    subcommand(
        "run",
        "deliver events in this process, serving no HTTP, until SIGTERM or SIGINT (for web "
        "workers started with TESSERA_EVENTS_DISPATCH=0)",
    )


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _stats(store: DeliveryStore, as_json: bool) -> int:
    now = now_ms()
    rows = await store.stats()
    if as_json:
        for s in rows:
            lag = None if s.oldest_ms is None else max(0.0, (now - s.oldest_ms) / 1000)
            line = {"subscriber": s.subscriber, PENDING: s.pending, FAILED: s.failed}
            print(json.dumps({**line, DEAD: s.dead, "lag_s": lag}, sort_keys=True))
        return 0
    if not rows:
        print("no deliveries waiting")
        return 0
    width = max(len("SUBSCRIBER"), *(len(s.subscriber) for s in rows))
    print(f"{'SUBSCRIBER':<{width}}  PENDING  FAILED  DEAD  LAG_S")
    for s in rows:
        shown = "-" if s.oldest_ms is None else f"{max(0.0, (now - s.oldest_ms) / 1000):.1f}"
        print(f"{s.subscriber:<{width}}  {s.pending:>7}  {s.failed:>6}  {s.dead:>4}  {shown:>5}")
    return 0


async def _list(store: DeliveryStore, args: argparse.Namespace) -> int:
    if args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return 2
    rows = await store.listing(tuple(args.state or STATES), args.subscriber, args.limit)
    keys = ("seq", "event_id", "subscriber", "state", "attempts", "next_at", "created_at")
    for row in rows:
        item = dict(zip((*keys, "action", "subject_id", "last_error"), row, strict=True))
        if args.json:
            print(json.dumps(item, sort_keys=True, default=str))
            continue
        error = f"  {item['last_error']}" if item["last_error"] else ""
        print(
            f"{item['event_id']}  {item['subscriber']}  {item['state']}  "
            f"attempts={item['attempts']}  {item['action']}  {item['subject_id']}  "
            f"created={_time(item['created_at'])}  next={_time(item['next_at'])}{error}"
        )
    if not rows and not args.json:
        print("no deliveries")
    return 0


async def _run(settings: Settings, work: Callable[[DeliveryStore], Awaitable[int]]) -> int:
    check_database_url(settings)
    storage = Storage(settings)
    if storage.is_new_file():
        raise StartupError(
            f"TESSERA_DATABASE_URL={settings.database_url}: no such SQLite file (nothing to show)"
        )
    await reachable(storage.connect(), settings)
    try:
        return await work(DeliveryStore(storage, DELIVERIES_TABLE, AUDIT_TABLE))
    except Exception as exc:
        if DELIVERIES_TABLE not in str(exc):
            raise
        raise StartupError(
            f"the database has no {DELIVERIES_TABLE} table yet: start the host once "
            "(tessera serve) to create it"
        ) from exc
    finally:
        await storage.disconnect()


async def _dispatch(settings: Settings, graph: Graph) -> int:
    """Start the service with its dispatcher and no HTTP; stop on SIGTERM or SIGINT."""
    from host.service import Service  # the whole service: only for this command

    service = await Service.start(replace(settings, events_dispatch=True), graph)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    print(f"delivering events (pid {os.getpid()}); SIGTERM or Ctrl-C stops", flush=True)
    try:
        await stop.wait()
    finally:
        await service.stop()
    return 0


def events(settings: Settings, args: argparse.Namespace) -> int:
    """Run ``tessera events SUBCOMMAND``."""
    if args.events_command == "run":
        try:
            graph = build_graph(settings)
        except GraphError as exc:
            for error in exc.errors:
                print(f"error: {error}", file=sys.stderr)
            return EXIT_FAILED
        return asyncio.run(_dispatch(settings, graph))

    async def work(store: DeliveryStore) -> int:
        command = args.events_command
        if command == "stats":
            return await _stats(store, args.json)
        if command == "list":
            return await _list(store, args)
        if command == "retry":
            count = await store.retry(None if args.all_dead else args.event_id, args.subscriber)
            print(f"{count} dead deliver{'y' if count == 1 else 'ies'} pending again")
            return 0 if count or args.all_dead else EXIT_FAILED
        count = await store.discard(args.subscriber)
        print(f"{count} deliver{'y' if count == 1 else 'ies'} of {args.subscriber} discarded")
        return 0

    return asyncio.run(_run(settings, work))
