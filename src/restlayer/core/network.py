"""`NetworkManager`: runs fetches, sharing one request per key among concurrent readers.

Each caller awaits its own future, so cancelling one caller ends only its
wait; the shared request is cancelled when the last awaiting caller is gone
(unless a background reader started it). A reset drops every in-flight
request: its callers get `ResetError` and its late reply is never stored.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from restlayer.core import _actions as act
from restlayer.core.manager import Manager, Next
from restlayer.errors import ResetError

if TYPE_CHECKING:
    from restlayer.core.controller import Controller

_log = logging.getLogger("restlayer")


class _Flight:
    """One request in flight and the callers waiting for it."""

    __slots__ = ("dropped", "futures", "key", "pinned", "task")

    def __init__(self, key: str) -> None:
        self.key = key
        self.futures: list[asyncio.Future[Any]] = []
        self.pinned = False
        self.dropped = False
        self.task: asyncio.Task[None] | None = None

    def settle(self, value: Any = None, error: BaseException | None = None) -> None:
        """Give every caller still waiting the outcome."""
        for future in self.futures:
            if future.done():
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)
        self.futures.clear()


class NetworkManager(Manager):
    """Sends fetches; non-side-effect fetches of one key share a request while it is in flight."""

    def __init__(self) -> None:
        self._by_key: dict[str, _Flight] = {}
        self._flights: set[_Flight] = set()

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
        dedup = not action.endpoint.side_effect
        flight = self._by_key.get(action.key) if dedup else None
        if flight is None:
            flight = _Flight(action.key)
            if dedup:
                self._by_key[action.key] = flight
            self._flights.add(flight)
            flight.task = asyncio.get_running_loop().create_task(self._run(controller, action, flight))
        else:
            _log.debug("fetch %s joined the request in flight", action.key)
        if action.background:
            flight.pinned = True
        future = action.future
        if future is not None:
            flight.futures.append(future)
            future.add_done_callback(lambda f: self._left(flight, f))

    def _left(self, flight: _Flight, future: asyncio.Future[Any]) -> None:
        """A caller stopped waiting; cancel the request when it was the last one."""
        if not future.cancelled() or flight.dropped:
            return
        if future in flight.futures:
            flight.futures.remove(future)
        if not flight.futures and not flight.pinned and flight.task is not None:
            flight.task.cancel()

    def _finish(self, flight: _Flight) -> None:
        self._flights.discard(flight)
        if self._by_key.get(flight.key) is flight:
            del self._by_key[flight.key]

    async def _run(self, controller: Controller, action: act.Fetch, flight: _Flight) -> None:
        """Send the request, commit its outcome, then hand it to the callers."""
        try:
            value = await action.endpoint(*action.args)
        except asyncio.CancelledError:
            if not flight.dropped:
                self._finish(flight)
                controller._abort_fetch(action)
                for future in flight.futures:
                    future.cancel()
            raise
        except Exception as exc:
            if flight.dropped:
                return
            self._finish(flight)
            controller._resolve_fetch(action, error=exc)
            flight.settle(error=exc)
            return
        if flight.dropped:
            return
        self._finish(flight)
        failure = controller._resolve_fetch(action, value=value)
        flight.settle(value=value, error=failure)

    def _drop_all(self) -> None:
        """Reset: every caller gets ResetError; the requests finish but their replies are dropped."""
        flights = list(self._flights)
        self._flights.clear()
        self._by_key.clear()
        for flight in flights:
            flight.dropped = True
            flight.settle(error=ResetError())

    def cleanup(self) -> None:
        """Cancel every request in flight."""
        for flight in list(self._flights):
            flight.dropped = True
            if flight.task is not None:
                flight.task.cancel()
        self._flights.clear()
        self._by_key.clear()
