"""Real worker processes on one Redis: one upstream request per key for the fleet; an edit reaches every worker;
a killed lock holder holds its key no longer than the lock's limit."""

from __future__ import annotations

import secrets
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from examples.fleet._procs import Worker, start_workers
from examples.redis_server import RedisServer
from restlayer.rest import RestEndpoint
from restlayer.stores import RedisStore
from tests.core._models import gets
from tests.shared._keys import endpoint_store_key


@pytest.fixture
def fleet(api: Any, redis_server: RedisServer, namespace: str) -> Iterator[list[Worker]]:
    workers = start_workers(4, api.url, "--redis", redis_server.url, "--namespace", namespace)
    yield workers
    for worker in workers:
        worker.close()


def test_four_processes_reading_the_same_keys_fetch_each_once(fleet: list[Worker], api: Any) -> None:
    assert all(w.ask(op="memo", n=1) for w in fleet)  # every worker answers
    ids = list(range(1, 7))
    for worker in fleet:
        worker.send(op="read", ids=ids)
    answers = [worker.receive() for worker in fleet]
    assert all(a["titles"] == answers[0]["titles"] for a in answers) and len(answers[0]["titles"]) == 6
    per_key = [len(gets(api, f"/todos/{i}")) for i in ids]
    assert per_key == [1] * 6


def test_an_edit_in_one_process_reaches_every_other(fleet: list[Worker]) -> None:
    writer, *others = fleet
    for worker in fleet:
        worker.ask(op="read", ids=[1])
    for worker in others:
        assert worker.ask(op="watch", id=1, title="edited by the fleet") == {"watching": 1}
    sent = writer.ask(op="patch", id=1, title="edited by the fleet")
    seen = [worker.receive() for worker in others]
    assert all(s["seen"] == 1 and s["at"] >= sent["at"] for s in seen)
    assert all(w.ask(op="read", ids=[1])["titles"] == ["edited by the fleet"] for w in fleet)


def test_without_redis_each_process_fetches_on_its_own(api: Any) -> None:
    workers = start_workers(2, api.url)
    try:
        for worker in workers:
            worker.ask(op="read", ids=[1, 2])
    finally:
        for worker in workers:
            worker.close()
    assert len(gets(api, "/todos/1")) == 2


def _gate_arrivals(api: Any, gate: str, count: int, wait_s: float = 10) -> int:
    """Wait (server side, at most `wait_s`) until `count` requests reached the test route `gate`."""
    reply = httpx.get(
        f"{api.url}{gate}/arrivals", params={"count": count, "ms": int(wait_s * 1000)}, timeout=wait_s + 10
    )
    assert reply.status_code == 200, f"{reply.json()['arrivals']} of {count} requests reached {gate}"
    arrivals: int = reply.json()["arrivals"]
    return arrivals


def _open(api: Any, gate: str) -> None:
    """Release the requests the test route `gate` holds (and every later one)."""
    httpx.post(f"{api.url}{gate}/open", timeout=10).raise_for_status()


def _lock_taken(events: Any) -> None:
    """Wait (at most 10 s) for the next keyspace event telling that the watched lock key was set."""
    deadline = time.monotonic() + 10
    while (left := deadline - time.monotonic()) > 0:
        message = events.get_message(ignore_subscribe_messages=True, timeout=left)
        if message is not None and message["data"] == b"set":
            return
    raise AssertionError("nobody took the lock")


def test_a_killed_lock_holder_releases_the_key_when_its_lock_expires(
    api: Any, redis_server: RedisServer, namespace: str
) -> None:
    """A worker SIGKILLed while it holds a key's fleet lock (its request held open by the API) blocks the
    key only until the lock's limit: then a waiting worker takes the lock itself and fetches once."""
    gate = "/_test/gate/" + secrets.token_hex(6)
    key = endpoint_store_key(RestEndpoint(path=gate, url_prefix=api.url))
    lock_key = RedisStore(redis_server.url, namespace=namespace).lock_key(key)
    holder, waiter = start_workers(
        2, api.url, "--redis", redis_server.url, "--namespace", namespace, "--lock-ms", "1500"
    )
    raw = redis.Redis.from_url(redis_server.url)
    raw.config_set("notify-keyspace-events", "K$")  # a message each time a string key is set
    events = raw.pubsub()  # type: ignore[no-untyped-call]
    events.subscribe(f"__keyspace@0__:{lock_key}")
    try:
        for worker in (holder, waiter):
            worker.ask(op="read", ids=[1])  # HTTP clients made before any lock is held
        holder.send(op="get", path=gate)
        _gate_arrivals(api, gate, 1)
        _lock_taken(events)  # by the holder, before its request went out
        holder.process.kill()
        assert holder.process.wait(10) == -signal.SIGKILL
        waiter.send(op="get", path=gate)
        _gate_arrivals(api, gate, 2, wait_s=30)  # longer than a waiter's rounds before it fetches without the lock
        _lock_taken(events)  # by the waiter: the dead holder's lock expired (SET NX succeeds only then)
        _open(api, gate)
        assert waiter.receive()["got"]["gate"] == gate.rsplit("/", 1)[1]
        assert len(gets(api, gate)) == 2
    finally:
        _open(api, gate)
        events.close()
        raw.close()
        for worker in (holder, waiter):
            worker.close()
