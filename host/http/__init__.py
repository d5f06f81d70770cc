"""The HTTP surface of the interface spec, as a Quart app."""

from host.http.app import create_app

__all__ = ["create_app"]
