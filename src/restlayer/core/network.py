"""`NetworkManager`: runs fetches, sharing one request per key among concurrent readers.

Each caller awaits its own future, so cancelling one caller ends only its
wait; the shared request is cancelled when the last awaiting caller is gone
(unless a background reader started it), and a caller arriving after that
starts a new request instead of inheriting the cancellation. A mutation
(`side_effect`) is never cancelled with its caller: the server may have applied
it already, so its reply is stored (or its error rolls back its optimistic
update) as if the caller still waited; only `close()` cancels it. A reset drops
every in-flight request: its callers get `ResetError` and its late reply is
never stored (`close()` still cancels it). Closing the controller gives every
waiting caller `ClosedError`.

At most `max_concurrent_requests` requests are on the wire at once; the others
wait in start order for a free slot, so a burst never exhausts the HTTP
client's connection pool.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from restlayer.core import _actions as act
from restlayer.core.endpoint import keys_pages_as_one, reads_once
from restlayer.core.manager import Manager, Next, check_unattached
from restlayer.errors import ClosedError, ParamError, ResetError, RestLayerError

if TYPE_CHECKING:
    from restlayer.core.controller import Controller

_log = logging.getLogger("restlayer")
#: httpx's default connection-pool size: more requests at once would only queue inside the pool
#: (and fail with `PoolTimeout` after its timeout).
DEFAULT_MAX_CONCURRENT_REQUESTS = 100


def _as_restlayer_error(exc: Exception, action: act.Fetch) -> RestLayerError:
    """`exc` when it is a RestLayerError; else one naming the endpoint, with `exc` as its cause.

    Anything else came from code the endpoint runs on the caller's behalf (a hook such
    as `process` or `get_headers`, a fetch function): callers and `get_error` see a
    RestLayerError like for every other failure, and the original stays in `__cause__`.
    """
    if isinstance(exc, RestLayerError):
        return exc
    name = getattr(action.endpoint, "name", None) or action.key
    error = RestLayerError(f"{name}: fetching {action.key} raised {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


def _same_request(running: act.Fetch, new: act.Fetch) -> bool:
    """Whether `new` may share the request of `running` (one key): always, unless that key leaves
    the page out; then only a call with equal arguments asks for the same page."""
    paged = keys_pages_as_one(running.endpoint), keys_pages_as_one(new.endpoint)
    if paged == (False, False):
        return True
    try:
        return paged[0] == paged[1] and bool(running.args == new.args)
    except Exception:  # arguments that cannot be compared: not the same request
        return False


class _Flight:
    """One request in flight and the callers waiting for it."""

    __slots__ = ("action", "dropped", "futures", "key", "left", "pinned", "task")

    def __init__(self, action: act.Fetch) -> None:
        self.action = action
        self.key = action.key
        self.futures: list[asyncio.Future[object]] = []
        self.pinned = False
        self.dropped = False
        self.left = False  # a caller stopped waiting (cancelled) before the outcome came
        self.task: asyncio.Task[None] | None = None

    def unread(self) -> bool:
        """Whether the outcome reaches nobody: every caller left, the request ran on (a mutation)."""
        return self.left and not self.futures

    def runs_in(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether the request runs in `loop` (a caller elsewhere must not join it)."""
        return self.task is not None and self.task.get_loop() is loop

    def settle(self, value: object = None, error: BaseException | None = None) -> None:
        """Give every caller still waiting the outcome (callers of a closed loop are gone)."""
        for future in self.futures:
            if future.done() or future.get_loop().is_closed():
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)
        self.futures.clear()


