"""Fixtures for the judging tests: a local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.openai_server import OpenAIServer

from ._helpers import good_responder


@pytest.fixture
async def server() -> AsyncIterator[OpenAIServer]:
    async with OpenAIServer(good_responder, api_key="sk-test") as srv:
        yield srv
