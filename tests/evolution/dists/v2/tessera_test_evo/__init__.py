"""Tessera schema evolution test plugin, version 2.0.0."""
