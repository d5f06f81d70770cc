"""Tessera test plugin whose import fails."""

raise RuntimeError("boom at import time")
