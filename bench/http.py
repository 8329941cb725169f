"""REST-layer overhead: `await endpoint()` versus raw `httpx` on the same client.

Run: `.venv/bin/python -m bench.http [total]`. Starts the example API in-process
(LocalServer, plus one route serving a fixed 100-item JSON list), then sends
`total` (default 2,000) GETs per mode, sequentially and 50 at a time, through
`RestEndpoint.__call__` and through `(await client.get(url)).json()`. The two
modes alternate in small batches within one run so drift hits both equally.
Prints ops/s per mode and the time ratio endpoint/raw (target <= 1.10).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from examples.todo_api import LocalServer
from restlayer.rest import RestEndpoint

PATH = "/_bench/list"
BODY = json.dumps(
    [{"id": i, "userId": i % 10 + 1, "title": f"todo {i}", "completed": i % 2 == 0} for i in range(1, 101)]
).encode()
BATCHES = 20
CONCURRENCY = 50


async def _list(request: Request) -> Response:
    """A fixed 100-item list: as cheap as possible so client overhead shows."""
    return Response(BODY, media_type="application/json")


Call = Callable[[], Awaitable[object]]


async def _sequential(call: Call, count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        await call()
    return time.perf_counter() - start


async def _concurrent(call: Call, count: int) -> float:
    per_worker = count // CONCURRENCY

    async def worker() -> None:
        for _ in range(per_worker):
            await call()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return time.perf_counter() - start


async def _compare(
    label: str, runner: Callable[[Call, int], Awaitable[float]], raw: Call, ep: Call, total: int
) -> float:
    """Alternate raw and endpoint batches; print both rates and return the time ratio."""
    batch = max(total // BATCHES, CONCURRENCY)
    await runner(raw, batch)  # warm up connections and code paths
    await runner(ep, batch)
    times = {"raw": 0.0, "endpoint": 0.0}
    done = 0
    for i in range(BATCHES):
        order = (("raw", raw), ("endpoint", ep)) if i % 2 == 0 else (("endpoint", ep), ("raw", raw))
        for name, call in order:
            times[name] += await runner(call, batch)
        done += batch
    ratio = times["endpoint"] / times["raw"]
    for name in ("raw", "endpoint"):
        print(f"  {label:<12} {name:<9} {done / times[name]:>9,.0f} ops/s")
    print(f"  {label:<12} ratio     {ratio:>9.3f}  (endpoint time / raw time, target <= 1.10)")
    return ratio


async def main(total: int) -> None:
    with LocalServer(routes=[Route(PATH, _list, methods=["GET"])]) as server:
        limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
        async with httpx.AsyncClient(limits=limits) as client:
            url = server.url + PATH
            endpoint = RestEndpoint(path=PATH, url_prefix=server.url, client=client)

            async def raw() -> object:
                return (await client.get(url)).json()

            async def ep() -> object:
                return await endpoint()

            assert await raw() == await ep()
            print(f"{total:,} GETs of a 100-item JSON list per mode ({server.url})")
            await _compare("sequential", _sequential, raw, ep, total)
            await _compare(f"{CONCURRENCY} at once", _concurrent, raw, ep, total)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
