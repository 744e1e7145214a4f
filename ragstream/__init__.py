"""ragstream: streaming online evaluation of RAG services."""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["__version__"]

if TYPE_CHECKING:
    __version__: str


def __getattr__(name: str) -> str:
    """`__version__`, read from the installed package's metadata (pyproject.toml's
    `version`, the one place it is written) the first time it is asked for, so that the
    commands that do not print it do not import importlib.metadata."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("ragstream")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        value = "0.0.0"
    globals()["__version__"] = value
    return value
