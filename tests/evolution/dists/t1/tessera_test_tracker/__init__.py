"""Tessera schema evolution test plugin with migration declarations, version 1.0.0."""
