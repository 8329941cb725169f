"""A blocking `Controller` for scripts and notebooks that have no event loop of their own.

It owns one event loop running in a background thread; every method hands its
work to that loop and waits for the answer, so the async `Controller` (and
the shared httpx client) only ever run on one loop. `close()` (or leaving a
`with` block, or interpreter exit) cancels what is still running, closes the
HTTP client and joins the thread. A call still waiting when `close()` runs, and
every call after it, raises `ClosedError` in its own thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, overload

from restlayer._typing import A, E, P, Self
from restlayer.core import DLE, Endpoint, Response, State
from restlayer.core import Controller as AsyncController
from restlayer.core._actions import Action
from restlayer.errors import ClosedError, RestLayerError
from restlayer.pagination import Page
from restlayer.pagination import paginate as _paginate
from restlayer.rest import RestEndpoint
from restlayer.schema import Schema, SchemaLike

if TYPE_CHECKING:
    from collections.abc import Sequence

    from typing_extensions import TypedDict, Unpack

    from restlayer.core import GCPolicy, Manager, SharedManager, SharedStore
    from restlayer.core.controller import Clock, Refetch

__all__ = ["Controller", "paginate"]

T = TypeVar("T")
_log = logging.getLogger("restlayer")
_CANCEL_WAIT_S = 10.0


class _Cancellable(Protocol):
    """A call in progress that `stop()` can cancel (a `concurrent.futures.Future` of any result)."""

    def cancel(self) -> bool: ...


class _LoopThread:
    """An event loop running forever in a daemon thread, until `stop()`.

    Every call in progress is tracked, so `stop()` can release each waiting
    thread with `ClosedError` instead of leaving it blocked.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.closed = False
        #: What ended the loop thread when a callback raised SystemExit (or KeyboardInterrupt) on it.
        self.ended_by: BaseException | None = None
        #: Whether this is a copy inherited by a forked child, where the loop thread does not exist.
        self.forked = False
        self._lock = threading.Lock()
        self._pending: set[_Cancellable] = set()
        self._closing: set[asyncio.Future[object]] = set()
        self.thread = threading.Thread(target=self._run, name="restlayer-sync-loop", daemon=True)
        self.thread.start()
        _LIVE.add(self)

    def orphan(self) -> None:
        """Refuse every call from now on: this is a forked child's copy, whose loop thread did not come along.

        Only the thread that called `fork()` exists in the child, so work handed to the
        loop would wait for good. The lock is replaced too: another thread may have held
        it at the fork, and the child's copy would then never be released.
        """
        self._lock = threading.Lock()
        self.closed = self.forked = True
        self._pending = set()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        except (SystemExit, KeyboardInterrupt) as exc:  # asyncio lets only these out of a callback
            self._abandon(exc)

    def _abandon(self, exc: BaseException) -> None:
        """Close after a callback raised `exc` on the loop thread, which ended `run_forever`.

        Left so, the thread would be gone with every call waiting on it blocked for
        good (the fetch that called the callback first). The loop runs once more to
        cancel what is in progress (those calls get `ClosedError`) and to close the
        HTTP client; later calls are refused. A `stop()` already under way finishes
        its own shutdown on the loop run again here.
        """
        _log.error("restlayer.sync: a callback raised %r on the loop thread; the controller is closed", exc)
        with self._lock:
            stopping, self.closed, self.ended_by = self.closed, True, exc
        if stopping:
            self.loop.run_forever()  # until stop() has its shutdown and stops the loop again
            return
        self.loop.run_until_complete(_shutdown(None))
        with self._lock:
            left = list(self._pending)
        for future in left:
            future.cancel()
        self.loop.close()

    def closed_error(self, message: str) -> ClosedError:
        """`ClosedError(message)`, saying why when a callback ended the loop thread or this is a forked copy."""
        if self.ended_by is not None:
            message += f" (a callback raised {self.ended_by!r} on its loop thread)"
        if self.forked:
            message += (
                " (it was made in another process, before os.fork(), and its loop thread stayed there: "
                "make a Controller in each process)"
            )
        return ClosedError(message)

    def run(self, coro: Coroutine[object, None, T]) -> T:
        """Run `coro` on the loop and block until it finishes (its exception re-raised here)."""
        if self.on_loop_thread():
            coro.close()
            raise RestLayerError("restlayer.sync.Controller cannot be called from its own loop thread")
        with self._lock:
            if self.closed:
                coro.close()
                raise self.closed_error("restlayer.sync.Controller is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
            self._pending.add(future)
        try:
            return self._wait(future)
        finally:
            with self._lock:
                self._pending.discard(future)

    def _wait(self, future: concurrent.futures.Future[T]) -> T:
        """The outcome of `future`; when the waiting thread is interrupted, the work is cancelled too.

        A KeyboardInterrupt (Ctrl-C) or a signal handler's exception ends only this
        thread's wait; left running, the request would still be sent and stored behind
        the caller's back. Cancelling the task ends it as cancelling an awaiting task
        does in async code (a shared GET goes on for its other callers).
        """
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            if self.closed:
                raise self.closed_error("restlayer.sync.Controller was closed while this call was waiting") from None
            raise
        except BaseException:
            future.cancel()  # a no-op when the exception is the call's own outcome (the future is done)
            raise

    def spawn(self, coro: Coroutine[object, None, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop and return its future at once.

        Work that closing cut short ends with `ClosedError`, as a blocking call waiting
        then does; cancelling the returned future cancels the work (and stays a cancellation).
        """
        with self._lock:
            if self.closed:
                coro.close()
                raise self.closed_error("restlayer.sync.Controller is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
            self._pending.add(future)
        future.add_done_callback(self._settled)
        outcome: concurrent.futures.Future[T] = concurrent.futures.Future()
        outcome.add_done_callback(lambda done: future.cancel() if done.cancelled() else None)
        future.add_done_callback(lambda done: self._hand_over(done, outcome))
        return outcome

    def _hand_over(self, done: concurrent.futures.Future[T], outcome: concurrent.futures.Future[T]) -> None:
        """Give `outcome` the result of `done`, a cancellation by closing as `ClosedError`."""
        if not outcome.set_running_or_notify_cancel():
            return  # the caller cancelled it (which cancelled `done`)
        if done.cancelled() and self.closed:
            outcome.set_exception(self.closed_error("restlayer.sync.Controller was closed while this work ran"))
        elif done.cancelled():  # the work cancelled itself
            outcome.set_exception(concurrent.futures.CancelledError())
        elif (error := done.exception()) is not None:
            outcome.set_exception(error)
        else:
            outcome.set_result(done.result())

    def _settled(self, future: _Cancellable) -> None:
        with self._lock:
            self._pending.discard(future)

    def call(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        """Call a plain function on the loop thread and return its result."""

        async def invoke() -> T:
            return fn(*args, **kwargs)

        return self.run(invoke())

    def finish(self, closer: Callable[[], Awaitable[object]]) -> None:
        """Run `closer()` (an iterator's `aclose`) on the loop, unless the loop is closed (which ended it).

        From another thread, wait for it. On the loop thread itself, where the garbage
        collector may finalize a forgotten `live()` or `paginate` iterator, waiting
        would be refused (and the stream left open, still polling): it runs as a task.
        """
        if self.closed:
            return
        if self.on_loop_thread():
            task = asyncio.ensure_future(closer(), loop=self.loop)
            self._closing.add(task)  # the loop keeps only a weak reference to its tasks
            task.add_done_callback(self._closing.discard)
            return
        with suppress(ClosedError):  # closed meanwhile: the loop already ended it

            async def invoke() -> None:
                await closer()

            self.run(invoke())

    def on_loop_thread(self) -> bool:
        """Whether the calling thread is the loop's own (a callback, or a garbage collection it ran)."""
        return threading.current_thread() is self.thread

    def refuse_close_here(self) -> None:
        """Raise `RestLayerError` on the loop thread: `stop()` joins that thread, so it cannot run there."""
        if self.on_loop_thread():
            raise RestLayerError("restlayer.sync.Controller cannot be closed from its own loop thread (a callback)")

    def release(self, before: Callable[[], Awaitable[object]] | None = None) -> None:
        """`stop(before)` from any thread: on the loop thread, handed to a thread of its own.

        This is what a garbage-collected, never-closed controller runs. The cyclic
        collector runs in whichever thread allocates, often the loop thread itself;
        refusing there would leave the loop (and its polling) running for good.
        """
        if self.on_loop_thread():
            threading.Thread(target=self.stop, args=(before,), name="restlayer-sync-close", daemon=True).start()
        else:
            self.stop(before)

    def stop(self, before: Callable[[], Awaitable[object]] | None = None) -> None:
        """Await `before` on the loop, cancel every task, close the shared HTTP client, stop and join.

        New calls are refused from the start; calls still waiting afterwards get `ClosedError`.
        """
        self.refuse_close_here()
        with self._lock:
            if self.closed:
                return
            self.closed = True
        try:
            if self.thread.is_alive():
                self._shut_down(before)
        finally:
            with self._lock:
                left = list(self._pending)
            for future in left:
                future.cancel()
            if not self.thread.is_alive():  # else a second Ctrl-C cut the join short: the thread ends on its own
                self.loop.close()

    def _shut_down(self, before: Callable[[], Awaitable[object]] | None) -> None:
        """Run `_shutdown(before)` on the loop, then stop the loop and join its thread, whatever happens.

        The loop stops when the shutdown is over, not when this thread's wait ends:
        an error of `before` (a manager's `cleanup`) comes out here only once the rest
        is shut down too, and an interrupted wait (Ctrl-C) still ends the thread.
        """
        shutdown = asyncio.run_coroutine_threadsafe(_shutdown(before), self.loop)
        shutdown.add_done_callback(lambda _: self.loop.call_soon_threadsafe(self.loop.stop))
        try:
            shutdown.result()
        finally:
            self.thread.join()


#: Every loop thread not yet collected, so a forked child can refuse its copies (see `_LoopThread.orphan`).
_LIVE: weakref.WeakSet[_LoopThread] = weakref.WeakSet()


def _orphan_all() -> None:
    """In a forked child: every controller inherited from the parent refuses calls instead of hanging."""
    for loop_thread in list(_LIVE):
        loop_thread.orphan()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_orphan_all)


async def _shutdown(before: Callable[[], Awaitable[object]] | None) -> None:
    """Await `before`, then cancel what still runs and close the client, also when `before` raised."""
    try:
        if before is not None:
            await before()
    finally:
        await _cancel_and_close()


async def _cancel_and_close() -> None:
    """Cancel every other task of the loop, then close its shared HTTP client.

    A task that ignores its cancellation is left after 10 s.
    """
    from restlayer.rest import aclose

    # One loop turn first: a task created but not yet started, cancelled now, would never run its
    # coroutine (anyio's happy-eyeballs connect attempts: "coroutine ... was never awaited").
    await asyncio.sleep(0)
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current]
    for task in tasks:
        task.cancel()
    if tasks:
        _, stuck = await asyncio.wait(tasks, timeout=_CANCEL_WAIT_S)
        if stuck:
            _log.warning("restlayer.sync: %d tasks ignored their cancellation at close", len(stuck))
    await aclose()


if TYPE_CHECKING:

    class _ControllerOptions(TypedDict, total=False):
        """The keyword arguments of `restlayer.Controller`, which the blocking one passes on."""

        managers: Sequence[Manager] | None
        clock: Clock | None
        gc_policy: GCPolicy | None
        max_concurrent_requests: int | None
        refetch_overtaken: Refetch | None
        shared: SharedStore | SharedManager | None


class Controller:
    """The blocking counterpart of `restlayer.Controller`: the same methods, without `await`.

    Watch callbacks run on the background loop's thread.
    """

    def __init__(self, **options: Unpack[_ControllerOptions]) -> None:
        self._thread = _LoopThread()
        try:
            self._async: AsyncController = self._thread.call(AsyncController, **options)
        except BaseException:
            self._thread.stop()
            raise
        # Closing goes through the async controller's `async with` exit: shared-store writes are handed over first.
        self._finalizer = weakref.finalize(self, self._thread.release, partial(self._async.__aexit__, None, None, None))

    # ----- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Hand queued shared-store writes over, stop polling and in-flight work, close the clients, join the thread.

        Refused in a callback (on the loop thread) before the one-shot finalizer is
        spent, so a later `close()` from another thread still closes the controller.
        """
        self._thread.refuse_close_here()
        self._finalizer()

    def __enter__(self) -> Self:  # a subclass of the app's own stays itself
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def controller(self) -> AsyncController:
        """The async Controller underneath (use it only from the loop thread, e.g. in callbacks)."""
        return self._async

    def _run(self, make: Callable[[], Awaitable[T]]) -> T:
        async def invoke() -> T:
            return await make()

        return self._thread.run(invoke())

    def call(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        """Run `fn(*args, **kwargs)` on the loop thread (where the async Controller lives) and return its result."""
        return self._thread.call(fn, *args, **kwargs)

    def submit(self, make: Callable[[AsyncController], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Start `make(async_controller)` on the loop without waiting; its future holds the outcome."""

        async def invoke() -> T:
            return await make(self._async)

        return self._thread.spawn(invoke())

    # ----- I/O --------------------------------------------------------------------------
    def fetch(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T:
        """Send the request, store the result and return it (denormalized when there is a schema)."""
        return self._run(lambda: self._async.fetch(endpoint, *args, **kwargs))

    def fetch_if_stale(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T:
        """The stored data when fresh, else `fetch`."""
        return self._run(lambda: self._async.fetch_if_stale(endpoint, *args, **kwargs))

    @overload
    def suspense(self, endpoint: Endpoint[T], skip: None, /) -> T | None: ...
    @overload
    def suspense(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T: ...
    @overload
    def suspense(self, endpoint: Endpoint[T, [P]], params: P | None, /) -> T | None: ...
    def suspense(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> T | None:
        """Valid data for the call, fetching first when it is missing or invalid (None: skip, the result is None)."""
        return cast("T | None", self._run(lambda: self._async.suspense(endpoint, *args, **kwargs)))

    @overload
    def subscribe(self, endpoint: Endpoint[object], skip: None, /) -> None: ...
    @overload
    def subscribe(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> None: ...
    @overload
    def subscribe(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> None: ...
    def subscribe(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Start polling the endpoint at its `poll_frequency`."""
        self._run(lambda: self._async.subscribe(endpoint, *args, **kwargs))

    @overload
    def unsubscribe(self, endpoint: Endpoint[object], skip: None, /) -> None: ...
    @overload
    def unsubscribe(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> None: ...
    @overload
    def unsubscribe(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> None: ...
    def unsubscribe(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Leave a subscription; polling stops when nobody is subscribed.

        After `close()` nothing polls any more, so there is nothing to leave: a no-op,
        as for the async Controller (a `with subscription(...)` or a UI component may end later).
        """
        if self._thread.closed:
            return
        with suppress(ClosedError):  # closed meanwhile: polling stopped with it
            self._run(lambda: self._async.unsubscribe(endpoint, *args, **kwargs))

    @overload
    def subscription(self, endpoint: Endpoint[object], skip: None, /) -> AbstractContextManager[None]: ...
    @overload
    def subscription(
        self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs
    ) -> AbstractContextManager[None]: ...
    @overload
    def subscription(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> AbstractContextManager[None]: ...
    @contextmanager
    def subscription(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> Iterator[None]:
        """Poll while the `with` block runs."""
        self.subscribe(endpoint, *args, **kwargs)
        try:
            yield
        finally:
            self.unsubscribe(endpoint, *args, **kwargs)

    @overload
    def live(self, endpoint: Endpoint[T], skip: None, /) -> Generator[T | None, None, None]: ...
    @overload
    def live(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> Generator[T, None, None]: ...
    @overload
    def live(self, endpoint: Endpoint[T, [P]], params: P | None, /) -> Generator[T | None, None, None]: ...
    def live(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> Generator[T | None, None, None]:
        """Iterate the data: the first value, then each change (polling while iterating)."""
        stream = self._thread.call(lambda: self._async.live(endpoint, *args, **kwargs).__aiter__())
        try:
            while True:
                try:
                    yield self._run(stream.__anext__)
                except StopAsyncIteration:
                    return
        finally:
            closer = getattr(stream, "aclose", None)
            if closer is not None:
                self._thread.finish(closer)

    # ----- reads and writes (run on the loop thread, so they never race the loop) ---------------
    @overload
    def get_response(self, endpoint: Endpoint[T], skip: None, /) -> Response[T]: ...
    @overload
    def get_response(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> Response[T]: ...
    @overload
    def get_response(self, endpoint: Endpoint[T, [P]], params: P | None, /) -> Response[T]: ...
    def get_response(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> Response[T]:
        """`Response(data, expiry_status, expires_at)` from the store; never fetches."""
        return self._thread.call(self._async.get_response, endpoint, *args, **kwargs)

    @overload
    def get(self, schema: type[E], *args: object, **kwargs: object) -> E | None: ...
    @overload
    def get(self, schema: Schema[T], *args: object, **kwargs: object) -> T | None: ...
    @overload
    def get(self, schema: list[type[E]], *args: object, **kwargs: object) -> list[E] | None: ...
    @overload
    def get(self, schema: list[Schema[T]], *args: object, **kwargs: object) -> list[T] | None: ...
    @overload
    def get(self, schema: Mapping[str, object], *args: object, **kwargs: object) -> dict[str, Any] | None: ...
    @overload
    def get(self, schema: SchemaLike, *args: object, **kwargs: object) -> Any: ...
    def get(self, schema: SchemaLike, *args: object, **kwargs: object) -> object:
        """A denormalized read of any schema from the store."""
        return self._thread.call(self._async.get, schema, *args, **kwargs)

    @overload
    def get_error(self, endpoint: Endpoint[object], skip: None, /) -> BaseException | None: ...
    @overload
    def get_error(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> BaseException | None: ...
    @overload
    def get_error(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> BaseException | None: ...
    def get_error(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> BaseException | None:
        """The stored error for the call, if it should be shown."""
        return self._thread.call(self._async.get_error, endpoint, *args, **kwargs)

    @overload
    def last_error(self, endpoint: Endpoint[object], skip: None, /) -> BaseException | None: ...
    @overload
    def last_error(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> BaseException | None: ...
    @overload
    def last_error(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> BaseException | None: ...
    def last_error(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> BaseException | None:
        """The error of the call's latest fetch, even a soft one `get_error` hides."""
        return self._thread.call(self._async.last_error, endpoint, *args, **kwargs)

    @overload
    def dle(self, endpoint: Endpoint[T], skip: None, /) -> DLE[T]: ...
    @overload
    def dle(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> DLE[T]: ...
    @overload
    def dle(self, endpoint: Endpoint[T, [P]], params: P | None, /) -> DLE[T]: ...
    def dle(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> DLE[T]:
        """`DLE(data, loading, error)`; starts a fetch when needed but never waits."""
        return self._thread.call(self._async.dle, endpoint, *args, **kwargs)

    @overload
    def cache(self, endpoint: Endpoint[T], skip: None, /) -> T | None: ...
    @overload
    def cache(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T | None: ...
    @overload
    def cache(self, endpoint: Endpoint[T, [P]], params: P | None, /) -> T | None: ...
    def cache(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> T | None:
        """Stored data or None; never fetches."""
        return self._thread.call(self._async.cache, endpoint, *args, **kwargs)

    def set_response(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Store `args[-1]` as the response of `endpoint(*args[:-1], **kwargs)`."""
        self._thread.call(self._async.set_response, endpoint, *args, **kwargs)

    def set_error(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Store `args[-1]` as the error of `endpoint(*args[:-1], **kwargs)`."""
        self._thread.call(self._async.set_error, endpoint, *args, **kwargs)

    def set(self, schema: SchemaLike, *args: object, **kwargs: object) -> None:
        """Write `args[-1]` into the store through `schema` (keywords join the first argument)."""
        self._thread.call(self._async.set, schema, *args, **kwargs)

    def dispatch(self, action: Action) -> None:
        """Send an action through the managers to the store (on the loop thread)."""
        self._thread.call(self._async.dispatch, action)

    @overload
    def invalidate(self, endpoint: Endpoint[object], skip: None, /) -> None: ...
    @overload
    def invalidate(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> None: ...
    @overload
    def invalidate(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> None: ...
    def invalidate(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Drop the stored result of one call: readers refetch."""
        self._thread.call(self._async.invalidate, endpoint, *args, **kwargs)

    def invalidate_all(self, test_key: Callable[[str], bool]) -> None:
        """Drop every stored result whose key passes `test_key`."""
        self._thread.call(self._async.invalidate_all, test_key)

    def expire_all(self, test_key: Callable[[str], bool]) -> None:
        """Mark matching results stale: served at once, refetched in the background."""
        self._thread.call(self._async.expire_all, test_key)

    def reset_entire_store(self) -> None:
        """Empty the store; in-flight fetches are dropped."""
        self._thread.call(self._async.reset_entire_store)

    def get_state(self) -> State:
        """An immutable snapshot of the store."""
        return self._thread.call(self._async.get_state)

    def get_committed_state(self) -> State:
        """The store without pending optimistic updates (what responses actually wrote)."""
        return self._thread.call(self._async.get_committed_state)

    def watch(
        self, endpoint: Endpoint[T], *args: object, callback: Callable[[T | None], object], **kwargs: object
    ) -> Callable[[], None]:
        """Call `callback(data)` (on the loop thread) whenever the data changes; returns an unsubscriber.

        The unsubscriber may be called from anywhere, the callback included (to watch for one change).
        """
        return self._stoppable(lambda: self._async.watch(endpoint, *args, callback=callback, **kwargs))

    def watch_response(
        self, endpoint: Endpoint[T], *args: object, callback: Callable[[T | None], object], **kwargs: object
    ) -> Callable[[], None]:
        """`watch`, also called when only the call's metadata changes (an error, an expiry, an invalidation)."""
        return self._stoppable(lambda: self._async.watch_response(endpoint, *args, callback=callback, **kwargs))

    def _stoppable(self, start: Callable[[], Callable[[], None]]) -> Callable[[], None]:
        """Run `start` on the loop thread; the stop it returns, callable from any thread."""
        stop = self._thread.call(start)

        def unsubscribe() -> None:
            if threading.current_thread() is self._thread.thread:
                stop()  # from a callback, on the loop thread: where `stop` runs anyway
            elif not self._thread.closed:
                with suppress(ClosedError):  # closed meanwhile: nothing left to watch
                    self._thread.call(stop)

        return unsubscribe


def paginate(
    ctrl: Controller,
    endpoint: RestEndpoint[T],
    params: Mapping[str, object] | None = None,
    *,
    next_page: Callable[[Page[T]], Mapping[str, object] | None],
    max_pages: int = 1000,
) -> Generator[T, None, None]:
    """The blocking `restlayer.pagination.paginate`: `for page in paginate(ctrl, ep, params, next_page=...)`."""
    pages = _paginate(ctrl.controller, endpoint, params, next_page=next_page, max_pages=max_pages)
    try:
        while True:
            try:
                yield ctrl._run(pages.__anext__)
            except StopAsyncIteration:
                return
    finally:
        ctrl._thread.finish(pages.aclose)
