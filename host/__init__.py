"""Tessera's host: private implementation. Plugins import :mod:`plugin_api`, never this."""

__version__ = "0.1.0"
