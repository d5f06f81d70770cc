"""Tessera schema evolution test plugin, version 3.1.0."""
