"""`/metrics`, `/healthz` and `/readyz`, served by aiohttp on the agent's own event loop.

A scrape collects the families in the loop, between two consumer batches: the collectors
read the windows without copying events, so a scrape costs O(series), and the consumer
never waits on a slow client (aiohttp writes the response asynchronously). The families
are written in the format the scraper's Accept header asks for (`ragstream.exporter.text`).
"""

from __future__ import annotations

import errno
import gc
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from aiohttp import web

from ragstream.exporter.family import Family
from ragstream.exporter.text import TextRenderer, negotiate

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
    """An aiohttp server for the families of a scrape and two health probes.

    `families` is called once per scrape of `/metrics`; `alive` answers `/healthz` (the
    process works); `ready` answers `/readyz` (assigned partitions and caught up, or
    whatever the agent's mode means by ready).
    """

    def __init__(
        self,
        families: Callable[[], Iterable[Family]],
        *,
        host: str,
        port: int,
        alive: Callable[[], Health] = _always_ok,
        ready: Callable[[], Health] = _always_ok,
    ) -> None:
        self._families = families
        self._renderer = TextRenderer()
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

    def scrape(self, accept: str) -> tuple[bytes, str]:
        """The body and Content-Type of a scrape of `/metrics` with this Accept header (the
        cyclic GC paused meanwhile: a scrape allocates tens of thousands of small tuples and
        strings without cycles, and collections triggered by them cost more than it)."""
        fmt = negotiate(accept)
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._renderer.render(self._families(), fmt), fmt.content_type
        finally:
            if paused:
                gc.enable()

    async def _metrics(self, request: web.Request) -> web.Response:
        body, content_type = self.scrape(request.headers.get("Accept", ""))
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
