"""A local server that speaks the OpenAI chat-completions protocol, for tests and demos.

``POST /v1/chat/completions`` on 127.0.0.1 (a free port). Each request takes the next
scripted `Reply` (status, content, headers, delay, usage), or, when the script is empty,
asks ``responder`` for one. Every request body and its arrival time are kept, so tests can
count calls and measure waits. Delays end early when the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["OpenAIServer", "Reply", "echo_responder"]


@dataclass(frozen=True, slots=True)
class Reply:
    """How to answer one request."""

    content: str = "{}"
    """The assistant message content (what the "model" says)."""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (a slow model, or a timeout)."""
    prompt_tokens: int = 100
    completion_tokens: int = 20
    body: str | None = None
    """A raw response body that replaces the chat-completions envelope."""


def echo_responder(request: dict[str, Any]) -> Reply:
    """A 200 reply with ``"{}"`` content: useful only as a placeholder."""
    return Reply()


class OpenAIServer:
    """Scriptable OpenAI-compatible endpoint; use ``async with`` and ``base_url``."""

    def __init__(
        self,
        responder: Callable[[dict[str, Any]], Reply] = echo_responder,
        *,
        api_key: str | None = None,
        model: str = "test-model",
    ) -> None:
        self.responder = responder
        self.api_key = api_key
        self.model = model
        self.script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        """JSON bodies received, in order."""
        self.arrivals: list[float] = []
        """``time.monotonic()`` of each request's arrival."""
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._closing = asyncio.Event()

    def push(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        self.script.extend(replies)

    @property
    def calls(self) -> int:
        return len(self.requests)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        sock = socket.create_server(("127.0.0.1", 0))
        self._port = int(sock.getsockname()[1])
        self._closing.clear()
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=0.5
        )
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> OpenAIServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, request: web.Request) -> web.Response:
        self.arrivals.append(time.monotonic())
        body = await request.json()
        self.requests.append(body)
        if self.api_key is not None and request.headers.get("Authorization") != (
            f"Bearer {self.api_key}"
        ):
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        reply = self.script.popleft() if self.script else self.responder(body)
        if reply.delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), timeout=reply.delay)
        if reply.body is not None or reply.status >= 300:
            text = reply.body if reply.body is not None else json.dumps({"error": "scripted"})
            return web.Response(
                text=text,
                status=reply.status,
                headers=reply.headers,
                content_type="application/json",
            )
        envelope = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": body.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }
        return web.json_response(envelope, headers=reply.headers)
