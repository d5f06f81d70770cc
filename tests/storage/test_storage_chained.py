"""``Dialect.chained``: two PostgreSQL writes in one statement, parameters renumbered."""

from __future__ import annotations

from host.storage.dialects import POSTGRESQL, SQLITE


def test_the_second_statement_s_parameters_follow_the_first_s() -> None:
    first = "INSERT INTO a (x, y) VALUES ($1, $2)"
    second = (
        "INSERT INTO b (p, q, r) VALUES ($1, $2, 'pending'), ($3, $4, 'pending'), ($10, $11, 'x')"
    )
    assert POSTGRESQL.chains_writes and not SQLITE.chains_writes
    assert POSTGRESQL.chained(first, 2, second) == (
        "WITH _first AS (INSERT INTO a (x, y) VALUES ($1, $2)) "
        "INSERT INTO b (p, q, r) VALUES ($3, $4, 'pending'), ($5, $6, 'pending'), ($12, $13, 'x')"
    )
