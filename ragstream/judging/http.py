"""An OpenAI-compatible chat-completions client: timeouts, retries, `Retry-After`.

``POST {base_url}/chat/completions`` with aiohttp. Retried: timeouts, connection errors,
429 and 5xx, with jittered exponential backoff (``d = min(max, initial · 2^attempt)``, wait
uniform in [d/2, d]); a ``Retry-After`` header (seconds or an HTTP date) replaces the
backoff, and a request asked to wait longer than ``retry_after_max`` gives up. Other 4xx
are not retried. Final failures raise `JudgeError` with a bounded reason.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from ragstream.judging.model import JudgeError

__all__ = ["ChatClient", "ChatResponse", "HttpStatusError", "parse_retry_after"]


class HttpStatusError(Exception):
    """A non-2xx answer; ``retry_after`` in seconds when the server sent the header."""

    def __init__(self, status: int, retry_after: float | None, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:200]}")
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """The first choice's content and the call's token usage."""

    content: str
    prompt_tokens: int
    completion_tokens: int
    model: str | None


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delta-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, HttpStatusError):
        return exc.status == 429 or exc.status >= 500
    return isinstance(exc, asyncio.TimeoutError | aiohttp.ClientConnectionError)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, HttpStatusError):
        return "http_error" if _retryable(exc) else "client_error"
    if isinstance(exc, asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, aiohttp.ClientError):
        return "connection_error"
    return "internal"


class ChatClient:
    """Calls one model on one endpoint; one instance per agent (it holds a session)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float,
        max_retries: int,
        backoff_initial: float,
        backoff_max: float,
        retry_after_max: float,
        json_mode: bool,
        temperature: float,
        max_tokens: int,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        wall: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self.json_mode = json_mode
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._sleep = sleep
        self._wall = wall
        self._rng = rng or random.Random()
        self._session: aiohttp.ClientSession | None = None
        self.retries: Counter[str] = Counter()
        """Retried attempts by reason (``timeout``, ``http_429``, ``http_5xx``, ...)."""
        self.waited = 0.0
        """Seconds slept between attempts, in total."""

    def _backoff(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, HttpStatusError) and exc.retry_after is not None:
            wait = exc.retry_after
        else:
            ceiling = min(self.backoff_max, self.backoff_initial * 2 ** (state.attempt_number - 1))
            wait = self._rng.uniform(ceiling / 2, ceiling)
        self.waited += wait
        return wait

    def _stop(self, state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if (
            isinstance(exc, HttpStatusError)
            and exc.retry_after is not None
            and exc.retry_after > self.retry_after_max
        ):
            return True
        return state.attempt_number > self.max_retries

    def _count_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, HttpStatusError):
            self.retries["http_429" if exc.status == 429 else "http_5xx"] += 1
        elif exc is not None:
            self.retries[_reason(exc)] += 1

    async def complete(self, messages: list[dict[str, str]]) -> ChatResponse:
        """One chat completion (with retries); raises `JudgeError` on final failure."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        retrying = AsyncRetrying(
            retry=retry_if_exception(_retryable),
            stop=self._stop,
            wait=self._backoff,
            before_sleep=self._count_retry,
            sleep=self._sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await self._post(body)
        except JudgeError:
            raise
        except Exception as exc:
            raise JudgeError(_reason(exc), str(exc) or type(exc).__name__) from exc
        raise JudgeError("internal", "no attempt was made")  # pragma: no cover

    async def _post(self, body: dict[str, Any]) -> ChatResponse:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        session = self._session
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with session.post(self.url, json=body, headers=self._headers, timeout=timeout) as r:
            text = await r.text()
            if r.status >= 300:
                retry_after = parse_retry_after(r.headers.get("Retry-After"), self._wall())
                raise HttpStatusError(r.status, retry_after, text)
        return _parse_envelope(text)

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None


def _parse_envelope(text: str) -> ChatResponse:
    """The content and usage of a chat-completions response body."""
    try:
        data = json.loads(text)
        content = data["choices"][0]["message"]["content"]
        usage = data.get("usage") or {}
        if not isinstance(content, str):
            raise TypeError("content is not a string")
        return ChatResponse(
            content=content,
            prompt_tokens=int(usage.get("prompt_tokens", 0) or 0),
            completion_tokens=int(usage.get("completion_tokens", 0) or 0),
            model=data.get("model"),
        )
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise JudgeError("bad_response", f"not a chat-completions response: {exc}") from None
