"""Where the audit sealer's signing key and checkpoints live (docs/history.md, "Tamper
evidence"; docs/security.md).

An operator names them (``TESSERA_AUDIT_KEY_FILE``, ``TESSERA_AUDIT_CHECKPOINTS``); otherwise
they default to a data directory: ``TESSERA_DATA_DIR`` if set, else the directory of the
SQLite database file. On PostgreSQL without ``TESSERA_DATA_DIR`` there is no default: the
chain is sealed in the database, and no checkpoint is signed until the operator names where.
A default key that does not exist yet is made by the first sealing process (32 random
bytes, hex, readable by its owner only).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from databases import DatabaseURL

from host.config import Settings
from host.errors import StartupError
from host.storage.database import database_file

__all__ = ["AuditFiles", "audit_files"]


@dataclass(frozen=True, slots=True)
class AuditFiles:
    """The key and checkpoint files of the settings (``None``: none)."""

    key: Path | None
    checkpoints: Path | None
    defaulted: bool
    """Whether the key or the checkpoints are the defaults beside the data (not named by
    the operator)."""
    key_defaulted: bool = False

    def read_key(self, *, create: bool = False) -> bytes:
        """The signing key (empty when there is none). A missing default key is made when
        ``create`` (the sealer's start), else it is none yet.

        :raises StartupError: a named key file cannot be read, or is empty.
        """
        if self.key is None:
            return b""
        if self.key_defaulted and not self.key.exists():
            if not create:
                return b""
            _make_key(self.key)
        try:
            key = self.key.read_bytes().strip()
        except OSError as exc:
            raise StartupError(f"audit key {self.key}: cannot read it: {exc}") from None
        if not key:
            raise StartupError(f"audit key {self.key}: the key file is empty")
        return key


def _make_key(path: Path) -> None:
    """Write a new random key at ``path`` unless another process just did."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise StartupError(f"audit key {path}: cannot create it: {exc}") from None
    with os.fdopen(descriptor, "w", encoding="ascii") as out:
        out.write(secrets.token_hex(32) + "\n")
        out.flush()
        os.fsync(out.fileno())


def audit_files(settings: Settings) -> AuditFiles:
    """The key and checkpoint files ``settings`` name, or their defaults."""
    folder, stem = _data_place(settings)
    named_key = settings.audit_key_file or None
    named_checkpoints = settings.audit_checkpoints or None
    if folder is None:
        return AuditFiles(
            Path(named_key) if named_key else None,
            Path(named_checkpoints) if named_checkpoints else None,
            False,
        )
    return AuditFiles(
        Path(named_key) if named_key else folder / f"{stem}.audit-key",
        Path(named_checkpoints) if named_checkpoints else folder / f"{stem}.audit-checkpoints",
        not (named_key and named_checkpoints),
        not named_key,
    )


def _data_place(settings: Settings) -> tuple[Path | None, str]:
    """The data directory and the file-name stem of the database's files."""
    url = settings.database_url
    try:
        database = database_file(url)
    except ValueError:
        return None, ""
    if database is not None:
        folder = Path(settings.data_dir) if settings.data_dir else database.parent
        return folder, database.name
    if not settings.data_dir:
        return None, ""
    return Path(settings.data_dir), str(DatabaseURL(url).database or "tessera")
