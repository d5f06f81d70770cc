"""The host's ULIDs (:mod:`host.ulids`) are the strings python-ulid makes and reads: canonical
Crockford base32 of the current millisecond and 80 random bits, strictly increasing within the
process (docs/benchmarks.md, "A ULID generator of the host's own")."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from itertools import pairwise

import pytest
from ulid import ULID

from host import ulids
from host.ulids import new_ulid
from plugin_api.testing import TenantHost

TICKET = "helpdesk.ticket"


def test_each_is_what_python_ulid_reads_back_at_this_millisecond() -> None:
    before = time.time()
    made = [new_ulid() for _ in range(2000)]
    after = time.time()
    for text in made:
        parsed = ULID.from_str(text)
        assert str(parsed) == text and len(text) == 26
        assert before - 0.001 <= parsed.timestamp <= after + 0.001
    # 80 random bits: two ULIDs of different milliseconds share no randomness.
    assert len({ULID.from_str(text).bytes[6:] for text in made}) == len(made)


def test_they_strictly_increase_within_a_millisecond_and_across() -> None:
    made = [new_ulid() for _ in range(50_000)]
    assert all(a < b for a, b in pairwise(made))
    stamps = [ULID.from_str(text).milliseconds for text in made]
    assert len(set(stamps)) < len(stamps)  # many fell in one millisecond: incremented
    pairs = pairwise(zip(made, stamps, strict=True))
    same = [(a, b) for (a, s), (b, t) in pairs if s == t]
    assert all(int(ULID.from_str(b)) == int(ULID.from_str(a)) + 1 for a, b in same)


@pytest.fixture
def exhausted(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The previous ULID used the last randomness of a millisecond an hour from now."""
    later = time.time_ns() // 1_000_000 + 3_600_000
    monkeypatch.setattr(ulids._Last, "millis", later)
    monkeypatch.setattr(ulids._Last, "randomness", (1 << 80) - 1)
    yield later


def test_an_exhausted_millisecond_moves_to_the_next_instead_of_failing(exhausted: int) -> None:
    first, second = ULID.from_str(new_ulid()), ULID.from_str(new_ulid())
    assert (first.milliseconds, first.bytes[6:]) == (exhausted + 1, bytes(10))
    assert (second.milliseconds, int(second)) == (exhausted + 1, int(first) + 1)


async def test_the_ids_and_request_ids_a_create_answers_are_such_ulids(
    samples: TenantHost,
) -> None:
    agent = samples.client(actor="alice", roles=["agent"])
    made: list[str] = []
    for n in range(3):
        answer = await agent.action(f"{TICKET}.create", inputs={"title": f"t{n}"})
        made += [answer.headers["x-request-id"], answer.outputs["id"]]
    assert [str(ULID.from_str(text)) for text in made] == made
    assert made == sorted(made) and len(set(made)) == len(made)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_does_not_continue_its_parents_sequence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The parent's last ULID lies in a millisecond an hour ahead: a child that kept it would
    # make exactly the parent's next one.
    monkeypatch.setattr(ulids._Last, "millis", time.time_ns() // 1_000_000 + 3_600_000)
    monkeypatch.setattr(ulids._Last, "randomness", 5)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's coverage is not collected)
        os.write(write, new_ulid().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    childs = os.read(read, 64).decode()
    os.close(read)
    parents = new_ulid()
    assert int(ULID.from_str(parents)) & ((1 << 80) - 1) == 6
    assert (
        childs != parents
        and ULID.from_str(childs).milliseconds < ULID.from_str(parents).milliseconds
    )


def test_an_increment_that_carries_into_the_cached_characters_is_encoded_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Within a millisecond only the last four characters are encoded anew, until the
    increment carries past them (every 2**20): then the whole string changes."""
    later = time.time_ns() // 1_000_000 + 3_600_000
    base = (0x1234_5678_9ABC_DE << 20) - 3  # three below a carry out of the last 20 bits
    monkeypatch.setattr(ulids._Last, "millis", later)
    monkeypatch.setattr(ulids._Last, "randomness", base)
    made = [new_ulid() for _ in range(6)]
    expected = [str(ULID.from_int((later << 80) | (base + n))) for n in range(1, 7)]
    assert made == expected
