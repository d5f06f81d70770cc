"""Tessera schema evolution test plugin, version 1.2.0."""
