"""Tessera schema evolution test plugin with migration declarations, version 2.0.0."""
