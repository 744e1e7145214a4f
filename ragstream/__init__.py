"""ragstream: streaming online evaluation of RAG services."""

from ragstream._version import __version__

__all__ = ["__version__"]
