"""The one folding of searched text (``q``): Unicode case-insensitive, compatibility-normalised.

:func:`search_fold` is applied in the host to every searched value when a row is written (the
folded copy is what the text index holds, :mod:`host.storage.search`) and to the search text of
a request, so both backends compare the same strings and answer the same rows.
"""

from __future__ import annotations

import unicodedata

__all__ = ["search_fold"]


def search_fold(text: str) -> str:
    """``text`` normalised to NFKC, case-folded (full Unicode case folding, so ``ÉCOLE`` and
    ``école``, ``STRASSE`` and ``straße`` fold alike), and normalised to NFKC again (case
    folding can leave a string that is no longer normalised)."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
