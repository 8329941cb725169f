"""`StreamManager`: runs a controller's streams as tasks and stops them cleanly."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING

from restlayer.errors import RestLayerError
from restlayer.streams._stream import Stream

if TYPE_CHECKING:
    from restlayer.core import Controller

__all__ = ["StreamManager"]

log = logging.getLogger("restlayer")


class StreamManager:
    """Keeps one connection per stream open, writing its messages into `controller`'s store.

    `async with StreamManager(ctrl, [stream, ...]) as streams:` starts them and
    stops them on exit; or call `start()` (inside a running loop) and
    `await aclose()`. `add()` starts a stream at once when already running.
    """

    def __init__(self, controller: Controller, streams: Iterable[Stream] = ()) -> None:
        self.controller = controller
        self.streams: list[Stream] = []
        self._tasks: dict[Stream, asyncio.Task[None]] = {}
        self._running = False
        for stream in streams:
            self.add(stream)

    def add(self, stream: Stream) -> Stream:
        """Manage `stream` (started now when the manager runs); returns it."""
        if not isinstance(stream, Stream):
            raise RestLayerError(f"StreamManager.add needs a Stream, not {type(stream).__name__}")
        if stream in self.streams:
            raise RestLayerError(f"stream {stream.name} is already managed")
        self.streams.append(stream)
        if self._running:
            self._launch(stream)
        return stream

    def start(self) -> None:
        """Connect every stream (needs a running event loop)."""
        asyncio.get_running_loop()
        self._running = True
        for stream in self.streams:
            if stream not in self._tasks:
                self._launch(stream)

    def _launch(self, stream: Stream) -> None:
        self._tasks[stream] = asyncio.get_running_loop().create_task(
            stream.run(self.controller), name=f"restlayer-stream:{stream.name}"
        )

    async def remove(self, stream: Stream) -> None:
        """Stop and forget one stream."""
        task = self._tasks.pop(stream, None)
        if stream in self.streams:
            self.streams.remove(stream)
        if task is not None:
            await _stop([task])

    async def aclose(self) -> None:
        """Stop every stream and wait until each connection is closed; no task is left behind."""
        self._running = False
        tasks = list(self._tasks.values())
        self._tasks.clear()
        await _stop(tasks)

    async def __aenter__(self) -> StreamManager:
        self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def _stop(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel each task once and wait until all have finished closing their connections.

    Cancelling only once matters: a second cancel would interrupt a stream while it
    closes its connection, leaving the socket (or a library task) behind.
    """
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            log.error("stream task %s failed", task.get_name(), exc_info=task.exception())
