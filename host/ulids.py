"""New ULIDs as their canonical 26-character strings, cheaply: a create makes five (request
id, row id, version, event id, a timer's id), every one inside the write path.

The strings are those python-ulid's ``str(ULID())`` gives (48 bits of Unix milliseconds, then
80 bits of randomness from :func:`os.urandom`, Crockford base32), with the same guarantee
within a process: strictly increasing. Within one millisecond the randomness of the previous
ULID is incremented; in the (astronomically unlikely) case it is exhausted, the next ULID
takes the next millisecond instead of failing. A forked child draws fresh randomness. What
costs python-ulid about 9.8 µs (a generator, a policy and a ``ULID`` object, then an encoder
of one character per expression) costs about 4 µs here for the first ULID of a
millisecond (one integer, encoded ten bits per table look-up) and 1.6 µs for the next ones,
which reuse the previous one's first 22 characters (docs/benchmarks.md, "A ULID generator of
the host's own, taken", and "ULIDs of one millisecond"). python-ulid stays the reference the
tests check these strings against, and what reads a ULID.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Final

__all__ = ["new_ulid"]

_ALPHABET: Final = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32
_PAIRS: Final = tuple(a + b for a in _ALPHABET for b in _ALPHABET)
"""Two characters per 10-bit value."""
_RANDOM_BITS: Final = 80
_RANDOM_MAX: Final = (1 << _RANDOM_BITS) - 1
_TEN_BITS: Final = 0x3FF
_PAIR_SHIFTS: Final = tuple(range(115, 4, -10))
"""Where the twelve 10-bit pairs between the first character (3 bits) and the last (5) lie."""


_LOW_BITS: Final = 20
"""The last four characters: the bits a ULID of the same millisecond as the previous one
usually changes (its randomness is the previous one's plus one)."""
_LOW_MASK: Final = (1 << _LOW_BITS) - 1


class _Last:
    """The previous ULID's parts (process-wide, under :attr:`lock`), and the first 22
    characters of its string (which encode ``value >> 20``: ``high``)."""

    millis = -1
    randomness = 0
    high = -1
    prefix = ""
    lock = threading.Lock()


def _forget_in_child() -> None:
    """A forked process draws fresh randomness (its parent's next ULID would be its own),
    with a lock of its own (another thread of the parent may have held it)."""
    _Last.millis, _Last.randomness, _Last.lock = -1, 0, threading.Lock()
    _Last.high, _Last.prefix = -1, ""


os.register_at_fork(after_in_child=_forget_in_child)


def new_ulid() -> str:
    """A new ULID, greater than every one this process made before."""
    millis = time.time_ns() // 1_000_000
    with _Last.lock:
        if millis > _Last.millis:
            randomness = int.from_bytes(os.urandom(10), "big")
        elif _Last.randomness < _RANDOM_MAX:
            millis, randomness = _Last.millis, _Last.randomness + 1
        else:
            millis, randomness = _Last.millis + 1, 0
        _Last.millis, _Last.randomness = millis, randomness
        value = (millis << _RANDOM_BITS) | randomness
        if value >> _LOW_BITS != _Last.high:
            _Last.high, _Last.prefix = value >> _LOW_BITS, _encode(value)[:-4]
        prefix = _Last.prefix
    low = value & _LOW_MASK
    return prefix + _PAIRS[low >> 10] + _PAIRS[low & _TEN_BITS]


def _encode(value: int) -> str:
    """The 26 characters of the 128-bit ``value``."""
    pairs = _PAIRS
    middle = "".join([pairs[(value >> shift) & _TEN_BITS] for shift in _PAIR_SHIFTS])
    return _ALPHABET[value >> 125] + middle + _ALPHABET[value & 0x1F]
