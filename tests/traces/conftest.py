"""The instrumented app of the trace tests (`_rag.py`), one per test module."""

from collections.abc import Iterator

import pytest

from tests.traces._rag import RagApp

ANSWERS = [f"Answer {i}: see the article." for i in range(50)]


@pytest.fixture(scope="module")
def rag_app() -> Iterator[RagApp]:
    app = RagApp(ANSWERS)
    try:
        yield app
    finally:
        app.close()
