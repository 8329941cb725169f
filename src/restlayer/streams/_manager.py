"""`StreamManager`: runs a controller's streams as tasks and stops them cleanly."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, TypeGuard

from restlayer._typing import Self
from restlayer.core.manager import Manager, Next
from restlayer.errors import ClosedError, ParamError, RestLayerError
from restlayer.streams._stream import Stream, checked_controller

if TYPE_CHECKING:
    from restlayer.core import Controller, Endpoint
    from restlayer.core._actions import Action

__all__ = ["StreamManager"]

log = logging.getLogger("restlayer")

#: The task running each stream a manager started: a stream runs in one manager at a time.
_RUNS: weakref.WeakKeyDictionary[Stream, asyncio.Task[None]] = weakref.WeakKeyDictionary()


class _Subscribing(Protocol):
    """What a `subscribe` / `unsubscribe` action carries (see `restlayer.core.manager`)."""

    @property
    def type(self) -> str: ...
    @property
    def endpoint(self) -> Endpoint[object]: ...
    @property
    def args(self) -> tuple[object, ...]: ...
    @property
    def key(self) -> str: ...


def _subscribing(action: Action) -> TypeGuard[_Subscribing]:
    return action.type in ("subscribe", "unsubscribe")


@dataclass(eq=False)
class _Held:
    """One subscription to a key a stream covers: paused (`polling` False) or passed on to polling."""

    endpoint: Endpoint[object]
    args: tuple[object, ...]
    key: str
    polling: bool


class StreamManager(Manager):
    """Keeps one connection per stream open, writing its messages into `controller`'s store.

    `async with StreamManager(ctrl, [stream, ...]) as streams:` starts them and
    stops them on exit; or call `start()` (inside a running loop) and
    `await aclose()` (`start()` again runs them anew). `add()` starts a stream at once when already
    running. A stopped manager keeps no hold on its streams' status: a stream kept and reused
    elsewhere keeps neither the manager nor its controller alive.

    Given to the controller as a manager (`Controller(managers=[StreamManager(streams=[...])])`),
    it also pauses the polling of `subscription()` / `live()` for keys a connected
    stream `covers`, and resumes it while that stream is down.
    """

    def __init__(self, controller: Controller | None = None, streams: Iterable[Stream] = ()) -> None:
        self.controller = None if controller is None else checked_controller("StreamManager", controller)
        self.streams: list[Stream] = []
        self._tasks: dict[Stream, asyncio.Task[None]] = {}
        #: Removes this manager's status listener from each stream (when it stops managing it).
        self._unlisten: dict[Stream, Callable[[], None]] = {}
        #: Tasks cancelled (by `aclose`, `remove` or `cleanup()`) that may still be closing their connection:
        #: every `aclose` waits for them all, also one called while another is under way.
        self._closing: set[asyncio.Task[None]] = set()
        self._running = False
        #: Stops the streams when the controller closes, for a manager the controller was not given.
        self._close_watch: asyncio.Task[None] | None = None
        self._held: list[_Held] = []
        self._passing = False
        for stream in _checked_streams(streams):
            self.add(stream)

    # -- as a manager: polling only while no connected stream covers the key --------------

    def init(self, controller: Controller) -> None:
        """Serve `controller` (the one given to the constructor, if any, must be the same)."""
        if self.controller is not None and self.controller is not controller:
            raise RestLayerError("this StreamManager already serves another controller")
        self.controller = controller

    def middleware(self, controller: Controller, action: Action, next: Next) -> None:
        """Hold back `subscribe` for keys a connected stream covers; pass everything else on."""
        if self._passing or not _subscribing(action) or self._passes(action):
            next(action)

    def _passes(self, action: _Subscribing) -> bool:
        """Track one (un)subscribe; whether polling gets it (no connected stream covers its key)."""
        if action.type == "subscribe":
            stream = self._covering(action.key)
            if stream is None and not self._covered(action.key):
                return True
            held = _Held(action.endpoint, action.args, action.key, polling=stream is None)
            self._held.append(held)
            return held.polling
        held_for_key = _next_held(self._held, action)
        if held_for_key is None:
            return True
        self._held.remove(held_for_key)
        return held_for_key.polling

    def polling(self, key: str) -> bool:
        """Whether subscriptions to `key` poll now (no connected stream covers it)."""
        return any(h.polling for h in self._held if h.key == key)

    def _covered(self, key: str) -> bool:
        return any(stream.covers(key) for stream in self.streams)

    def _covering(self, key: str) -> Stream | None:
        """A connected stream this manager runs that covers `key` (one run by another pushes into another store)."""
        for stream in self._tasks:
            if stream.connected and stream.covers(key):
                return stream
        return None

    async def _status(self, stream: Stream) -> None:
        """A stream connected or lost its connection: pause or resume the polling it covers.

        Nothing to do once the controller is closed: it polls no more (and refuses to subscribe).
        """
        controller = self.controller
        if controller is None or controller.closed:
            return
        for held in list(self._held):
            if not stream.covers(held.key):
                continue
            want_polling = self._covering(held.key) is None
            if want_polling == held.polling:
                continue
            held.polling = want_polling
            self._passing = True
            try:
                if want_polling:
                    await controller.subscribe(held.endpoint, *held.args)
                else:
                    await controller.unsubscribe(held.endpoint, *held.args)
            finally:
                self._passing = False

    # -- running the streams ----------------------------------------------------------------

    def add(self, stream: Stream) -> Stream:
        """Manage `stream` (started now when the manager runs); returns it."""
        if not isinstance(stream, Stream):
            raise RestLayerError(f"StreamManager.add needs a Stream, not {type(stream).__name__}")
        if stream in self.streams:
            raise RestLayerError(f"stream {stream.name} is already managed")
        if self._running:
            _check_free(stream)  # before it is taken in: refused, it is not managed here
        self.streams.append(stream)
        if self._running:
            self._listen(stream)
            self._launch(stream)
        return stream

    def start(self) -> None:
        """Connect every stream (needs a running event loop); ClosedError when the controller is closed.

        The controller closing stops them, whether or not the manager is among its managers.
        Called again, it starts anew the streams that ended (refused, e.g. once new credentials are set).
        """
        loop = _running_loop()
        controller = self.controller
        if controller is None:
            raise RestLayerError("StreamManager.start: no controller (pass one, or give the manager to a Controller)")
        if controller.closed:
            raise ClosedError("The controller is closed: StreamManager.start connects no stream")
        for stream in self.streams:
            if not self._runs(stream):
                self._check_not_closing(stream)
                _check_free(stream)
        self._running = True
        for stream in self.streams:
            self._listen(stream)
        if self not in controller.managers and self._close_watch is None:  # else its close calls `cleanup`
            self._close_watch = loop.create_task(_cleanup_on_close(self, controller), name="restlayer-stream-close")
            self._close_watch.add_done_callback(_report)
        for stream in self.streams:
            if not self._runs(stream):
                self._launch(stream)

    def _check_not_closing(self, stream: Stream) -> None:
        """RestLayerError when this manager's own task of `stream` is still closing its connection (an `aclose`
        under way): said so, rather than the stream taken for one another manager runs."""
        task = _RUNS.get(stream)
        if task is not None and task in self._closing and not task.done():
            raise RestLayerError(
                f"stream {stream.name} is still closing (this StreamManager's aclose() is under way): "
                "await that aclose() before start()"
            )

    def _runs(self, stream: Stream) -> bool:
        """Whether a task of this manager runs `stream` now (one that ended, refused or failed, does not)."""
        task = self._tasks.get(stream)
        return task is not None and not task.done()

    def _launch(self, stream: Stream) -> None:
        assert self.controller is not None
        _check_free(stream)
        task = asyncio.get_running_loop().create_task(
            stream.run(self.controller), name=f"restlayer-stream:{stream.name}"
        )
        task.add_done_callback(_report)
        task.add_done_callback(lambda ended: _ran(stream, ended))
        self._tasks[stream] = _RUNS[stream] = task
        stream.mark_launched()

    async def remove(self, stream: Stream) -> None:
        """Stop and forget one stream (it no longer tells this manager its status)."""
        task = self._tasks.pop(stream, None)
        if stream in self.streams:
            self.streams.remove(stream)
        try:
            if task is not None:
                self._stop(task)
                await asyncio.wait({task})  # its status listener resumes the polling the stream paused
        finally:
            self._forget(stream)

    def _stop(self, task: asyncio.Task[None]) -> None:
        """Cancel `task` (once: a second cancel would interrupt it while it closes its connection) and keep it
        among the closing ones until it has ended, for every `aclose` to wait for."""
        task.cancel()
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _listen(self, stream: Stream) -> None:
        """Be told `stream`'s status (to pause or resume the polling it covers) while this manager runs it."""
        if stream not in self._unlisten:
            self._unlisten[stream] = stream.add_listener(self._status)

    def _forget_all(self) -> None:
        """Stop listening to every stream: a stream kept after the manager stopped must not keep it (and its
        controller) alive."""
        for stream in list(self._unlisten):
            self._forget(stream)

    def _forget(self, stream: Stream) -> None:
        """Stop listening to `stream`: reused elsewhere, it must not keep this manager (and its controller) alive."""
        unlisten = self._unlisten.pop(stream, None)
        if unlisten is not None:
            unlisten()

    async def aclose(self) -> None:
        """Stop every stream and wait until each connection is closed; no task is left behind.

        Also after `Controller.close()` (which only cancels them): it waits for those streams too, and so
        does an `aclose` called while another runs (it returns only once everything is closed as well).
        """
        self._running = False
        tasks = list(self._tasks.values())
        self._tasks.clear()
        watch, self._close_watch = self._close_watch, None
        if watch is not None:
            tasks.append(watch)
        for task in tasks:
            self._stop(task)
        try:
            if self._closing:  # their status listener resumes the polling the streams paused
                await asyncio.wait(list(self._closing))
        finally:
            self._forget_all()

    def cleanup(self) -> None:
        """`Controller.close()`: cancel the streams' tasks (`await aclose()` also waits for them).

        Their status no longer matters (a closed controller polls nothing): the manager stops listening at once.
        """
        self._running = False
        self._forget_all()
        for task in self._tasks.values():
            self._stop(task)
        self._tasks.clear()

    async def __aenter__(self) -> Self:  # a subclass of the app's own stays itself
        self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _checked_streams(streams: Iterable[Stream]) -> Iterable[Stream]:
    """`streams=` when it can be iterated for the streams (each is checked by `add`); ParamError otherwise.

    One stream given alone (not in a list), or a number, would fail with a bare TypeError.
    """
    if isinstance(streams, (Stream, str, bytes)) or not isinstance(streams, Iterable):
        raise ParamError(f"StreamManager: streams= must be a list of streams, not {streams!r}")
    return streams


