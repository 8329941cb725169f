"""Entities of the example API and a settable clock, shared by the controller tests."""

from __future__ import annotations

from typing import Any

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
