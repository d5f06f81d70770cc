"""Tessera schema evolution test plugin, version 1.1.0."""
