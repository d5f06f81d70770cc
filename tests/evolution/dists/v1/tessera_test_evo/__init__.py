"""Tessera schema evolution test plugin, version 1.0.0."""
