"""The `openai` judge: an LLM behind any OpenAI-compatible chat-completions endpoint.

Per answer: cache lookup (a hit costs nothing), then — if the circuit breaker allows —
one chat call with the versioned prompt, a strict parse of its JSON, and on a parse error
ONE repair call that shows the model its reply and the error. Tokens and cost are taken
from each response's ``usage``: ``cost = prompt · price_prompt / 1e6 + completion ·
price_completion / 1e6`` (USD). Identical inputs judged concurrently share one call.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter
from collections.abc import Callable

from ragstream.judging.cache import JudgmentCache, cache_key
from ragstream.judging.circuit import CircuitBreaker, CircuitState
from ragstream.judging.http import ChatClient, ChatResponse
from ragstream.judging.model import JudgeError, JudgeInput, Judgment, Usage
from ragstream.judging.prompts import (
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    ReplyError,
    judgment_from_reply,
    parse_reply,
    repair_messages,
    user_prompt,
)

__all__ = ["OpenAIJudge", "TokenAccount"]

_SERVICE_FAILURES = frozenset({"timeout", "http_error", "connection_error"})
"""Failures that count against the circuit breaker (the endpoint is unwell)."""


@dataclasses.dataclass(slots=True)
class TokenAccount:
    """Tokens and money spent, cumulative (every call, including repairs and failures)."""

    price_prompt_per_1m: float
    price_completion_per_1m: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    """USD."""
    calls: int = 0

    def charge(self, response: ChatResponse) -> Usage:
        """Account one response; returns its usage and cost."""
        cost = (
            response.prompt_tokens * self.price_prompt_per_1m
            + response.completion_tokens * self.price_completion_per_1m
        ) / 1e6
        self.prompt_tokens += response.prompt_tokens
        self.completion_tokens += response.completion_tokens
        self.cost += cost
        self.calls += 1
        return Usage(response.prompt_tokens, response.completion_tokens, cost)


class OpenAIJudge:
    """Judges answers with a chat model; see the module docstring."""

    name = "openai"

    def __init__(
        self,
        client: ChatClient,
        *,
        breaker: CircuitBreaker,
        cache: JudgmentCache,
        account: TokenAccount,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.breaker = breaker
        self.cache = cache
        self.account = account
        self._clock = clock
        self._inflight: dict[str, asyncio.Future[Judgment]] = {}
        self.repairs: Counter[str] = Counter()
        """Repair attempts by result: ``ok`` or ``failed``."""

    async def judge(self, item: JudgeInput) -> Judgment:
        """Score one answer; raises `JudgeError` (reason ``circuit_open``, ``bad_json``, ...)."""
        key = cache_key(
            item.question,
            item.answer,
            item.contexts,
            prompt_version=PROMPT_VERSION,
            model=self.client.model,
        )
        cached = self.cache.get(key)
        if cached is not None:
            return dataclasses.replace(cached, cached=True, usage=Usage())
        pending = self._inflight.get(key)
        if pending is not None:
            judgment = await asyncio.shield(pending)
            return dataclasses.replace(judgment, cached=True, usage=Usage())
        future: asyncio.Future[Judgment] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            judgment = await self._call(item)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it, nobody else must
            raise
        else:
            future.set_result(judgment)
            self.cache.put(key, judgment)
            return judgment
        finally:
            del self._inflight[key]

    async def _call(self, item: JudgeInput) -> Judgment:
        if not self.breaker.allow(self._clock()):
            raise JudgeError("circuit_open", "the judge endpoint is failing; waiting to retry")
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_prompt(item.question, item.answer, item.contexts)},
        ]
        try:
            response = await self.client.complete(messages)
        except JudgeError as exc:
            if exc.reason in _SERVICE_FAILURES:
                self.breaker.failure(self._clock())
            else:
                self.breaker.success()  # it answered: the service is up
            raise
        except asyncio.CancelledError:
            self.breaker.release()
            raise
        except Exception:
            self.breaker.failure(self._clock())
            raise
        self.breaker.success()
        usage = self.account.charge(response)
        n = len(item.contexts)
        try:
            reply = parse_reply(response.content, n)
        except ReplyError as first:
            repaired = await self.client.complete(
                repair_messages(messages, response.content, str(first))
            )
            usage = usage + self.account.charge(repaired)
            try:
                reply = parse_reply(repaired.content, n)
            except ReplyError as second:
                self.repairs["failed"] += 1
                raise JudgeError("bad_json", str(second), usage=usage) from None
            self.repairs["ok"] += 1
        judgment = judgment_from_reply(reply, model=self.client.model)
        return dataclasses.replace(judgment, usage=usage)

    def circuit_state(self) -> CircuitState:
        """The circuit breaker's state now (on this judge's clock)."""
        return self.breaker.current(self._clock())

    async def close(self) -> None:
        """Close the HTTP session."""
        await self.client.close()
