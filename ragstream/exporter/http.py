"""`/metrics`, `/healthz` and `/readyz`, served by aiohttp on the agent's own event loop.

A scrape runs the registry's collectors in the loop, between two consumer batches: the
collectors read the windows without copying events, so a scrape costs O(series), and the
consumer never waits on a slow client (aiohttp writes the response asynchronously).
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry

__all__ = ["AddressInUseError", "Health", "MetricsServer"]


class AddressInUseError(OSError):
    """The HTTP address is taken: another process (often another agent) listens on it."""


@dataclass(frozen=True, slots=True)
class Health:
    """One health answer: ok or not, and why (shown in the response body)."""

    ok: bool
    detail: str = ""


def _always_ok() -> Health:
    return Health(True, "ok")


class MetricsServer:
    """An aiohttp server for one registry and two health probes.

    `alive` answers `/healthz` (the process works); `ready` answers `/readyz` (assigned
    partitions and caught up, or whatever the agent's mode means by ready). `fast_text`,
    if given, is `(render, rest)`: for the text format the body is `render()` followed by
    the `rest` registry, which must hold everything else of `registry`; OpenMetrics always
    encodes `registry` whole.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        host: str = "0.0.0.0",
        port: int = 9464,
        alive: Callable[[], Health] = _always_ok,
        ready: Callable[[], Health] = _always_ok,
        fast_text: tuple[Callable[[], bytes], CollectorRegistry] | None = None,
    ) -> None:
        self.registry = registry
        self._fast_text = fast_text
        self.host = host
        self.port = port
        self._alive = alive
        self._ready = ready
        self._runner: web.AppRunner | None = None
        self._site: web.SockSite | None = None

    def app(self) -> web.Application:
        """The aiohttp application (also handy for aiohttp's test client)."""
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._probe(lambda: self._alive()))
        app.router.add_get("/readyz", self._probe(lambda: self._ready()))
        app.router.add_get("/", self._index)
        return app

    async def start(self) -> None:
        """Bind and serve; `port` 0 picks a free port (read it back from `.port`)."""
        try:
            sock = socket.create_server((self.host, self.port), reuse_port=False)
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
            raise AddressInUseError(
                errno.EADDRINUSE, f"{self.host}:{self.port} is already in use by another process"
            ) from None
        self.port = int(sock.getsockname()[1])
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        self._site = web.SockSite(self._runner, sock)
        await self._site.start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> MetricsServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    async def _metrics(self, request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        if self._fast_text is not None and content_type.startswith("text/plain"):
            # the bulk of the series, written directly; the rest by prometheus_client
            render, rest = self._fast_text
            body = render() + encoder(rest)
        else:
            body = encoder(self.registry)
        response = web.Response(body=body)
        response.headers["Content-Type"] = content_type
        return response

    @staticmethod
    def _probe(check: Callable[[], Health]) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            health = check()
            status = 200 if health.ok else 503
            return web.Response(status=status, text=(health.detail or "ok") + "\n")

        return handler

    async def _index(self, request: web.Request) -> web.Response:
        return web.Response(
            text="ragstream: /metrics (Prometheus), /healthz (alive), /readyz (ready)\n"
        )
