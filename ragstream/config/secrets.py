"""Secrets read from files (a mounted Kubernetes secret, a Docker secret), at the edge.

A secret file is read when the client that needs it is built, never when the settings are
loaded or printed, and its content appears in no error message.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SecretFileError", "read_secret_file"]


class SecretFileError(ValueError):
    """A secret's file cannot be read; the message names the setting and the path."""


def read_secret_file(path: Path, setting: str) -> str:
    """The file's text without one trailing line ending (`echo` and editors add one; a
    `kubectl create secret --from-literal` value has none). Other whitespace is kept: it
    may belong to the secret."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise SecretFileError(f"{setting}: cannot read {path}: {reason}") from None
    if text.endswith("\r\n"):
        return text[:-2]
    return text.removesuffix("\n")
