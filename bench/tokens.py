"""Token mode beside header mode: what does verifying a bearer token cost per action?

    python bench/tokens.py [--backend sqlite postgresql] [--scenarios create detail]
                           [--workers 1] [--runs 3] [--duration 5]

Two hosts with both sample plugins, each on its own fresh database, driven alternately with
the scenarios of ``bench/run.py`` (32 connections, same load generator, same requests but
for the identity):

- **headers**: the spec's mode, ``X-Tenant-ID``, ``X-Actor-Id``, ``X-Actor-Roles``;
- **token**: ``TESSERA_AUTH_MODE=token`` with a static RS256 key (``TESSERA_AUTH_KEY_FILE``);
  every request carries ``Authorization: Bearer`` with one token (signature, ``exp``,
  ``iss``, ``aud`` verified on every request: the host caches no verification).

Prints medians per scenario (req/s, p50, server CPU ms per request) and the token/headers
ratios.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from modes import cells, hosts_per_mode, measure, record, row, save

ISSUER = "https://issuer.bench/"
AUDIENCE = "tessera-bench"
IDENTITY = ("X-Tenant-ID", "X-Actor-Id", "X-Actor-Roles")


def as_token(requests: list[dict[str, Any]], key: rsa.RSAPrivateKey) -> list[dict[str, Any]]:
    """The same requests with the identity headers replaced by one bearer token."""
    tokens: dict[tuple[str, ...], str] = {}
    changed = []
    for request in requests:
        headers = dict(request["headers"])
        identity = tuple(headers.pop(name, "") for name in IDENTITY)
        if identity not in tokens:
            tenant, actor, roles = identity
            claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": actor or "anon"}
            claims.update(tenant_id=tenant, roles=[r for r in roles.split(",") if r])
            claims["exp"] = int(time.time()) + 3600
            tokens[identity] = jwt.encode(claims, key, algorithm="RS256")
        headers["Authorization"] = f"Bearer {tokens[identity]}"
        changed.append({**request, "headers": headers})
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backend", nargs="+", default=["sqlite"], choices=("sqlite", "postgresql")
    )
    parser.add_argument(
        "--scenarios", nargs="+", default=["create", "detail"],
        choices=("create", "transition", "update", "detail", "list100"),
    )  # fmt: skip
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tessera-bench-tokens-"))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp / "issuer.pem"
    pem.write_bytes(key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    modes: dict[str, dict[str, str]] = {
        "headers": {},
        "token": {
            "TESSERA_AUTH_MODE": "token",
            "TESSERA_AUTH_KEY_FILE": str(pem),
            "TESSERA_AUTH_ISSUER": ISSUER,
            "TESSERA_AUTH_AUDIENCE": AUDIENCE,
        },
    }
    results: list[dict[str, Any]] = []
    for backend in args.backend:
        with hosts_per_mode(backend, modes, workers=args.workers, tmp=tmp, name="tokens") as (
            urls,
            running,
        ):
            for scenario in args.scenarios:
                for run in range(args.runs):
                    for mode, server in running.items():
                        tenant = f"{scenario}-{mode}-{run}-{uuid.uuid4().hex[:6]}"
                        adapt = (lambda r: as_token(r, key)) if mode == "token" else (lambda r: r)
                        measured = measure(server, urls[mode], scenario, tenant, args, adapt)
                        measured.update(backend=backend, scenario=scenario, mode=mode, run=run)
                        record(results, measured)
    save(results, report(results), "tokens")
    return 0


def report(results: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | scenario | mode | req/s | ratio vs headers | p50 ms | server CPU ms/req | "
        "CPU ratio | non-2xx |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for backend, scenario, cell in cells(results, ("headers", "token"), {"non_2xx": "non_2xx"}):
        for mode, m in cell.items():
            lines.append(
                row(backend, scenario, mode, m, cell["headers"]) + f" {m['non_2xx']:.0f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
