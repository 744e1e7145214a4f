"""A TCP proxy on 127.0.0.1 that can cut the network between clients and a server.

It runs its own event loop in a thread, so that it forwards while the caller blocks (a
broker's start waits on connections through it). `cut()` closes every connection and stops
listening, so that new ones are refused: to the clients the server is gone, while it runs
on (a Kafka broker then expires the sessions of the consumers it no longer hears from).
`restore()` listens again on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from types import TracebackType
from typing import Self

__all__ = ["TcpProxy"]

_CHUNK = 65536


class TcpProxy:
    """``with TcpProxy(target_port, port) as proxy: ... proxy.cut() ... proxy.restore()``"""

    def __init__(self, target_port: int, port: int) -> None:
        self.target_port = target_port
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.connections = 0
        """Connections accepted so far."""

    def start(self) -> None:
        self._thread.start()
        self._call(self._listen())

    def stop(self) -> None:
        if self._thread.is_alive():
            self._call(self._close())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        self._loop.close()

    def cut(self) -> None:
        """Close every connection and refuse new ones."""
        self._call(self._close())

    def restore(self) -> None:
        """Accept connections again (on the same port)."""
        self._call(self._listen())

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _call(self, coro: object) -> None:
        assert asyncio.iscoroutine(coro)
        asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(
                self._accept, "127.0.0.1", self.port, reuse_address=True
            )

    async def _close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(
            self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
        )
        for w in (writer, up_writer):
            self._writers.discard(w)
            w.transport.abort()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, ConnectionError):
            while data := await reader.read(_CHUNK):
                writer.write(data)
                await writer.drain()
        writer.transport.abort()
