"""Tessera test plugin alpha: a note with a workflow."""
