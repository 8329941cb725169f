"""Entities of the example API and a settable clock, shared by the controller tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from restlayer.core.manager import Manager, Next
from restlayer.schema import Entity


class User(Entity):
    id: int | None = None
    username: str = ""
    name: str = ""
    email: str = ""
    indexes = ("username",)


class Todo(Entity):
    id: int | None = None
    userId: int = 1
    title: str = ""
    completed: bool = False


class Picky(Todo):
    """A todo whose hooks cannot build one titled "BOOM" (reading it raises)."""

    @classmethod
    def from_json(cls, data: Any) -> Any:
        if data.get("title") == "BOOM":
            raise ValueError("no todo may be titled BOOM")
        return super().from_json(data)


class Clock:
    """A settable clock in ms for expiry tests."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += ms


def gets(api: object, path: str | None = None, method: str = "GET") -> list[Any]:
    """Requests the server recorded with this method (and path)."""
    return api.requests.matching(method, path)  # type: ignore[attr-defined, no-any-return]


class Recorder(Manager):
    """A manager that records every action after it reached the store; tests wait on actions, never sleep."""

    def __init__(self) -> None:
        self.actions: list[Any] = []
        self._waiters: list[tuple[Callable[[Any], bool], int, asyncio.Event]] = []

    def middleware(self, controller: Any, action: Any, next: Next) -> None:
        next(action)
        self.actions.append(action)
        self._wake()

    def matching(self, pred: Callable[[Any], bool]) -> list[Any]:
        """The recorded actions for which `pred` holds."""
        return [a for a in self.actions if pred(a)]

    def _wake(self) -> None:
        for pred, count, event in self._waiters:
            if not event.is_set() and len(self.matching(pred)) >= count:
                event.set()

    async def wait_for(self, pred: Callable[[Any], bool], count: int = 1, timeout: float = 10) -> list[Any]:
        """Wait until `count` recorded actions satisfy `pred`; returns them."""
        entry = (pred, count, asyncio.Event())
        self._waiters.append(entry)
        try:
            self._wake()
            await asyncio.wait_for(entry[2].wait(), timeout)
        finally:
            self._waiters.remove(entry)
        return self.matching(pred)


def stored(key: str | None = None) -> Callable[[Any], bool]:
    """Predicate: a fetch's reply (or error) was stored (for `key`, when given)."""
    return lambda a: a.type == "set_response" and a.fetch is not None and not a.aborted and key in (None, a.key)


def aborted(a: Any) -> bool:
    """Predicate: a cancelled fetch was aborted."""
    return bool(a.type == "set_response" and a.aborted)


def polled(key: str) -> Callable[[Any], bool]:
    """Predicate: a background (polling or refresh) fetch of `key` started."""
    return lambda a: a.type == "fetch" and a.background and a.key == key


async def other_tasks_done(timeout: float = 10) -> None:
    """Wait until every other task on the loop has finished (e.g. a request whose reply is dropped)."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        pending = (await asyncio.wait(others, timeout=timeout))[1]
        assert not pending, f"{len(pending)} tasks still running"
