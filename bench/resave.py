"""CPU per edit of a searched field: sent as stored ("resave", a form saved with one other
field changed) or changed ("retitle"), this tree against another one, alternated.

    python bench/resave.py --other /tmp/old [--rounds 3] [--tickets 600] [--duration 5]

``--other`` is a directory holding another tree's ``host`` and ``plugin_api`` (for instance
``git archive <commit> host plugin_api | tar -x -C /tmp/old``); its host runs with it first
on ``PYTHONPATH``. Each round starts each tree's host (1 worker) on a fresh SQLite database,
creates ``--tickets`` tickets through HTTP (so the search index holds their titles), then
drives ``helpdesk.ticket.edit`` at them (32 connections) and reads the CPU time of the
worker's threads per completed request (``/proc``), the figure the machine's other load
moves least.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

import dbsetup
import httpx
import servers
from run import CREATE_INPUTS, headers, run_load, subject
from threadcpu import cpu_used, thread_cpu

TENANT = "resave"


def _tickets(port: int, count: int) -> list[str]:
    ids = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        for n in range(count):
            body = {"subject": None, "inputs": {**CREATE_INPUTS, "title": f"Ticket {n}"}}
            answer = client.post(
                "/api/actions/helpdesk.ticket.create", json=body, headers=headers(TENANT)
            )
            answer.raise_for_status()
            ids.append(answer.json()["outputs"]["id"])
    return ids


def _edits(ids: list[str], variant: str) -> list[dict[str, object]]:
    """Two passes over ``ids``, cycled: the title as stored and the estimate changed
    (``resave``), or a title other than the stored one each time (``retitle``)."""
    out: list[dict[str, object]] = []
    for p in (0, 1):
        for n, i in enumerate(ids):
            title = f"Ticket {n}" if variant == "resave" else f"Ticket {n} {'AB'[p]}"
            inputs = {"title": title, "estimate_hours": (n + p) % 40}
            body = {"subject": subject(TENANT, i), "inputs": inputs}
            out.append(
                {
                    "method": "POST",
                    "path": "/api/actions/helpdesk.ticket.edit",
                    "headers": headers(TENANT),
                    "body": json.dumps(body),
                }
            )
    return out


def _measure(
    tree: str | None, variant: str, args: argparse.Namespace, tmp: Path
) -> tuple[float, float]:
    """CPU ms per edit: the worker's threads together, and SQLite's writer thread."""
    url = dbsetup.prepare_sqlite(tmp / f"resave-{os.urandom(4).hex()}.db")
    env = {"PYTHONPATH": tree} if tree else None
    host = servers.start("host", workers=1, database_url=url, workdir=tmp, env=env)
    try:
        (pid,) = host.workers()
        ids = _tickets(host.port, args.tickets)
        before = thread_cpu(pid)
        got = run_load(
            host.port,
            "cycle",
            _edits(ids, variant),
            duration=args.duration,
            warmup=1.0,
            processes=1,
            workdir=tmp,
        )
        total, _loop, writer = cpu_used(before, thread_cpu(pid), pid)
        assert got["non_2xx"] == 0, got
        done = max(got["completed"], 1)
        return 1000 * total / done, 1000 * writer / done
    finally:
        host.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", required=True, help="another tree's host and plugin_api")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tickets", type=int, default=600)
    parser.add_argument("--duration", type=float, default=5.0)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="tessera-resave-"))
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for variant in ("resave", "retitle"):
            for label, tree in (("this tree", None), ("other", args.other)):
                ms = _measure(tree, variant, args, tmp)
                figures.setdefault((variant, label), []).append(ms)
                print(f"{variant} {label}: {ms[0]:.3f} CPU ms/edit, writer {ms[1]:.3f}", flush=True)
    print("| edit | CPU ms/edit: this tree | other | ratio | writer thread: this | other | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for variant in ("resave", "retitle"):
        cells = []
        for at in (0, 1):
            mine = statistics.median(m[at] for m in figures[(variant, "this tree")])
            other = statistics.median(m[at] for m in figures[(variant, "other")])
            cells.append(f"{mine:.3f} | {other:.3f} | {mine / other:.2f}")
        print(f"| {variant} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
