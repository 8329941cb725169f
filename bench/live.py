"""Live data: delay from a server-side change to a `watch` callback, push versus polling.

Run: `.venv/bin/python -m bench.live [rounds]`. Starts the example API in-process
(LocalServer, which announces every change on `/events` and `/ws`). For each of
SSE, WebSocket and polling at 1 s, another client PATCHes a todo `rounds` times
(default 50; polling 10, each after a random pause so changes land anywhere in
the poll period) and the time from sending the PATCH to the controller's
`watch` callback is recorded (p50/p99). Then the store-write path alone: pushed
update messages applied per second into a store of 100,000 todos.

Last line: `live: sse_p50_ms=A ws_p50_ms=B poll_p50_ms=C events_per_s=E`
(targets: each push p50 <= 20 ms; events_per_s >= 5,000).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx

from examples.todo_api import LocalServer
from restlayer import Controller, Entity, resource
from restlayer.streams import Message, SSEStream, Stream, StreamManager, WebSocketStream

POLL_MS = 1000
STORE_SIZE = 100_000
APPLY_COUNT = 20_000


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


def _quantiles(delays: list[float]) -> tuple[float, float]:
    """p50 and p99 in ms."""
    ordered = sorted(delays)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p99 * 1000


async def _delays(server: LocalServer, ctrl: Controller, endpoint: Any, rounds: int, pause: float) -> list[float]:
    """Seconds from sending each PATCH to the watch callback seeing its title."""
    arrived: dict[str, float] = {}
    changed = asyncio.Event()

    def seen(todo: Any) -> None:
        if todo is not None:
            arrived.setdefault(todo.title, time.perf_counter())
            changed.set()

    unwatch = ctrl.watch(endpoint, {"id": 1}, callback=seen)
    delays: list[float] = []
    async with httpx.AsyncClient() as other:
        for i in range(rounds):
            if pause:
                await asyncio.sleep(random.uniform(0, pause))
            title = f"round {i} {random.random()}"
            sent = time.perf_counter()
            (await other.patch(f"{server.url}/todos/1", json={"title": title})).raise_for_status()
            while title not in arrived:
                changed.clear()
                await asyncio.wait_for(changed.wait(), 10)
            delays.append(arrived[title] - sent)
    unwatch()
    return delays


async def _push(server: LocalServer, make: Callable[[Any], Stream], rounds: int) -> list[float]:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=server.url)
    ctrl = Controller()
    await ctrl.fetch(todos.get, id=1)
    stream = make({"todos.updated": Todo, "subscribed": lambda message, writes: None})
    async with StreamManager(ctrl, [stream]):
        await stream.until(lambda s: s.connected)
        if isinstance(stream, WebSocketStream):
            await stream.until(lambda s: s.applied >= 1)  # the server's "subscribed" frame
        return await _delays(server, ctrl, todos.get, rounds, 0)


async def _poll(server: LocalServer, rounds: int) -> list[float]:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=server.url, poll_frequency=POLL_MS)
    ctrl = Controller()
    await ctrl.fetch(todos.get, id=1)
    async with ctrl.subscription(todos.get, id=1):
        delays = await _delays(server, ctrl, todos.get, rounds, POLL_MS / 1000)
    ctrl.close()
    return delays


def _apply_rate() -> float:
    """Pushed `todos.updated` messages applied per second into a store of STORE_SIZE todos."""
    listing = resource(path="/todos/:id", schema=Todo, url_prefix="http://127.0.0.1:9").get_list
    ctrl = Controller()
    ctrl.set_response(listing, [{"id": i, "userId": i % 10, "title": f"t{i}"} for i in range(1, STORE_SIZE + 1)])
    stream = SSEStream("http://127.0.0.1:9/events", on={"todos.updated": Todo})
    messages = [
        Message("todos.updated", {"id": random.randint(1, STORE_SIZE), "title": f"pushed {n}"}, str(n))
        for n in range(APPLY_COUNT)
    ]
    start = time.perf_counter()
    for message in messages:
        stream.apply(ctrl, message)
    elapsed = time.perf_counter() - start
    assert stream.applied == APPLY_COUNT
    return APPLY_COUNT / elapsed


async def main(rounds: int) -> None:
    with LocalServer() as server:
        ws_url = server.url.replace("http://", "ws://") + "/ws"
        sse = await _push(server, lambda on: SSEStream(f"{server.url}/events", on=on), rounds)
        ws = await _push(
            server,
            lambda on: WebSocketStream(
                ws_url, on=on, on_open=lambda last: [{"type": "subscribe", "lastEventId": last}]
            ),
            rounds,
        )
        poll = await _poll(server, max(5, rounds // 5))
    rate = _apply_rate()
    print(f"change -> watch callback delay ({rounds} changes per push transport)")
    results = {}
    for name, delays in (("sse", sse), ("ws", ws), (f"poll {POLL_MS} ms", poll)):
        p50, p99 = _quantiles(delays)
        results[name] = p50
        print(f"  {name:<14} p50 {p50:8.1f} ms   p99 {p99:8.1f} ms   (n={len(delays)})")
    print(f"  apply          {rate:,.0f} events/s into a store of {STORE_SIZE:,} todos")
    print(
        f"live: sse_p50_ms={results['sse']:.1f} ws_p50_ms={results['ws']:.1f} "
        f"poll_p50_ms={results[f'poll {POLL_MS} ms']:.1f} events_per_s={rate:.0f}"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