def _running_loop() -> asyncio.AbstractEventLoop:
    """The running event loop; RestLayerError outside one (the streams' tasks need it)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise RestLayerError(
            "StreamManager.start needs a running event loop: call it in async code (or use `async with`)"
        ) from None


def _check_free(stream: Stream) -> None:
    """RestLayerError when another manager, or a direct `await stream.run(...)`, runs `stream` (its
    connection and state are one): refused now, not by a task that would fail only in the log."""
    running = _RUNS.get(stream)
    if running is not None and not running.done():
        raise RestLayerError(
            f"stream {stream.name} runs in another StreamManager: remove it there (or close that one) first, "
            "or make one stream object per manager"
        )
    if stream.running:
        raise RestLayerError(
            f"stream {stream.name} is already running (an `await stream.run(...)` of its own): "
            "stop that run first, or make one stream object per manager"
        )


def _ran(stream: Stream, task: asyncio.Task[None]) -> None:
    """`task` has ended: `stream` runs nowhere (the ended task keeps nothing alive).

    Also when cancelled before `run` began (a manager closed at once): the stream is over all the same.
    """
    if _RUNS.get(stream) is task:
        del _RUNS[stream]
        if not stream.running:
            stream.mark_ended()


async def _cleanup_on_close(manager: StreamManager, controller: Controller) -> None:
    """Wait for `controller` to close, then stop `manager`'s streams (as a close does for its own managers)."""
    closing = asyncio.Event()
    forget = controller.on_close(closing)
    try:
        await closing.wait()
    finally:
        forget()
    manager.cleanup()


def _next_held(held: list[_Held], action: _Subscribing) -> _Held | None:
    """The subscription an `unsubscribe` ends (same key and frequency): a paused one first."""
    frequency = action.endpoint.poll_frequency
    candidates = [h for h in held if h.key == action.key and h.endpoint.poll_frequency == frequency]
    if not candidates:
        return None
    return next((h for h in candidates if not h.polling), candidates[0])


def _report(task: asyncio.Task[None]) -> None:
    """Log the error a stream's task ended with (a server refusing it) as soon as it ends.

    At once, not when the manager closes: the stream is over, and a manager that is never
    closed would leave the error unretrieved.
    """
    if not task.cancelled() and task.exception() is not None:
        log.error("stream task %s failed", task.get_name(), exc_info=task.exception())
