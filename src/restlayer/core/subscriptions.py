"""`SubscriptionManager`: polls subscribed endpoints at the smallest subscribed frequency.

`Poll` holds the scheduling logic as plain arithmetic on clock times (ms) so it
is testable without timers; the manager only turns due times into
`loop.call_later` handles.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, cast

from restlayer.core import _actions as act
from restlayer.core.manager import Manager, Next, check_unattached

if TYPE_CHECKING:
    from restlayer.core.controller import Controller
    from restlayer.core.endpoint import Endpoint


class Poll:
    """Polling of one key: how many subscribers per frequency, and when the next poll is due."""

    def __init__(self, endpoint: Endpoint[object], args: tuple[object, ...], key: str) -> None:
        self.endpoint = endpoint
        self.args = args
        self.key = key
        self.counts: dict[float, int] = {}
        self.frequency = float("inf")
        self.next_due = float("inf")

    def add(self, frequency: float, now: float, last_fetch: float | None) -> bool:
        """Count a subscriber; True when the schedule changed (first one, or a new minimum)."""
        first = not self.counts
        self.counts[frequency] = self.counts.get(frequency, 0) + 1
        if first:
            self.frequency = frequency
            self.next_due = now if not last_fetch else now + max(0.0, last_fetch + frequency - now)
            return True
        if self.counts[frequency] == 1 and frequency < self.frequency:
            self.frequency = frequency
            self.next_due = min(self.next_due, now + frequency)
            return True
        return False

    def remove(self, frequency: float, now: float) -> bool:
        """Drop a subscriber; True when the schedule changed. `active` tells whether any remain."""
        count = self.counts.get(frequency)
        if count is None:
            return False
        if count > 1:
            self.counts[frequency] = count - 1
            return False
        del self.counts[frequency]
        if not self.counts:
            self.next_due = float("inf")
            return True
        if frequency <= self.frequency:
            self.frequency = min(self.counts)
            self.next_due = min(self.next_due, now + self.frequency)
            return True
        return False

    @property
    def active(self) -> bool:
        """Whether anyone is still subscribed."""
        return bool(self.counts)

    def polled(self, now: float) -> None:
        """A poll just ran: the next one is one period later."""
        self.next_due = now + self.frequency


class SubscriptionManager(Manager):
    """Keeps one `Poll` per subscribed key and fetches it whenever it is due."""

    def __init__(self) -> None:
        self.polls: dict[str, Poll] = {}
        self._handles: dict[str, asyncio.TimerHandle] = {}
        self._loop: asyncio.AbstractEventLoop | None = None  # where the handles are set
        self._controller: Controller | None = None

    def init(self, controller: Controller) -> None:
        """Remember the controller whose clock and fetches polling uses (one controller only)."""
        check_unattached(self, self._controller, controller)
        self._controller = controller

    def middleware(self, controller: Controller, action: act.Action, next: Next) -> None:
        """Track `subscribe` / `unsubscribe`; everything else passes through."""
        if self._handles:
            self._follow_loop()
        if isinstance(action, act.Subscribe):
            self._subscribe(controller, action)
        elif isinstance(action, act.Unsubscribe):
            self._unsubscribe(controller, action)
        next(action)

    def _subscribe(self, controller: Controller, action: act.Subscribe) -> None:
        poll = self.polls.get(action.key)
        if poll is None:
            poll = self.polls[action.key] = Poll(action.endpoint, action.args, action.key)
        meta = controller.get_committed_state().meta.get(action.key)
        last = None if meta is None else meta.get("date")
        if poll.add(_frequency(action), controller.now(), last):
            self._schedule(poll)

    def _unsubscribe(self, controller: Controller, action: act.Unsubscribe) -> None:
        poll = self.polls.get(action.key)
        if poll is None or not poll.remove(_frequency(action), controller.now()):
            return
        if poll.active:
            self._schedule(poll)
        else:
            self._cancel(poll.key)
            del self.polls[poll.key]

    def next_poll(self, key: str) -> float | None:
        """When the next poll of `key` is due (clock ms), or None when nothing polls it."""
        poll = self.polls.get(key)
        return None if poll is None or key not in self._handles else poll.next_due

    def _follow_loop(self) -> None:
        """Set the poll timers again in the running loop when they were set in another one.

        The controller was used in an earlier `asyncio.run`: its timers died with that loop.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if loop is not self._loop:
            for poll in list(self.polls.values()):
                if poll.key in self._handles:
                    self._schedule(poll)

    def _schedule(self, poll: Poll) -> None:
        assert self._controller is not None
        self._cancel(poll.key)
        delay = max(0.0, poll.next_due - self._controller.now()) / 1000
        self._loop = loop = asyncio.get_running_loop()
        self._handles[poll.key] = loop.call_later(delay, self._due, poll)

    def _due(self, poll: Poll) -> None:
        controller = self._controller
        if controller is None or controller.closed or self.polls.get(poll.key) is not poll:
            return
        controller.poll(poll.endpoint, poll.args, poll.frequency)
        poll.polled(controller.now())
        self._schedule(poll)

    def _cancel(self, key: str) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cleanup(self) -> None:
        """Stop every poll."""
        for key in list(self._handles):
            self._cancel(key)
        self.polls.clear()


def _frequency(action: act.Subscribe | act.Unsubscribe) -> float:
    """The polling period of a (un)subscribe: the Controller dispatches them only for endpoints that poll."""
    return cast(float, action.endpoint.poll_frequency)
