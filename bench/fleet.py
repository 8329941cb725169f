"""Fleet benchmark: one store shared by worker processes through Redis, and warm restarts from SQLite.

Run: `.venv/bin/python -m bench.fleet` (starts its own redis-server, example API and workers).
(a) 8 worker processes each read the same 200 keys: upstream requests with the
    shared store vs without (target: each key fetched once, ratio <= 1/8);
(b) propagation of one worker's PATCH to the 7 others (p50, p99; target p99 <= 100 ms);
(c) a memo-hit read with the shared store on vs off: the same read of the same data, batches
    interleaved, ratio of the medians (target <= 1.1);
(d) write-through cost per stored response (ms, and vs the in-process store write);
(e) a script run twice on a SQLite file: requests of the second run (target 0) and start-up.
The last line sums it up: `fleet: requests_ratio=... propagation_p50_ms=... ...`.
"""

from __future__ import annotations

import asyncio
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._timing import ops_per_sec
from examples.fleet._procs import Worker, start_workers
from examples.fleet.worker import Todo
from examples.redis_server import RedisServer
from examples.todo_api import LocalServer
from restlayer.core import Controller, SharedManager
from restlayer.rest import resource
from restlayer.stores import RedisStore

WORKERS = 8
KEYS = 200
EDITS = 15
MEMO_ROUNDS = 21


def seed(server: LocalServer) -> list[int]:
    """Enough todos for KEYS distinct keys."""
    ids = [t["id"] for t in server.db.find("todos")]
    while len(ids) < KEYS:
        ids.append(server.db.insert("todos", {"userId": 1, "title": f"bench {len(ids)}", "completed": False})["id"])
    return ids[:KEYS]


def requests_for(server: LocalServer, ids: list[int], *store: str) -> int:
    """GETs sent while WORKERS workers each read every id."""
    workers = start_workers(WORKERS, server.url, *store)
    try:
        server.clear_requests()
        for worker in workers:
            worker.send(op="read", ids=ids)
        for worker in workers:
            worker.receive(120)
        return len(server.requests.matching("GET"))
    finally:
        for worker in workers:
            worker.close()


def propagation(server: LocalServer, redis_url: str) -> list[float]:
    """Delays (ms) from one worker's committed PATCH to each other worker's watcher."""
    workers = start_workers(WORKERS, server.url, "--redis", redis_url, "--namespace", secrets.token_hex(4))
    delays: list[float] = []
    try:
        writer, *others = workers
        for worker in workers:
            worker.ask(op="read", ids=[1])
        for edit in range(EDITS):
            title = f"edit {edit}"
            for worker in others:
                worker.ask(op="watch", id=1, title=title)
            sent = writer.ask(op="patch", id=1, title=title)
            delays += [(worker.receive()["at"] - sent["committed"]) * 1000 for worker in others]
    finally:
        for worker in workers:
            worker.close()
    return delays


def per_read_ns(read: Callable[[], object], n: int) -> float:
    """Mean ns of one `read()` over a batch of `n`."""
    start = time.perf_counter_ns()
    for _ in range(n):
        read()
    return (time.perf_counter_ns() - start) / n


def memo_ratio(local: Callable[[], object], shared: Callable[[], object]) -> float:
    """Median per-read time with the shared store over without: batches interleaved, order alternating.

    Both reads must be memo hits of the same data (the same object on every call),
    so the two sides do the same work and only the store behind them differs.
    """
    for read in (local, shared):
        assert read() is read(), "not a memo hit"
    assert local() == shared(), "the two sides read different data"
    n = 1
    while per_read_ns(local, n) * n < 20e6:  # a batch of about 20 ms
        n *= 2
    times: dict[Callable[[], object], list[float]] = {local: [], shared: []}
    for round_ in range(MEMO_ROUNDS):
        for read in (local, shared) if round_ % 2 == 0 else (shared, local):
            times[read].append(per_read_ns(read, n))
    return statistics.median(times[shared]) / statistics.median(times[local])


async def in_process(server: LocalServer, redis_url: str) -> tuple[float, float, float]:
    """(memo-hit ratio shared/local, write-through ms per response, that vs the local store write)."""
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=server.url)
    local = Controller()
    shared = Controller(shared=RedisStore(redis_url, namespace=secrets.token_hex(4)))
    manager = next(m for m in shared.managers if isinstance(m, SharedManager))
    await manager.wait_started()
    for ctrl in (local, shared):
        await ctrl.fetch(todos.get, id=1)
    await manager.flush()
    await asyncio.wait_for(manager.wait_received(1), 10)  # its own announcement merged: nothing left to change
    memo = memo_ratio(lambda: local.cache(todos.get, id=1), lambda: shared.cache(todos.get, id=1))
    body = {"id": 1, "userId": 1, "title": "write", "completed": False}
    local_write = ops_per_sec(lambda: local.set_response(todos.get, {"id": 1}, body))
    n = 300
    start = time.perf_counter()
    for _ in range(n):
        shared.set_response(todos.get, {"id": 1}, body)
        await manager.flush()
    shared_ms = (time.perf_counter() - start) / n * 1000
    local.close()
    shared.close()
    await manager.wait_closed()
    return memo, shared_ms, shared_ms / (1000 / local_write)


def warm_restart(server: LocalServer, ids: list[int]) -> tuple[int, float, float]:
    """(requests of the second run, start-up s of the first, of the second) of a script on a SQLite file."""
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "cache.sqlite3")
        startups = []
        for _ in range(2):
            server.clear_requests()
            start = time.perf_counter()
            worker = Worker(server.url, "--sqlite", path)
            try:
                worker.receive(60)
                startups.append(time.perf_counter() - start)
                worker.ask(op="read", ids=ids)
            finally:
                worker.close()
        return len(server.requests.matching("GET")), startups[0], startups[1]


def main() -> None:
    redis = RedisServer()
    redis.start()
    try:
        with LocalServer() as server:
            ids = seed(server)
            alone = requests_for(server, ids)
            together = requests_for(server, ids, "--redis", redis.url, "--namespace", secrets.token_hex(4))
            ratio = together / alone
            print(
                f"(a) {WORKERS} workers x {KEYS} keys: {alone} requests alone, {together} sharing "
                f"(ratio {ratio:.3f}; target <= {1 / WORKERS:.3f})"
            )
            delays = sorted(propagation(server, redis.url))
            p50 = statistics.median(delays)
            p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
            print(
                f"(b) propagation to {WORKERS - 1} workers, {len(delays)} samples: p50 {p50:.2f} ms, "
                f"p99 {p99:.2f} ms (target p99 <= 100 ms)"
            )
            memo, write_ms, write_ratio = asyncio.run(in_process(server, redis.url))
            print(f"(c) memo-hit read, shared/local: {memo:.3f}x (target <= 1.1)")
            print(f"(d) write-through: {write_ms:.3f} ms per stored response ({write_ratio:.1f}x the local write)")
            requests, first, second = warm_restart(server, ids)
            print(
                f"(e) warm restart: second run sent {requests} requests for {KEYS} keys; "
                f"start-up {first * 1000:.0f} ms then {second * 1000:.0f} ms"
            )
            print(
                f"fleet: requests_ratio={ratio:.3f} propagation_p50_ms={p50:.2f} propagation_p99_ms={p99:.2f} "
                f"memo_ratio={memo:.3f} warm_restart_requests={requests}"
            )
    finally:
        redis.close()


if __name__ == "__main__":
    main()
