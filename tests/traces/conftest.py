"""The instrumented app of the trace tests (`_rag.py`), one per test module; Haystack's
usage statistics off (it would post them to its vendor on every pipeline run)."""

import os
from collections.abc import Iterator

import pytest

from tests.traces._rag import RagApp

os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"  # read when haystack is first imported

ANSWERS = [f"Answer {i}: see the article." for i in range(50)]


@pytest.fixture(scope="module")
def rag_app() -> Iterator[RagApp]:
    app = RagApp(ANSWERS)
    try:
        yield app
    finally:
        app.close()
