"""Identity resolution: the spec's header mode, or in-process bearer token verification."""

from host.auth.identity import HeaderIdentity, Headers, Identity, TokenIdentity, identity_for

__all__ = ["HeaderIdentity", "Headers", "Identity", "TokenIdentity", "identity_for"]
