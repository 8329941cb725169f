"""Fixtures of the Solara hook tests: components rendered without a kernel (solara.render), a real API."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("solara", reason="install the extra: pip install 'restlayer[solara]'")

from restlayer.sync import Controller

TIMEOUT = 10.0


class Seen:
    """What components rendered, in order; tests wait on it (a condition, never a sleep)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []
        self._cond = threading.Condition()

    def add(self, name: str, value: Any) -> None:
        with self._cond:
            self.items.append((name, value))
            self._cond.notify_all()

    def of(self, name: str) -> list[Any]:
        with self._cond:
            return [v for n, v in self.items if n == name]

    def wait(self, check: Callable[[], bool], what: str) -> None:
        """Block until `check()` holds (re-checked at each render and every 20 ms), failing after TIMEOUT s."""
        deadline = time.monotonic() + TIMEOUT
        with self._cond:
            while not check():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what}; renders: {self.items!r}")
                self._cond.wait(min(left, 0.02))


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture
def sctrl() -> Iterator[Controller]:
    """A blocking controller the test owns (the provider does not close it)."""
    ctrl = Controller()
    yield ctrl
    ctrl.close()
