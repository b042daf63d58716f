"""Keep credentials out of every message, log line and recording.

Connection strings are read from the environment or a DSN and are never
printed; as a second line of defence every secret value seen while parsing a
connection string is registered here, and text that leaves the harness
(errors, manifest reasons, progress lines) goes through :func:`redact`.
"""
from __future__ import annotations

import re
import threading

_lock = threading.Lock()
_secrets: set[str] = set()

SECRET_KEYS = {"pwd", "password", "accesstoken", "access_token", "clientsecret"}
_KEY_VALUE = re.compile(r"(?i)\b(pwd|password)\s*=\s*(\{[^}]*\}|[^;]*)")


def register(value: str | None) -> None:
    if value and len(value) >= 3:
        with _lock:
            _secrets.add(value)


def redact(text: object) -> str:
    """Return ``text`` with registered secrets and any PWD or PASSWORD value masked."""
    out = _KEY_VALUE.sub(lambda m: f"{m.group(1)}=***", str(text))
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        out = out.replace(secret, "***")
    return out
