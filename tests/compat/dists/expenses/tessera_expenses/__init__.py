"""Tessera plugin expenses."""
