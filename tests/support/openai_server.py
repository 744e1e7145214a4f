"""A local server that speaks the OpenAI chat-completions protocol, for tests and demos.

``POST /v1/chat/completions`` on 127.0.0.1 (a free port), and ``POST /v1/responses`` (the
Responses API, for a reasoning model's output: a reasoning item, then the message when
the reply has content). Each request takes the next
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
    reasoning: str | None = None
    """Responses API: the summary of a reasoning item before the message; with an empty
    `content`, the response is `incomplete` (the output budget spent on reasoning)."""


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
        app.router.add_post("/v1/responses", self._handle)
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
        if request.path.endswith("/responses"):
            return web.json_response(self._response(body, reply), headers=reply.headers)
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

    def _response(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        """A Responses API response object."""
        n = len(self.requests)
        output: list[dict[str, Any]] = []
        if reply.reasoning is not None:
            summary = [{"type": "summary_text", "text": reply.reasoning}]
            output.append({"type": "reasoning", "id": f"rs_{n}", "summary": summary})
        if reply.content:
            text = {"type": "output_text", "text": reply.content, "annotations": []}
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [text],
                }
            )
        return {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": int(time.time()),
            "model": body.get("model", self.model),
            "status": "completed" if reply.content else "incomplete",
            "incomplete_details": None if reply.content else {"reason": "max_output_tokens"},
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": reply.prompt_tokens,
                "output_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": reply.completion_tokens},
            },
        }
