"""Tessera plugin library."""
