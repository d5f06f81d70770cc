"""The identity a request carries (spec 2.1): the anonymous actor id and what a role name is."""

from __future__ import annotations

import re
from typing import Final

ANONYMOUS_ACTOR: Final = "anon"
"""The actor id of a request without ``X-Actor-Id``. It names nobody in particular: every
anonymous caller shares it, so a policy must never treat it as the owner of anything."""

ROLE_NAME_PATTERN: Final = r"[A-Za-z0-9_.:@/-]{1,64}"
"""A role name, in an action's ``roles`` and in ``X-Actor-Roles``: 1 to 64 ASCII letters,
digits and ``_ . : @ / -``. No whitespace, control or non-ASCII character, no comma."""

_ROLE_NAME: Final = re.compile(ROLE_NAME_PATTERN)


def is_role_name(name: object) -> bool:
    """Whether ``name`` is a string matching :data:`ROLE_NAME_PATTERN` exactly."""
    return isinstance(name, str) and _ROLE_NAME.fullmatch(name) is not None
