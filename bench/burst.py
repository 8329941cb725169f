"""A burst of distinct concurrent GETs through one Controller: queued versus unbounded.

Run: `.venv/bin/python -m bench.burst [total] [rounds]`. Starts the example API
in-process (LocalServer, plus a route answering `GET /_bench/item/{n}` with a
small JSON record after `DELAY_MS`, as a real server would take a moment), then
fetches `total` (default 1,000) distinct keys at once with `asyncio.gather`:

- `queued`: the default `max_concurrent_requests` (the httpx pool size, 100);
- `unbounded`: `max_concurrent_requests=None`, every request handed to the
  connection pool at once (the behaviour before the limit existed).

Each mode runs on a fresh event loop (so a fresh shared HTTP client) and the
modes alternate for `rounds` rounds (default 1; the unbounded mode can
take minutes, as its requests wait out the pool's 30 s timeout). Prints seconds per burst and
how many fetches failed (and with what) per mode.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from examples.todo_api import LocalServer
from restlayer import Controller, RestEndpoint

DELAY_MS = 20


async def _item(request: Request) -> Response:
    """One small record, after a short server-side delay."""
    await asyncio.sleep(DELAY_MS / 1000)
    return JSONResponse({"id": int(request.path_params["n"]), "title": "item"})


async def _burst(url: str, total: int, limit: int | None) -> tuple[float, collections.Counter[str]]:
    """Seconds for `total` concurrent distinct fetches, and the failures by error type."""
    endpoint = RestEndpoint(path="/_bench/item/:n", url_prefix=url)
    ctrl = Controller(max_concurrent_requests=limit)
    start = time.perf_counter()
    results = await asyncio.gather(*(ctrl.fetch(endpoint, n=n) for n in range(total)), return_exceptions=True)
    elapsed = time.perf_counter() - start
    ctrl.close()
    failures = collections.Counter(  # by error type and reason (the text after the URL)
        f"{type(r).__name__}: {str(r).rsplit(': ', 1)[-1][:40]}" for r in results if isinstance(r, BaseException)
    )
    return elapsed, failures


def main(total: int = 1_000, rounds: int = 1) -> None:
    modes: dict[str, int | None] = {"queued (limit 100)": 100, "unbounded": None}
    with LocalServer(routes=[Route("/_bench/item/{n}", _item)]) as server:
        print(f"{total} distinct concurrent GETs, server delay {DELAY_MS} ms, {rounds} rounds")
        for round_ in range(rounds):
            for name, limit in modes.items():
                elapsed, failures = asyncio.run(_burst(server.url, total, limit))
                failed = sum(failures.values())
                print(f"  round {round_ + 1} {name:<20} {elapsed:7.2f} s  {failed:5d} failed  {dict(failures)}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
