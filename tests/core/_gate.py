"""A test server whose replies the test releases: no timing guesses about "the request is in flight".

`GET /gate/{name}` records its arrival, then waits until the test calls
`gates.open(name)` (at most `?hold=` seconds, default 30, else 504) and
answers `{"gate": name}`. Tests wait for arrivals with `await gates.arrived(name)`.
The server also counts, per group of names (`group-i`), how many replies were
held at once: `max_held(group)`.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from examples.todo_api import LocalServer

_names = itertools.count()


@dataclass
class _Gate:
    arrivals: int = 0
    is_open: bool = False
    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(default_factory=list)


class Gates:
    """The gates of one server, shared between the server thread and the test."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._gates: dict[str, _Gate] = {}
        self._held: dict[str, int] = {}
        self._max_held: dict[str, int] = {}
        self.url = ""

    @staticmethod
    def name(prefix: str = "g") -> str:
        """A gate name no other test uses."""
        return f"{prefix}{next(_names)}"

    @staticmethod
    def group(size: int) -> list[str]:
        """`size` gate names of one new group (see `max_held`)."""
        prefix = f"grp{next(_names)}-"
        return [f"{prefix}{i}" for i in range(size)]

    def max_held(self, name: str) -> int:
        """The most replies held at once among the group of `name`."""
        with self._cond:
            return self._max_held.get(name.split("-")[0], 0)

    def open_all(self) -> None:
        """Release every gate (server shutdown)."""
        with self._cond:
            names = list(self._gates)
        for name in names:
            self.open(name)

    def _gate(self, name: str) -> _Gate:
        return self._gates.setdefault(name, _Gate())

    def open(self, name: str) -> None:
        """Release every request held at `name`, now and later."""
        with self._cond:
            gate = self._gate(name)
            gate.is_open = True
            waiters, gate.waiters = gate.waiters, []
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)

    def arrivals(self, name: str) -> int:
        """How many requests reached `name` so far."""
        with self._cond:
            return self._gate(name).arrivals

    def wait_arrived(self, name: str, count: int = 1, timeout: float = 10) -> bool:
        """Block until `count` requests reached `name` (False after `timeout` seconds)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._gate(name).arrivals >= count, timeout)

    async def arrived(self, name: str, count: int = 1, timeout: float = 10) -> None:
        """Wait (without blocking the loop) until `count` requests reached `name`."""
        assert await asyncio.to_thread(self.wait_arrived, name, count, timeout), f"gate {name}: no arrival"

    async def handle(self, request: Request) -> Response:
        """The route: record the arrival, hold until opened, answer."""
        name = request.path_params["name"]
        event = asyncio.Event()
        with self._cond:
            gate = self._gate(name)
            gate.arrivals += 1
            group = name.split("-")[0]
            self._held[group] = held = self._held.get(group, 0) + 1
            self._max_held[group] = max(self._max_held.get(group, 0), held)
            if gate.is_open:
                event.set()
            else:
                gate.waiters.append((asyncio.get_running_loop(), event))
            self._cond.notify_all()
        try:
            await asyncio.wait_for(event.wait(), float(request.query_params.get("hold", 30)))
        except TimeoutError:
            return JSONResponse({"gate": name, "error": "never opened"}, status_code=504)
        finally:
            with self._cond:
                self._held[group] -= 1
        return JSONResponse({"gate": name})


def gate_server() -> Iterator[Gates]:
    """Run a gate server on 127.0.0.1 (the body of a fixture)."""
    gates = Gates()
    route = Route("/gate/{name}", gates.handle, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    with LocalServer(routes=[route]) as server:
        gates.url = server.url
        yield gates
        gates.open_all()
