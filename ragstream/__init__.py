"""ragstream: streaming online evaluation of RAG services."""

from importlib.metadata import version

__all__ = ["__version__"]

__version__ = version("ragstream")
"""The installed package's version (pyproject.toml's `version`, the one place it is written)."""
