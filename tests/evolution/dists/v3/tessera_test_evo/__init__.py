"""Tessera schema evolution test plugin, version 3.0.0."""