class NetworkManager(Manager):
    """Sends fetches; non-side-effect fetches of one key share a request while it is in flight
    (but for a body read once, `content="stream"`: each caller gets its own).

    `max_concurrent_requests` bounds the requests sent at once (`None`: no bound).
    """

    def __init__(self, max_concurrent_requests: int | None = DEFAULT_MAX_CONCURRENT_REQUESTS) -> None:
        limit = max_concurrent_requests
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise ParamError(f"max_concurrent_requests must be an int >= 1 or None, not {limit!r}")
        self.max_concurrent_requests = max_concurrent_requests
        self._by_key: dict[str, _Flight] = {}
        self._flights: set[_Flight] = set()
        self._dropped: set[asyncio.Task[None]] = set()  # requests a reset dropped, running on until they end
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # where the last request started
        self._controller: Controller | None = None

    def init(self, controller: Controller) -> None:
        """Remember the controller, to roll back optimistic updates when it closes (one controller only)."""
        check_unattached(self, self._controller, controller)
        self._controller = controller

    def in_flight(self, key: str) -> bool:
        """Whether a deduplicable request for `key` is running."""
        return key in self._by_key

    def middleware(self, controller: Controller, action: act.Action, next: Next) -> None:
        """Start or join requests on `fetch`; drop everything in flight on `reset`."""
        if isinstance(action, act.Reset):
            self._drop_all()
            next(action)
            return
        next(action)
        if isinstance(action, act.Fetch):
            self._start(controller, action)

    def _start(self, controller: Controller, action: act.Fetch) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop = loop
            self._drop_dead(controller)
        dedup = not action.endpoint.side_effect and not reads_once(action.endpoint)  # a stream: each its own
        flight = self._by_key.get(action.key) if dedup else None
        if flight is not None and not _same_request(flight.action, action):
            flight = None  # another page of a list whose key leaves the page out: a request of its own
        if flight is not None and not flight.runs_in(loop):
            flight = None  # running in another event loop: a request of its own
        if flight is None:
            flight = _Flight(action)
            if dedup:
                self._by_key[action.key] = flight
            self._flights.add(flight)
            flight.task = loop.create_task(self._run(controller, action, flight))
        else:
            _log.debug("fetch %s joined the request in flight", action.key)
        if action.background or action.endpoint.side_effect:
            flight.pinned = True  # runs to its end without callers: see the module docstring
        future = action.future
        if future is not None:
            flight.futures.append(future)
            future.add_done_callback(lambda f: self._left(flight, f))

    def _drop_dead(self, controller: Controller) -> None:
        """Forget the requests of event loops closed while they were in flight (they never finish).

        A controller used again in a new loop (`run_until_complete`, then `close()`) must
        neither join them nor keep showing their optimistic updates.
        """
        for flight in list(self._flights):
            if flight.task is not None and flight.task.get_loop().is_closed():
                flight.dropped = True
                self._finish(flight)
                if flight.action.optimistic:
                    controller.abort(flight.action)

    def _left(self, flight: _Flight, future: asyncio.Future[object]) -> None:
        """A caller stopped waiting; cancel the request when it was the last one.

        The cancelled request leaves the key at once, so a later caller starts
        its own request rather than joining one that is being cancelled.
        """
        if not future.cancelled() or flight.dropped:
            return
        if future in flight.futures:
            flight.futures.remove(future)
            flight.left = True
        if not flight.futures and not flight.pinned and flight.task is not None:
            self._finish(flight)
            flight.task.cancel()

    def _finish(self, flight: _Flight) -> None:
        self._flights.discard(flight)
        if self._by_key.get(flight.key) is flight:
            del self._by_key[flight.key]

    def _semaphore(self) -> asyncio.Semaphore | None:
        """The request slots of the running loop (a semaphore belongs to one loop)."""
        if self.max_concurrent_requests is None:
            return None
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.max_concurrent_requests))
        return self._slots[1]

    async def _send(self, action: act.Fetch, flight: _Flight) -> object:
        """Call the endpoint once a request slot is free, unless the request was dropped meanwhile."""
        slots = self._semaphore()
        if slots is None:
            return await self._call(action, flight)
        async with slots:
            return await self._call(action, flight)

    @staticmethod
    async def _call(action: act.Fetch, flight: _Flight) -> object:
        """Send the request; nothing when a reset dropped it before it went out (the reply is unused).

        Its callers were told it was aborted (`ResetError`): a mutation sent after that would
        change the server behind their back, and a read would be sent for nobody.
        """
        if flight.dropped:
            return None
        return await action.endpoint(*action.args)

    async def _run(self, controller: Controller, action: act.Fetch, flight: _Flight) -> None:
        """Send the request, commit its outcome, then hand it to the callers."""
        try:
            value = await self._send(action, flight)
        except asyncio.CancelledError:
            if not flight.dropped:
                self._finish(flight)
                controller.abort(action)
                flight.settle(error=ClosedError(f"The request for {action.key} was cancelled before it finished"))
            raise
        except ParamError as exc:  # a local mistake (bad header, param...): the caller's to fix, never stored
            if not flight.dropped:
                self._finish(flight)
                controller.abort(action, unsent=exc)
                flight.settle(error=exc)
            return
        except Exception as exc:
            if not flight.dropped:
                self._finish(flight)
                self._commit(controller, action, flight, error=_as_restlayer_error(exc, action))
            return
        if not flight.dropped:
            self._finish(flight)
            self._commit(controller, action, flight, value=value)

    @staticmethod
    def _commit(
        controller: Controller,
        action: act.Fetch,
        flight: _Flight,
        value: object = None,
        error: BaseException | None = None,
    ) -> None:
        """Store the outcome and settle the callers; they are settled even when storing fails."""
        try:
            failure = controller.resolve(action, value=value, error=error, unread=flight.unread())
        except RestLayerError as exc:
            failure = exc
        except Exception as exc:  # a manager or user callback failed while storing: never leave callers waiting
            failure = RestLayerError(f"Storing the reply for {action.key} failed: {type(exc).__name__}: {exc}")
            failure.__cause__ = exc
        flight.settle(value=value, error=failure or error)

    def _drop_all(self) -> None:
        """Reset: every caller gets ResetError; the requests finish but their replies are dropped."""
        flights = list(self._flights)
        self._flights.clear()
        self._by_key.clear()
        for flight in flights:
            flight.dropped = True
            flight.settle(error=ResetError())
            self._keep_dropped(flight.task)

    def _keep_dropped(self, task: asyncio.Task[None] | None) -> None:
        """Track a request a reset dropped until it ends, so that `cleanup()` still cancels it.

        It leaves the flights (nobody may join it, its reply is never stored), yet it holds a
        connection and a task: left untracked, it outlived the closed controller.
        """
        if task is not None and not task.done():
            self._dropped.add(task)
            task.add_done_callback(self._dropped.discard)

    def cleanup(self) -> None:
        """Cancel every request in flight, and those a reset dropped; callers get `ClosedError`.

        The optimistic updates of the requests in flight go with them.
        """
        for flight in list(self._flights):
            flight.dropped = True
            if self._controller is not None and flight.action.optimistic:
                self._controller.abort(flight.action)
            flight.settle(error=ClosedError())
            if flight.task is not None and not flight.task.get_loop().is_closed():
                flight.task.cancel()  # a task of a closed loop never runs again: nothing to cancel
        self._flights.clear()
        self._by_key.clear()
        for task in list(self._dropped):  # requests a reset dropped: nothing waits for them, they just stop
            if not task.get_loop().is_closed():
                task.cancel()
        self._dropped.clear()
