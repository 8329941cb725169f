"""Controller benchmarks: memo hits, store-size independence of writes, fetch overhead, memory.

Run: `.venv/bin/python -m bench.controller`. Prints each figure and its ratio:
(a) get_response of a cached 500-entity list (memo hit) vs a cold denormalize
    (target >= 100x);
(b) one set_response of one entity into a 100,000-entity store vs a 1,000-entity
    store (target ratio <= 1.5);
(c) ctrl.fetch of a 100-item list vs raw httpx + normalize on the same client,
    interleaved (target overhead <= 15%), and vs raw httpx + json.loads (target <= 1.25x),
    plus the same ratio for a one-entity fetch;
(d) bytes per stored entity (100,000 small entities) and memory after
    expire_all + a GC sweep versus an empty store (target within 10%).
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

from examples.todo_api import LocalServer
from restlayer.core import Controller, GCPolicy
from restlayer.rest import RestEndpoint
from restlayer.rest._client import get_client
from restlayer.schema import Entity, denormalize, normalize


class Todo(Entity):
    id: int | None = None
    userId: int = 1
    title: str = ""
    completed: bool = False


def _items(n: int, start: int = 1) -> list[dict[str, Any]]:
    return [
        {"id": i, "userId": i % 10 + 1, "title": f"todo {i}", "completed": i % 2 == 0} for i in range(start, start + n)
    ]


def _best(fn: Callable[[], Any], repeat: int = 7, number: int = 100) -> float:
    """Best mean seconds per call over `repeat` runs of `number` calls."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def bench_memo() -> None:
    ep = RestEndpoint(path="/todos", url_prefix="http://x.test", schema=[Todo])
    ctrl = Controller()
    ctrl.set_response(ep, _items(500))
    ctrl.get_response(ep)
    hit = _best(lambda: ctrl.get_response(ep), number=2000)
    state = ctrl.get_state()
    result = state.endpoints[ep.key()]
    cold = _best(lambda: denormalize([Todo], result, state.entities), number=20)
    print(
        f"(a) get_response memo hit {hit * 1e6:.2f} us; cold denormalize {cold * 1e6:.0f} us; "
        f"ratio {cold / hit:.0f}x (target >= 100x)"
    )


def _store_of(n: int) -> tuple[Controller, RestEndpoint]:
    ctrl = Controller()
    bulk = RestEndpoint(path="/todos", url_prefix="http://x.test", schema=[Todo])
    ctrl.set_response(bulk, _items(n))
    return ctrl, RestEndpoint(path="/todos/:id", url_prefix="http://x.test", schema=Todo)


def _writer(n: int) -> Callable[[], None]:
    """One set_response of one entity (a different one each call) into a store of `n`."""
    ctrl, one = _store_of(n)
    counter = iter(range(10**9))

    def write() -> None:
        i = next(counter) % n + 1
        ctrl.set_response(one, {"id": i}, {"id": i, "title": "changed", "userId": 1})

    return write


def bench_write() -> None:
    times = {}
    for n in (1_000, 100_000):
        times[n] = _best(_writer(n), repeat=9, number=300)
    ratio = times[100_000] / times[1_000]
    print(
        f"(b) set_response into 1,000: {times[1_000] * 1e6:.1f} us; into 100,000: "
        f"{times[100_000] * 1e6:.1f} us; ratio {ratio:.2f} (target <= 1.5)"
    )


Case = tuple[str, Callable[[], Awaitable[None]]]


async def _interleaved(cases: tuple[Case, ...], rounds: int, per_round: int) -> dict[str, float]:
    """Mean ms per call of each case, run in interleaved rounds after a warm-up."""
    for _, fn in cases:
        for _ in range(20):
            await fn()
    totals = dict.fromkeys((name for name, _ in cases), 0.0)
    for _ in range(rounds):
        for name, fn in cases:
            t = time.perf_counter()
            for _ in range(per_round):
                await fn()
            totals[name] += time.perf_counter() - t
    return {name: total / (rounds * per_round) * 1000 for name, total in totals.items()}


async def bench_fetch(url: str, rounds: int = 30, per_round: int = 20) -> None:
    ep = RestEndpoint(path="/_test/list", url_prefix=url, schema=[Todo])
    one = RestEndpoint(path="/todos/1", url_prefix=url, schema=Todo)
    client = get_client()
    ctrl = Controller()

    async def raw() -> None:
        response = await client.get(f"{url}/_test/list", headers={"Content-Type": "application/json"})
        normalize([Todo], response.json())

    async def raw_json() -> None:
        response = await client.get(f"{url}/_test/list", headers={"Content-Type": "application/json"})
        json.loads(response.content)

    async def via_ctrl() -> None:
        await ctrl.fetch(ep)

    async def raw_one() -> None:
        response = await client.get(f"{url}/todos/1", headers={"Content-Type": "application/json"})
        json.loads(response.content)

    async def ctrl_one() -> None:
        await ctrl.fetch(one)

    ms = await _interleaved((("raw", raw), ("json", raw_json), ("ctrl", via_ctrl)), rounds, per_round)
    print(
        f"(c) raw httpx + normalize {ms['raw']:.3f} ms; ctrl.fetch {ms['ctrl']:.3f} ms; "
        f"overhead {(ms['ctrl'] / ms['raw'] - 1) * 100:+.1f}% (target <= 15%)"
    )
    print(
        f"    raw httpx + json.loads {ms['json']:.3f} ms; ctrl.fetch / that: {ms['ctrl'] / ms['json']:.2f}x "
        "(target <= 1.25)"
    )
    ms = await _interleaved((("json", raw_one), ("ctrl", ctrl_one)), rounds, per_round)
    print(
        f"    one entity: raw httpx + json.loads {ms['json']:.3f} ms; ctrl.fetch {ms['ctrl']:.3f} ms; "
        f"ratio {ms['ctrl'] / ms['json']:.2f}x"
    )


def _traced(fn: Callable[[], Any]) -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def bench_memory(n: int = 100_000) -> None:
    tracemalloc.start()
    clock = _Clock()
    policy = GCPolicy(interval_ms=10**12)
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    ctrl = Controller(clock=clock, gc_policy=policy)
    ep = RestEndpoint(path="/todos", url_prefix="http://x.test", schema=[Todo])
    ctrl.cache(ep)  # warm the module-level schema caches so "empty" measures only the store
    # One small fill-and-sweep cycle first: interpreter-level caches (abc isinstance caches,
    # first-use allocations) are not store memory and must not count as "left behind".
    ctrl.set_response(ep, _items(100))
    ctrl.cache(ep)
    ctrl.expire_all(lambda key: True)
    clock.now += 10**7
    policy.sweep()
    empty = _traced(lambda: None) - base
    ctrl.set_response(ep, _items(n))
    ctrl.cache(ep)  # a reader touched it: eligible for collection once expired
    full = _traced(lambda: None) - base
    ctrl.expire_all(lambda key: True)
    clock.now += 10**7
    policy.sweep()
    after = _traced(lambda: None) - base
    tracemalloc.stop()
    print(
        f"(d) {(full - empty) / n:.0f} bytes per stored entity ({n:,} entities); empty store "
        f"{empty / 1024:.1f} KiB, after expire_all + sweep {after / 1024:.1f} KiB "
        f"({(after - empty) / max(empty, 1) * 100:+.1f}%; target within 10%)"
    )


def main() -> None:
    bench_memo()
    bench_write()
    from tests._routes import ROUTES

    with LocalServer(routes=ROUTES) as server:
        asyncio.run(bench_fetch(server.url))
    bench_memory()


if __name__ == "__main__":
    main()
