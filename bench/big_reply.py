"""How long one large reply blocks the event loop, and what moving its normalize to a thread costs.

Run: `.venv/bin/python -m bench.big_reply [megabytes]` (default 50). Builds a
JSON list of todos of about that size and prints, in seconds:

- `json.loads` of the body (httpx's `response.json()` does this on the loop);
- `normalize` of the decoded list into an empty store, on the loop;
- the same `normalize` in a worker thread (`asyncio.to_thread`): its wall
  time, and the longest the loop went without running a 1 ms ticker meanwhile
  (the thread still holds the GIL while it works, so the loop only gets
  Python's thread switch interval, 5 ms, now and then);
- the fixed cost of the hand-off for a one-todo reply: `to_thread` versus a
  direct call, per call.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from restlayer.schema import Entity, normalize


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


def _body(megabytes: float) -> bytes:
    one = len(json.dumps({"id": 100000, "userId": 10, "title": "todo number 100000 " * 2, "completed": True}))
    count = int(megabytes * 1_000_000 / (one + 2))
    items = [
        {"id": i, "userId": i % 10, "title": f"todo number {i} " * 2, "completed": i % 2 == 0} for i in range(count)
    ]
    return json.dumps(items).encode()


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


async def _longest_stall(work: Callable[[], Any]) -> tuple[float, float]:
    """Run `work` in a thread; its wall time, and the longest gap between 1 ms ticks of the loop."""
    done = False
    longest = 0.0

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now

    tick = asyncio.ensure_future(ticker())
    await asyncio.sleep(0.01)
    start = time.perf_counter()
    await asyncio.to_thread(work)
    wall = time.perf_counter() - start
    done = True
    await tick
    return wall, longest


async def _handoff_cost(calls: int = 2_000) -> tuple[float, float]:
    one = [{"id": 1, "userId": 1, "title": "t", "completed": False}]
    direct = _timed(lambda: [normalize([Todo], one) for _ in range(calls)])[0] / calls
    start = time.perf_counter()
    for _ in range(calls):
        await asyncio.to_thread(normalize, [Todo], one)
    threaded = (time.perf_counter() - start) / calls
    return direct, threaded


def main(megabytes: float = 50) -> None:
    body = _body(megabytes)
    decode, data = _timed(lambda: json.loads(body))
    print(f"{len(body) / 1e6:.1f} MB, {len(data):,} todos")
    print(f"  json.loads on the loop                 {decode:7.2f} s")
    on_loop = _timed(lambda: normalize([Todo], data))[0]
    print(f"  normalize on the loop (loop blocked)   {on_loop:7.2f} s")
    wall, stall = asyncio.run(_longest_stall(lambda: normalize([Todo], data)))
    print(f"  normalize in a thread: wall            {wall:7.2f} s, longest loop stall {stall * 1000:.1f} ms")
    direct, threaded = asyncio.run(_handoff_cost())
    print(f"  one-todo normalize: direct {direct * 1e6:.1f} us, via to_thread {threaded * 1e6:.1f} us per call")


if __name__ == "__main__":
    main(*(float(a) for a in sys.argv[1:2]))
