"""RedisStore in one process: write-through, propagation, read-through, the fleet lock, faults (real redis-server)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from redis.crc import key_slot

from examples.redis_server import RedisServer, free_port
from restlayer.core import Controller, SharedManager
from restlayer.errors import ClosedError, ParamError, ResetError, SharedStoreError, StatusError
from restlayer.rest import RestEndpoint, resource
from restlayer.stores import RedisStore
from tests.core._models import Clock, Todo, gets
from tests.shared._keys import Todo2, endpoint_store_key, row_store_key

Make = Callable[..., Controller]


@pytest.fixture
async def make(redis_server: RedisServer, namespace: str) -> AsyncIterator[Make]:
    """Controllers sharing the test's namespace (each with its own connections), connected before use."""
    made: list[Controller] = []

    def build(url: str | None = None, **options: Any) -> Controller:
        lock_ms = options.pop("lock_ms", 5000)
        store = RedisStore(url or redis_server.url, namespace=namespace)
        ctrl = Controller(
            shared=SharedManager(store, lock_ms=lock_ms, clear_on_reset=options.pop("clear_on_reset", False)), **options
        )
        made.append(ctrl)
        return ctrl

    yield build
    for ctrl in made:
        ctrl.close()
        await shared(ctrl).wait_closed()


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[Any]:
    client = aioredis.Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


def title(todo: Todo | None) -> str | None:
    """A stored todo's title (None when it is not stored)."""
    return None if todo is None else todo.title


def shared(ctrl: Controller) -> SharedManager:
    return next(m for m in ctrl.managers if isinstance(m, SharedManager))


async def started(*ctrls: Controller) -> None:
    for ctrl in ctrls:
        assert await asyncio.wait_for(shared(ctrl).wait_started(), 10)


async def until(ctrl: Controller, condition: Callable[[], bool], limit: int = 50) -> None:
    """Wait announcement by announcement (at most `limit`, 10 s) until `condition()` holds."""
    manager = shared(ctrl)

    async def loop() -> None:
        for _ in range(limit):
            if condition():
                return
            await manager.wait_received(manager.received + 1)
        raise AssertionError("condition never held")

    await asyncio.wait_for(loop(), 10)


async def changed_once(ctrl: Controller, endpoint: Any, args: dict[str, Any], test: Callable[[Any], bool]) -> Any:
    """Wait (bounded) until a watch on `endpoint(args)` reports a value passing `test`."""
    seen: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    current = ctrl.cache(endpoint, args)
    if test(current):
        return current

    def callback(value: Any) -> None:
        if test(value) and not seen.done():
            seen.set_result(value)

    unwatch = ctrl.watch(endpoint, args, callback=callback)
    try:
        return await asyncio.wait_for(seen, 10)
    finally:
        unwatch()


async def test_response_is_written_through_with_one_hash_slot_and_a_lifetime(
    make: Make, res: Any, raw: Any, namespace: str
) -> None:
    ctrl = make()
    await started(ctrl)
    await ctrl.fetch(res.Todo.get, id=1)
    await shared(ctrl).flush()
    names = [n.decode() async for n in raw.scan_iter(match=f"rl:{{{namespace}}}:*")]
    assert any(":r:" in n for n in names) and any(":e:" in n for n in names)
    assert {key_slot(n.encode()) for n in names} == {key_slot(namespace.encode())}
    ttl = await raw.pttl(next(n for n in names if ":e:" in n))
    assert 60_000 < ttl <= 60_000 + 600_000


async def test_keep_ms_may_be_a_timedelta(redis_server: RedisServer, namespace: str, res: Any, raw: Any) -> None:
    """`keep_ms=timedelta(...)` used to make every write fail (logged as "not JSON"): nothing reached Redis."""
    store = RedisStore(redis_server.url, namespace=namespace, keep_ms=timedelta(seconds=90))
    assert store.keep_ms == 90_000
    async with Controller(shared=store) as ctrl:
        await ctrl.fetch(res.Todo.get, id=1)
    names = [n.decode() async for n in raw.scan_iter(match=f"rl:{{{namespace}}}:e:*")]
    ttl = await raw.pttl(names[0])
    assert 60_000 < ttl <= 60_000 + 90_000


def test_keep_ms_that_is_not_a_length_of_time_is_refused(redis_server: RedisServer) -> None:
    length: Any = "10 min"  # what a caller without a type checker may pass
    with pytest.raises(ParamError, match="keep_ms"):
        RedisStore(redis_server.url, keep_ms=length)


@pytest.mark.parametrize(
    "options",
    [{"timeout": "30"}, {"timeout": 0}, {"timeout": float("nan")}, {"max_connections": 0}, {"max_connections": 2.5}],
)
def test_a_bad_timeout_or_pool_size_is_refused(redis_server: RedisServer, options: dict[str, Any]) -> None:
    """They were taken as given: every connection then failed and the store was reported unreachable."""
    with pytest.raises(ParamError, match=next(iter(options))):
        RedisStore(redis_server.url, **options)


async def test_other_process_reads_through_without_a_request(make: Make, res: Any, api: Any) -> None:
    first, second = make(), make()
    await started(first, second)
    todo = await first.suspense(res.Todo.get, id=1)
    await shared(first).flush()
    assert await second.suspense(res.Todo.get, id=1) == todo
    assert len(gets(api, "/todos/1")) == 1
    assert second.get(Todo, {"id": 1}) == todo


async def test_explicit_fetch_of_fresh_data_still_sends_a_request(make: Make, res: Any, api: Any) -> None:
    ctrl = make()
    await started(ctrl)
    await ctrl.fetch(res.Todo.get, id=1)
    await ctrl.fetch(res.Todo.get, id=1)
    assert len(gets(api, "/todos/1")) == 2


async def test_an_edit_reaches_the_other_controllers_watchers(make: Make, res: Any) -> None:
    writer, reader = make(), make()
    await started(writer, reader)
    await reader.suspense(res.Todo.get, id=1)
    waiting = asyncio.ensure_future(changed_once(reader, res.Todo.get, {"id": 1}, lambda t: t.title == "shared"))
    await asyncio.sleep(0)
    await writer.fetch(res.Todo.partial_update, {"id": 1}, {"title": "shared"})
    assert (await waiting).title == "shared"
    assert title(reader.cache(res.Todo.get, id=1)) == "shared"


async def test_invalidation_reaches_the_other_controller(make: Make, res: Any) -> None:
    writer, reader = make(), make()
    await started(writer, reader)
    await reader.suspense(res.Todo.get, id=1)
    key = res.Todo.get.key({"id": 1})
    writer.invalidate(res.Todo.get, id=1)
    await until(reader, lambda: bool(reader.get_state().meta[key].get("invalidated")))
    assert key not in reader.get_state().endpoints


async def test_two_writers_converge_on_the_later_started_request(make: Make, res: Any) -> None:
    early, late = Clock(1_000_000), Clock(2_000_000)
    a, b = make(clock=late), make(clock=early)
    await started(a, b)
    a.set_response(res.Todo.get, {"id": 7}, {"id": 7, "title": "later request"})
    await shared(a).flush()
    b.set_response(res.Todo.get, {"id": 7}, {"id": 7, "title": "earlier request"})
    await shared(b).flush()
    await until(b, lambda: title(b.get(Todo, {"id": 7})) == "later request")
    assert title(a.get(Todo, {"id": 7})) == "later request"
    third = make(clock=late)
    await started(third)
    assert (await third.suspense(res.Todo.get, id=7)).title == "later request"


async def test_concurrent_readers_send_one_request_for_the_fleet(make: Make, res: Any, api: Any) -> None:
    ctrls = [make() for _ in range(4)]
    await started(*ctrls)
    results = await asyncio.gather(*(c.suspense(res.slow, ms=200) for c in ctrls))
    assert results == [{"slept": 200}] * 4
    assert len(gets(api, "/_test/slow")) == 1


async def test_a_dead_lock_holder_expires_and_the_waiter_fetches(
    make: Make, res: Any, api: Any, raw: Any, namespace: str
) -> None:
    ctrl = make(lock_ms=300)
    await started(ctrl)
    store = shared(ctrl).store
    assert isinstance(store, RedisStore)
    await raw.set(store.lock_key(endpoint_store_key(res.Todo.get, {"id": 2})), "a-dead-process", px=300)
    todo = await asyncio.wait_for(ctrl.suspense(res.Todo.get, id=2), 10)
    assert todo.id == 2 and len(gets(api, "/todos/2")) == 1


@pytest.mark.parametrize("foreign", ["a string without a lifetime", "a hash"])
async def test_another_programs_value_on_a_lock_key_does_not_hold_the_key(
    make: Make, res: Any, api: Any, raw: Any, foreign: str
) -> None:
    """A value no restlayer process set (every fleet lock has a lifetime) never expires: a reader waited
    8 rounds of `lock_ms` (4 minutes by default) on it before fetching. It is replaced like a dead lock."""
    ctrl = make(lock_ms=60_000)
    await started(ctrl)
    store = shared(ctrl).store
    assert isinstance(store, RedisStore)
    lock = store.lock_key(endpoint_store_key(res.Todo.get, {"id": 2}))
    if foreign == "a hash":
        await raw.hset(lock, mapping={"owner": "another program"})
    else:
        await raw.set(lock, "another program's value")
    todo = await asyncio.wait_for(ctrl.suspense(res.Todo.get, id=2), 10)
    assert todo.id == 2 and len(gets(api, "/todos/2")) == 1
    await shared(ctrl).flush()
    assert not await raw.exists(lock)  # taken over, then released with the response


async def test_a_failed_holder_releases_the_key_for_the_waiters(make: Make, res: Any, api: Any) -> None:
    a, b = make(), make()
    await started(a, b)
    outcomes = await asyncio.gather(
        a.fetch(res.status, code=500), b.fetch(res.status, code=500), return_exceptions=True
    )
    assert all(isinstance(o, Exception) for o in outcomes)
    assert 1 <= len(gets(api, "/_test/status/500")) <= 2


async def test_malformed_value_in_redis_is_ignored_and_logged(
    make: Make, res: Any, api: Any, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ctrl = make()
    await started(ctrl)
    store = shared(ctrl).store
    assert isinstance(store, RedisStore)
    await raw.hset(
        store.endpoint_key(endpoint_store_key(res.Todo.get, {"id": 1})), mapping={"f": "1", "d": "{not json"}
    )
    await raw.publish(store.channel, json.dumps({"e": [[row_store_key(Todo), "1", "not a dict", {}]]}))
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        todo = await ctrl.suspense(res.Todo.get, id=1)
    assert todo.title == "delectus aut autem" and len(gets(api, "/todos/1")) == 1
    assert "malformed" in caplog.text


async def test_reset_clears_the_namespace_only_when_asked(make: Make, res: Any, raw: Any, namespace: str) -> None:
    keeper, clearer = make(), make(clear_on_reset=True)
    await started(keeper, clearer)
    await keeper.fetch(res.Todo.get, id=1)
    await shared(keeper).flush()
    pattern = f"rl:{{{namespace}}}:*"
    keeper.reset_entire_store()
    await shared(keeper).flush()
    assert [n async for n in raw.scan_iter(match=pattern)]
    clearer.reset_entire_store()
    await shared(clearer).flush()
    assert [n async for n in raw.scan_iter(match=pattern)] == []


async def test_a_reset_clearing_the_namespace_makes_the_other_processes_drop_their_copies(
    make: Make, res: Any, api: Any
) -> None:
    """Told nothing, the others went on serving what the reset cleared as fresh until it expired."""
    keeper, clearer = make(), make(clear_on_reset=True)
    await started(keeper, clearer)
    await keeper.fetch(res.Todo.get, id=1)
    await shared(keeper).flush()
    clearer.reset_entire_store()
    await shared(clearer).flush()
    await until(keeper, lambda: keeper.cache(res.Todo.get, id=1) is None)
    assert (await asyncio.wait_for(keeper.suspense(res.Todo.get, id=1), 10)).id == 1
    assert len(gets(api, "/todos/1")) == 2  # fetched again, as after a reset of its own


async def test_unreachable_at_start_works_locally_then_rejoins(
    private_redis: RedisServer, make: Make, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    private_redis.stop()
    ctrl = make(private_redis.url)
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        assert await asyncio.wait_for(shared(ctrl).wait_started(), 10) is False
        assert (await ctrl.suspense(res.Todo.get, id=1)).id == 1
    assert caplog.text.count("unreachable") == 1
    private_redis.start()
    await asyncio.wait_for(shared(ctrl).wait_online(), 20)
    other = make(private_redis.url)
    await started(other)
    await ctrl.fetch(res.Todo.get, id=3)
    await shared(ctrl).flush()
    assert (await other.suspense(res.Todo.get, id=3)).id == 3
    assert len(gets(api, "/todos/3")) == 1


async def test_redis_dying_mid_run_logs_once_and_reads_keep_working(
    private_redis: RedisServer, make: Make, res: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ctrl = make(private_redis.url)
    await started(ctrl)
    await ctrl.fetch(res.Todo.get, id=1)
    await shared(ctrl).flush()
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        private_redis.stop()
        for todo_id in (2, 3, 4):
            assert (await asyncio.wait_for(ctrl.fetch(res.Todo.get, id=todo_id), 10)).id == todo_id
        assert ctrl.cache(res.Todo.get, id=1) == await ctrl.suspense(res.Todo.get, id=1)
    assert caplog.text.count("unreachable") == 1
    private_redis.start()
    await asyncio.wait_for(shared(ctrl).wait_online(), 20)
    assert ctrl.get_response(res.Todo.get, id=1).expires_at == 1  # coarse resync: local data expired


async def test_an_invalidation_made_while_redis_was_down_is_shared_when_it_is_back(
    private_redis: RedisServer, make: Make, res: Any, api: Any
) -> None:
    """Dropped, it would let the next read take Redis's older copy as fresh: the invalidated data back, no request."""
    ctrl = make(private_redis.url)
    await started(ctrl)
    await ctrl.fetch(res.Todo.get, id=1)
    await ctrl.fetch(res.Todo.get, id=2)
    await shared(ctrl).flush()
    private_redis.stop()
    await asyncio.wait_for(ctrl.fetch(res.Todo.get, id=3), 10)  # notices Redis is gone
    assert not shared(ctrl).online
    ctrl.invalidate(res.Todo.get, id=1)
    ctrl.invalidate_all(lambda key: key.endswith("/todos/2"))
    private_redis.start()
    await asyncio.wait_for(shared(ctrl).wait_online(), 20)
    other = make(private_redis.url)
    await started(other)
    for todo_id in (1, 2):
        await asyncio.wait_for(ctrl.suspense(res.Todo.get, id=todo_id), 10)
        assert len(gets(api, f"/todos/{todo_id}")) == 2  # fetched again, not read back from Redis
    await shared(ctrl).flush()
    await asyncio.wait_for(other.suspense(res.Todo.get, id=1), 10)
    assert len(gets(api, "/todos/1")) == 2  # the fresh copy is the shared one now


async def test_a_page_is_requested_even_when_the_list_it_extends_is_shared(make: Make, api: Any) -> None:
    """A page's key is its list's key: read through, the shared list answered the page and it was never sent."""
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, pagination_field="page")
    first = make()
    await started(first)
    await first.fetch(todos.get_list, {"limit": 2})
    await shared(first).flush()
    second = make()  # started after: it holds nothing, so it reads the list key through from Redis
    await started(second)
    await asyncio.wait_for(second.fetch(todos.get_list.get_page, {"limit": 2, "page": 2}), 10)
    queries = [r.query for r in api.requests.matching("GET", "/todos")]
    assert queries == ["limit=2", "limit=2&page=2"]


def test_namespace_with_braces_is_refused() -> None:
    with pytest.raises(SharedStoreError, match="namespace"):
        RedisStore("redis://127.0.0.1:1/0", namespace="a}b")


async def test_expire_all_reaches_keys_only_other_processes_hold(make: Make, res: Any) -> None:
    holder, other = make(), make()
    await started(holder, other)
    await holder.suspense(res.Todo.get, id=4)
    await shared(holder).flush()
    other.expire_all(lambda key: key.endswith("/todos/4"))
    await until(holder, lambda: holder.get_response(res.Todo.get, id=4).expires_at == 1)
    assert title(holder.cache(res.Todo.get, id=4)) == "et porro tempora"  # stale data is still served


async def test_set_of_an_entity_reaches_the_other_controller(make: Make, res: Any) -> None:
    writer, reader = make(), make()
    await started(writer, reader)
    await reader.suspense(res.Todo.get, id=5)
    writer.set(Todo, {"id": 5}, {"id": 5, "title": "set by another process"})
    await until(reader, lambda: title(reader.get(Todo, {"id": 5})) == "set by another process")


async def test_a_push_reaches_the_other_controllers_list_and_later_read_throughs(
    make: Make, res: Any, api: Any
) -> None:
    """A push rewrites the stored list, not only the new entity: both are shared (and so are later reads)."""
    writer, reader = make(), make()
    await started(writer, reader)
    await writer.fetch(res.Todo.get_list, {"userId": 1})
    await shared(writer).flush()
    await reader.suspense(res.Todo.get_list, {"userId": 1})
    created = await writer.fetch(res.Todo.get_list.push, {"userId": 1}, {"title": "pushed", "userId": 1})
    await shared(writer).flush()
    await until(reader, lambda: created.id in [t.id for t in reader.cache(res.Todo.get_list, {"userId": 1}) or []])
    late = make()
    await started(late)
    requests = len(gets(api, "/todos"))
    listed = await late.suspense(res.Todo.get_list, {"userId": 1})
    assert [t.id for t in listed] == [1, 2, 3, created.id]
    assert len(gets(api, "/todos")) == requests  # read through Redis, the pushed todo included


async def test_a_reset_releases_the_fleet_lock_of_the_request_it_drops(make: Make, api: Any, raw: Any) -> None:
    """The dropped request writes nothing, so the reset itself must free its key for the other processes."""
    ctrl = make()
    await started(ctrl)
    gate = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)
    name = "reset-" + secrets.token_hex(4)
    store = shared(ctrl).store
    assert isinstance(store, RedisStore)
    fetching = asyncio.ensure_future(ctrl.fetch(gate, name=name))
    async with httpx.AsyncClient() as client:
        arrived = await client.get(f"{api.url}/_test/gate/{name}/arrivals", params={"count": 1}, timeout=20)
        assert arrived.status_code == 200
        assert await raw.exists(
            store.lock_key(endpoint_store_key(gate, {"name": name}))
        )  # taken before the request went out
        ctrl.reset_entire_store()
        with pytest.raises(ResetError):
            await fetching
        await shared(ctrl).flush()
        assert not await raw.exists(store.lock_key(endpoint_store_key(gate, {"name": name})))
        (await client.post(f"{api.url}/_test/gate/{name}/open", timeout=10)).raise_for_status()


_UNCLOSED = """
import asyncio, sys
from restlayer import Controller, RestEndpoint
from restlayer.core import SharedManager
from restlayer.stores import RedisStore

async def main(redis_url, api_url):
    ctrl = Controller(shared=SharedManager(RedisStore(redis_url, namespace=sys.argv[3])))
    await ctrl.fetch(RestEndpoint(path="/todos/1", url_prefix=api_url))
    # returns with the write of that reply still queued, and without ctrl.close()

asyncio.run(main(sys.argv[1], sys.argv[2]))
print("asyncio.run returned")
"""


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tasks count cancellation requests from Python 3.11")
def test_asyncio_run_returns_when_a_shared_controller_is_left_open(
    redis_server: RedisServer, api: Any, namespace: str
) -> None:
    """asyncio.run cancels the write loop mid-write; a client turning that into a connection error must not
    keep it looping (a hang, so the child runs under a generous limit)."""
    child = subprocess.run(
        [sys.executable, "-c", _UNCLOSED, redis_server.url, api.url, namespace],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "asyncio.run returned" in child.stdout, child.stderr[-2000:]


async def test_a_remove_reaches_the_other_controllers_list(make: Make, res: Any) -> None:
    writer, reader = make(), make()
    await started(writer, reader)
    await writer.fetch(res.Todo.get_list, {"userId": 1})
    await shared(writer).flush()
    await reader.suspense(res.Todo.get_list, {"userId": 1})
    writer.set_response(res.Todo.get_list.remove, {"userId": 1}, {"id": 3}, {"id": 3, "userId": 1})
    await shared(writer).flush()
    await until(reader, lambda: [t.id for t in reader.cache(res.Todo.get_list, {"userId": 1}) or []] == [1, 2])


async def test_closing_a_controller_whose_fetch_waits_on_the_fleet_lock_raises_closed_error(
    make: Make, api: Any
) -> None:
    """A read-through waiting for another process's request is in flight too: closing must not strand its caller."""
    holder, waiter = make(), make()
    await started(holder, waiter)
    gate = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)
    name = "close-" + secrets.token_hex(4)
    holding = asyncio.ensure_future(holder.fetch(gate, name=name))
    async with httpx.AsyncClient() as client:
        arrived = await client.get(f"{api.url}/_test/gate/{name}/arrivals", params={"count": 1}, timeout=20)
        assert arrived.status_code == 200
        waiting = asyncio.ensure_future(waiter.fetch(gate, name=name))
        await asyncio.sleep(0)
        waiter.close()
        with pytest.raises(ClosedError):
            await asyncio.wait_for(waiting, 10)
        (await client.post(f"{api.url}/_test/gate/{name}/open", timeout=10)).raise_for_status()
    assert (await asyncio.wait_for(holding, 10))["gate"] == name
    assert len(gets(api, f"/_test/gate/{name}")) == 1


@pytest.mark.parametrize("how", ["invalidate_all", "expire_all"])
async def test_a_read_right_after_invalidating_or_expiring_fetches_instead_of_reading_the_old_shared_copy(
    private_redis: RedisServer, res: Any, api: Any, namespace: str, how: str
) -> None:
    """The invalidation reaches Redis before the read-through that follows it looks there.

    Many unrelated keys make the invalidation's key scan take several round trips, so a
    read sent meanwhile would find the old copy.
    """
    filler = aioredis.Redis.from_url(private_redis.url)
    async with filler.pipeline(transaction=False) as pipe:
        for i in range(20_000):
            pipe.set(f"unrelated:{i}", "x")
        await pipe.execute()
    await filler.aclose()
    writer, reader = (Controller(shared=RedisStore(private_redis.url, namespace=namespace)) for _ in range(2))
    try:
        await started(writer, reader)
        await writer.fetch(res.Todo.get, id=1)
        await shared(writer).flush()
        await reader.suspense(res.Todo.get, id=1)
        async with httpx.AsyncClient() as client:
            changed = await client.patch(f"{api.url}/todos/1", json={"title": "changed upstream"}, timeout=10)
            changed.raise_for_status()
        getattr(reader, how)(res.Todo.get.test_key)
        requests = len(gets(api, "/todos/1"))
        todo = await reader.fetch_if_stale(res.Todo.get, id=1)
        assert todo.title == "changed upstream"
        assert len(gets(api, "/todos/1")) == requests + 1
    finally:
        for ctrl in (writer, reader):
            ctrl.close()
            await shared(ctrl).wait_closed()


async def test_a_test_key_raising_on_another_processs_key_does_not_stop_the_shared_writes(
    make: Make, res: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """`expire_all`'s test also runs on keys only Redis holds; a failure there skips that write, not all later ones."""
    other = make()
    await started(other)
    await other.fetch(res.Todo.get, id=2)
    await shared(other).flush()
    ctrl = make()
    await started(ctrl)
    await ctrl.fetch(res.Todo.get, id=1)
    known = res.Todo.get.key({"id": 1})
    ctrl.expire_all(lambda key: {known: True}[key])  # a KeyError for the key only Redis holds
    await asyncio.wait_for(shared(ctrl).flush(), 10)
    assert "KeyError" in caplog.text
    assert (await asyncio.wait_for(ctrl.suspense(res.Todo.get, id=3), 10)).id == 3
    await ctrl.fetch(res.Todo.partial_update, {"id": 1}, {"title": "still shared"})
    await shared(ctrl).flush()
    assert (await asyncio.wait_for(other.suspense(res.Todo.get, id=1), 10)).title == "still shared"


async def test_a_fetch_waiting_on_the_fleet_lock_goes_out_at_once_when_redis_dies(
    private_redis: RedisServer, api: Any, namespace: str
) -> None:
    """Waiting for the holder's announcement is pointless once Redis is gone: not a wait of `lock_ms`."""
    holder, waiter = (
        Controller(shared=SharedManager(RedisStore(private_redis.url, namespace=namespace), lock_ms=60_000))
        for _ in range(2)
    )
    gate = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)
    name = "dies-" + secrets.token_hex(4)
    try:
        await started(holder, waiter)
        holding = asyncio.ensure_future(holder.fetch(gate, name=name))
        async with httpx.AsyncClient() as client:
            arrivals = f"{api.url}/_test/gate/{name}/arrivals"
            assert (await client.get(arrivals, params={"count": 1}, timeout=20)).status_code == 200
            waiting = asyncio.ensure_future(waiter.fetch(gate, name=name))
            key = gate.key({"name": name})
            for _ in range(1000):  # until the waiter waits for the holder's announcement
                if key in shared(waiter)._waiters:
                    break
                await asyncio.sleep(0.01)
            assert key in shared(waiter)._waiters
            private_redis.stop()
            # the waiter's own request arrives, well before lock_ms (60 s)
            assert (await client.get(arrivals, params={"count": 2, "ms": 15_000}, timeout=30)).status_code == 200
            (await client.post(f"{api.url}/_test/gate/{name}/open", timeout=10)).raise_for_status()
        assert (await asyncio.wait_for(waiting, 10))["gate"] == name
        assert (await asyncio.wait_for(holding, 10))["gate"] == name
    finally:
        for ctrl in (holder, waiter):
            ctrl.close()
            await shared(ctrl).wait_closed()


async def test_one_store_given_to_two_controllers_is_refused_with_a_clear_error(
    redis_server: RedisServer, namespace: str
) -> None:
    """A store holds one controller's connection and subscription: a second would take them over, back and forth."""
    store = RedisStore(redis_server.url, namespace=namespace)
    first = Controller(shared=store)
    try:
        with pytest.raises(ParamError, match="already the shared store of another Controller"):
            Controller(shared=store)
        with pytest.raises(ParamError, match="already the shared store of another Controller"):
            Controller(shared=shared(first))
        await started(first)
        assert shared(first).online
    finally:
        first.close()
        await shared(first).wait_closed()
    second = Controller(shared=store)  # free again once the first is closed
    try:
        await started(second)
    finally:
        second.close()
        await shared(second).wait_closed()


async def test_a_locked_fetch_that_joins_a_request_already_in_flight_releases_the_lock_with_its_reply(
    make: Make, api: Any, raw: Any
) -> None:
    """An explicit fetch of fresh data goes out without the lock; a read-through of the key made stale meanwhile
    takes the lock and joins that request. Its reply must release the lock (not leave it extended for good)."""
    ctrl = make()
    await started(ctrl)
    name = "join-" + secrets.token_hex(4)
    gate = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)
    store = shared(ctrl).store
    assert isinstance(store, RedisStore)
    lock = store.lock_key(endpoint_store_key(gate, {"name": name}))
    ctrl.set_response(gate, {"name": name}, {"gate": name})  # fresh locally: an explicit fetch skips the lock
    direct = asyncio.ensure_future(ctrl.fetch(gate, name=name))
    async with httpx.AsyncClient() as client:
        arrivals = f"{api.url}/_test/gate/{name}/arrivals"
        assert (await client.get(arrivals, params={"count": 1}, timeout=20)).status_code == 200
        assert not await raw.exists(lock)
        ctrl.expire_all(gate.test_key)
        joining = asyncio.ensure_future(ctrl.fetch(gate, name=name))  # stale now: read-through, takes the lock
        for _ in range(1000):
            if await raw.exists(lock):
                break
            await asyncio.sleep(0.01)
        assert await raw.exists(lock)
        (await client.post(f"{api.url}/_test/gate/{name}/open", timeout=10)).raise_for_status()
    assert (await asyncio.wait_for(direct, 10))["gate"] == name
    assert (await asyncio.wait_for(joining, 10))["gate"] == name
    assert len(gets(api, f"/_test/gate/{name}")) == 1
    await shared(ctrl).flush()
    assert not await raw.exists(lock)


@pytest.mark.parametrize("response", [{"title": "no id"}, [1, 2], "text"])
async def test_a_shared_copy_that_does_not_fit_the_schema_is_ignored_and_the_data_fetched(
    make: Make, res: Any, api: Any, raw: Any, caplog: pytest.LogCaptureFixture, response: object
) -> None:
    """A well-formed record whose response the endpoint's schema cannot read (another app, an older version)."""
    ctrl = make()
    await started(ctrl)
    store = shared(ctrl).store
    assert isinstance(store, RedisStore)
    now = ctrl.now()
    meta = {"fetched_at": now, "date": now, "expires_at": now + 60_000}
    record = {"response": response, "result": None, "meta": meta, "deps": []}
    await raw.hset(
        store.endpoint_key(endpoint_store_key(res.Todo.get, {"id": 1})), mapping={"f": now, "d": json.dumps(record)}
    )
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        todo = await ctrl.suspense(res.Todo.get, id=1)
    assert todo.title == "delectus aut autem" and len(gets(api, "/todos/1")) == 1
    assert "does not fit" in caplog.text
    assert (await ctrl.fetch(res.Todo.get, id=1)).title == "delectus aut autem"


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379/0", "127.0.0.1:6379", "redis://127.0.0.1:port/0"])
def test_a_malformed_redis_url_is_refused_at_once(url: str) -> None:
    """Not later, in the background, where it left every fetch waiting for a connection that never came."""
    with pytest.raises(SharedStoreError, match="URL"):
        RedisStore(url)


async def test_a_database_the_server_does_not_have_is_reported_at_once_not_retried(
    redis_server: RedisServer, namespace: str, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """`/99` on a 16-database server was taken for an outage: retried every 2 s for ever, with a warning."""
    store = RedisStore(redis_server.url.rsplit("/", 1)[0] + "/99", namespace=namespace)
    manager = SharedManager(store)
    ctrl = Controller(shared=manager)
    try:
        with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
            assert await asyncio.wait_for(manager.wait_started(), 10) is False
        assert "DB index is out of range" in caplog.text and "cannot be used" in caplog.text  # not retried
        assert "unreachable" not in caplog.text
        assert (await ctrl.fetch(res.Todo.get, id=1)).title == "delectus aut autem"  # the local store works
    finally:
        ctrl.close()
        await manager.wait_closed()


class _HeldRows(RedisStore):
    """A RedisStore whose `rows` (a read-through's look for entities its snapshot lacks) waits for `release`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def rows(self, refs: Any) -> Any:
        self.entered.set()
        await self.release.wait()
        return await super().rows(refs)


async def test_a_reset_while_a_read_through_reads_missing_entities_stores_none_of_them(
    make: Make, res: Any, redis_server: RedisServer, namespace: str
) -> None:
    """A list grown by another process's push names an entity its stored snapshot lacks; a reset while
    that entity is read from Redis drops the read like a request in flight: its rows are not stored."""
    created = await _push_from_another_process(make(), res)
    store = _HeldRows(redis_server.url, namespace=namespace)
    reader = Controller(shared=store)
    try:
        await started(reader)
        await _reset_while_reading_missing_rows(reader, store, res)
        assert reader.get(Todo, {"id": created.id}) is None
        assert reader.get_state()["entities"] == {}
    finally:
        reader.close()
        await shared(reader).wait_closed()


async def _push_from_another_process(writer: Controller, res: Any) -> Any:
    """`writer` fetches user 1's list and pushes to it, shared at once; returns the created item."""
    await started(writer)
    await writer.fetch(res.Todo.get_list, {"userId": 1})
    created = await writer.fetch(res.Todo.get_list.push, {"userId": 1}, {"title": "pushed", "userId": 1})
    await shared(writer).flush()
    return created


async def _reset_while_reading_missing_rows(reader: Controller, store: _HeldRows, res: Any) -> None:
    """Fetch user 1's list on `reader`, reset while `store` holds the read of its missing rows; the fetch
    must end in ResetError."""
    reading = asyncio.ensure_future(reader.fetch(res.Todo.get_list, {"userId": 1}))
    await asyncio.wait_for(store.entered.wait(), 10)
    reader.reset_entire_store()
    store.release.set()
    with pytest.raises(ResetError):
        await asyncio.wait_for(reading, 10)
    await shared(reader).flush()


async def test_a_second_reset_at_the_same_clock_time_still_drops_a_read_through(
    make: Make, res: Any, redis_server: RedisServer, namespace: str
) -> None:
    """Resets are told apart by count, not by their time: on an injected clock that does not move,
    a reset during the read of missing entities came at the time of an earlier one."""
    writer = make()
    created = await _push_from_another_process(writer, res)
    store = _HeldRows(redis_server.url, namespace=namespace)
    frozen = writer.now()
    reader = Controller(shared=store, clock=lambda: frozen)
    try:
        await started(reader)
        reader.reset_entire_store()  # an earlier reset, at the very same time
        await _reset_while_reading_missing_rows(reader, store, res)
        assert reader.get(Todo, {"id": created.id}) is None
    finally:
        reader.close()
        await shared(reader).wait_closed()


async def test_foreign_values_in_the_namespace_neither_take_the_store_offline_nor_block_writes(
    make: Make, res: Any, api: Any, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Another program's values under restlayer's key names (a string where a hash belongs, a hash with a
    non-numeric time, a key name that is not UTF-8): a read takes them as absent, a write replaces them,
    `invalidate_all` reaches the other keys, and the store stays online throughout."""
    ctrl = make()
    await started(ctrl)
    manager = shared(ctrl)
    store = manager.store
    assert isinstance(store, RedisStore)
    await raw.set(store.endpoint_key(endpoint_store_key(res.Todo.get, {"id": 1})), "another program's value")
    await raw.set(store.entity_key(row_store_key(Todo), "2"), "another program's value")
    await raw.hset(
        store.endpoint_key(endpoint_store_key(res.Todo.get, {"id": 3})), mapping={"f": "yesterday", "d": "{}"}
    )
    await raw.set(store.prefix.encode() + b"r:\xff\xfe", "not UTF-8")
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        for pk in (1, 2, 3):
            assert (await asyncio.wait_for(ctrl.fetch(res.Todo.get, id=pk), 10)).id == pk
            await manager.flush()
            assert manager.online, f"offline after todo {pk}"
        ctrl.invalidate_all(res.Todo.get.test_key)
        await manager.flush()
    assert manager.online and "unreachable" not in caplog.text and "skipped" not in caplog.text
    assert len(gets(api, "/todos/1")) == 1
    for pk in (1, 2, 3):  # written over the foreign values, then invalidated for the whole fleet
        assert not await raw.exists(store.endpoint_key(endpoint_store_key(res.Todo.get, {"id": pk})))
    assert json.loads(await raw.hget(store.entity_key(row_store_key(Todo), "2"), "d"))[2]["id"] == 2


def test_store_options_of_the_wrong_kind_are_refused_when_the_store_is_made() -> None:
    """keep_ms (ms, or a timedelta), timeout (seconds) and max_connections: a value of the wrong kind made
    every write fail (logged as "not JSON") or the connection fail later, far from the cause."""
    url = "redis://127.0.0.1:1/0"
    assert RedisStore(url, keep_ms=timedelta(seconds=5)).keep_ms == 5_000
    for options in ({"keep_ms": "600"}, {"keep_ms": -1}, {"timeout": "30"}, {"timeout": 0}, {"max_connections": 0}):
        with pytest.raises(ParamError, match=next(iter(options))):
            RedisStore(url, **options)


async def test_a_foreign_announcement_nested_too_deep_is_ignored_without_going_offline(
    make: Make, res: Any, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Another program publishing on the namespace's channel: JSON nested deeper than Python parses
    (RecursionError, not ValueError) is a malformed announcement like any other, not a dropped connection."""
    writer, reader = make(), make()
    await started(writer, reader)
    store = shared(reader).store
    assert isinstance(store, RedisStore)
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        await raw.publish(store.channel, "[" * 100_000 + "]" * 100_000)
        writer.set(Todo, {"id": 5}, {"id": 5, "title": "after the noise"})
        await until(reader, lambda: title(reader.get(Todo, {"id": 5})) == "after the noise")
    assert shared(reader).online and "unreachable" not in caplog.text
    assert "malformed announcement" in caplog.text


async def test_an_announced_row_of_the_wrong_kind_is_ignored_and_reads_keep_their_data(
    make: Make, res: Any, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A row whose record is a list under an entity's key (or an object under a list's key), announced by
    another program or version, reached the local store: reading the entity raised TypeError in watchers
    and then served an empty `Todo()` to every reader. Such a row is malformed: logged, never stored."""
    writer, reader = make(), make()
    await started(writer, reader)
    store = shared(reader).store
    assert isinstance(store, RedisStore)
    await reader.fetch(res.Todo.get, id=1)
    await reader.fetch(res.Todo.get_list)
    meta = {"fetched_at": 9e12, "date": 9e12, "expires_at": 9.9e12}
    list_key = next(key for key in reader.get_state()["entities"] if key.startswith("["))
    (list_pk,) = reader.get_state()["entities"][list_key]
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        stored_list = row_store_key(res.Todo.get_list.schema, list_key)
        rows = [[row_store_key(Todo), "1", ["1", "2"], meta], [stored_list, list_pk, {"not": "a list"}, meta]]
        await raw.publish(store.channel, json.dumps({"e": rows}))
        writer.set(Todo, {"id": 5}, {"id": 5, "title": "after the foreign rows"})
        await until(reader, lambda: title(reader.get(Todo, {"id": 5})) == "after the foreign rows")
        for _ in range(2):  # a failed read must not leave a half-built entity behind for the next one
            assert title(reader.cache(res.Todo.get, id=1)) == "delectus aut autem"
            assert [t.id for t in reader.cache(res.Todo.get_list) or ()][:2] == [1, 2]
    assert "malformed" in caplog.text and "failed" not in caplog.text


async def test_an_announced_row_started_at_an_infinite_time_is_ignored(
    make: Make, res: Any, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A row with `fetched_at` Infinity (JSON that Python reads; no clock gives it) won every later merge:
    the entity was pinned in the process, its own PATCH's reply lost to it, and its next write carried
    the pinned row into Redis for the whole fleet. Such a time is malformed: the row is ignored."""
    writer, reader = make(), make()
    await started(writer, reader)
    store = shared(reader).store
    assert isinstance(store, RedisStore)
    await reader.fetch(res.Todo.get, id=1)
    forever = {"fetched_at": math.inf, "date": math.inf, "expires_at": math.inf}
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        await raw.publish(
            store.channel, json.dumps({"e": [[row_store_key(Todo), "1", {"id": 1, "title": "pinned"}, forever]]})
        )
        writer.set(Todo, {"id": 5}, {"id": 5, "title": "after the foreign row"})
        await until(reader, lambda: title(reader.get(Todo, {"id": 5})) == "after the foreign row")
    assert title(reader.cache(res.Todo.get, id=1)) == "delectus aut autem"
    assert "malformed" in caplog.text
    edited = await reader.fetch(res.Todo.partial_update, {"id": 1}, {"title": "edited"})
    assert edited.title == "edited" and title(reader.get(Todo, {"id": 1})) == "edited"


@pytest.mark.parametrize("refusal", ["out of memory", "read-only replica"])
async def test_a_redis_refusing_writes_is_not_an_outage(
    private_redis: RedisServer, make: Make, res: Any, caplog: pytest.LogCaptureFixture, refusal: str
) -> None:
    """Taken for a lost connection, every refused write reconnected and expired all local data (two warnings each)."""
    ctrl = make(private_redis.url)
    await started(ctrl)
    await ctrl.fetch(res.Todo.get, id=1)
    await shared(ctrl).flush()
    fresh_until = ctrl.get_response(res.Todo.get, id=1).expires_at
    admin = aioredis.Redis.from_url(private_redis.url)
    try:
        if refusal == "out of memory":
            await admin.config_set("maxmemory-policy", "noeviction")
            await admin.config_set("maxmemory", "1")
        else:
            await admin.replicaof("127.0.0.1", free_port())
        with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
            for todo_id in (2, 3):
                assert (await asyncio.wait_for(ctrl.fetch(res.Todo.get, id=todo_id), 10)).id == todo_id
                await shared(ctrl).flush()
        await (admin.config_set("maxmemory", "0") if refusal == "out of memory" else admin.replicaof("NO", "ONE"))
        seen = shared(ctrl).received
        await ctrl.fetch(res.Todo.get, id=4)
        await until(ctrl, lambda: shared(ctrl).received > seen)  # its own announcement of todo 4 came back
    finally:
        await admin.aclose()
    assert caplog.text.count("refused a write") == 1 and "unreachable" not in caplog.text
    assert shared(ctrl).online
    assert ctrl.get_response(res.Todo.get, id=1).expires_at == fresh_until  # not expired as after an outage


async def _offline_after_a_snapshot(private_redis: RedisServer, make: Make, res: Any) -> Controller:
    """A controller that fetched todo 1, which Redis then saved in a snapshot, and saw Redis stop."""
    ctrl = make(private_redis.url)
    await started(ctrl)
    await ctrl.fetch(res.Todo.get, id=1)
    await shared(ctrl).flush()
    admin = aioredis.Redis.from_url(private_redis.url)
    try:
        await admin.save()  # the restarted server loads this snapshot: todo 1 as first fetched
    finally:
        await admin.aclose()
    private_redis.stop()
    await asyncio.wait_for(ctrl.fetch(res.Todo.get, id=3), 10)  # notices Redis is gone
    return ctrl


async def test_an_edit_made_while_redis_was_down_is_shared_when_it_is_back(
    private_redis: RedisServer, make: Make, res: Any, api: Any
) -> None:
    """Dropped, the Redis that restarted from its snapshot kept the pre-edit row as fresh for every process."""
    ctrl = await _offline_after_a_snapshot(private_redis, make, res)
    assert not shared(ctrl).online
    ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "edited while redis was down"})
    private_redis.start()
    await asyncio.wait_for(shared(ctrl).wait_online(), 20)
    await asyncio.wait_for(shared(ctrl).flush(), 10)
    other = make(private_redis.url)
    await started(other)
    todo = await asyncio.wait_for(other.suspense(res.Todo.get, id=1), 10)
    assert todo.title == "edited while redis was down" and len(gets(api, "/todos/1")) == 1


async def test_more_edits_while_redis_was_down_than_are_kept_expire_every_shared_key(
    private_redis: RedisServer, make: Make, res: Any, api: Any
) -> None:
    """The oldest edits kept for the rejoin are dropped past the limit: the rows they replaced must not stay fresh."""
    ctrl = await _offline_after_a_snapshot(private_redis, make, res)
    ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "edited while redis was down"})
    for todo_id in range(1000, 2001):
        ctrl.set(Todo, {"id": todo_id}, {"id": todo_id, "title": "filler"})
    private_redis.start()
    await asyncio.wait_for(shared(ctrl).wait_online(), 20)
    await asyncio.wait_for(shared(ctrl).flush(), 30)
    other = make(private_redis.url)
    await started(other)
    await asyncio.wait_for(other.suspense(res.Todo.get, id=1), 10)
    assert len(gets(api, "/todos/1")) == 2  # expired in Redis: fetched again, not the pre-edit row as fresh


async def test_fleets_in_two_databases_of_one_server_do_not_merge_each_others_rows(
    redis_server: RedisServer, namespace: str, res: Any
) -> None:
    """Redis publishes to the clients of every database: the other database's fleet took these rows as its own."""
    base = redis_server.url.rsplit("/", 1)[0]
    first = Controller(shared=SharedManager(RedisStore(f"{base}/0", namespace=namespace)))
    second = Controller(shared=SharedManager(RedisStore(f"{base}/1", namespace=namespace)))
    try:
        await started(first, second)
        await second.fetch(res.Todo.get, id=1)
        await shared(second).flush()
        first.set(Todo, {"id": 1}, {"id": 1, "title": "the other database's"})
        await shared(first).flush()
        seen = shared(second).received
        second.set(Todo, {"id": 2}, {"id": 2, "title": "its own"})  # announced after the other's, in order
        await until(second, lambda: shared(second).received > seen)
        assert title(second.get(Todo, {"id": 2})) == "its own"
        assert title(second.get(Todo, {"id": 1})) == "delectus aut autem"
    finally:
        for ctrl in (first, second):
            ctrl.close()
            await shared(ctrl).wait_closed()


async def configure_redis(url: str, name: str, value: str) -> None:
    """Set one configuration option of the (private) Redis server at `url`."""
    admin = aioredis.Redis.from_url(url)
    try:
        await admin.config_set(name, value)
    finally:
        await admin.aclose()


async def test_a_write_redis_drops_the_connection_for_is_not_retried_for_good(
    private_redis: RedisServer, make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    """Kept and sent again at each rejoin, it would take the store offline for good, holding back the rest."""
    await configure_redis(private_redis.url, "client-query-buffer-limit", "1mb")  # it closes a larger call's connection
    writer, reader = make(private_redis.url), make(private_redis.url)
    await started(writer, reader)
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        writer.set(Todo, {"id": 1}, {"id": 1, "title": "x" * 3_000_000})
        writer.set(Todo, {"id": 2}, {"id": 2, "title": "shared after it"})
        await until(reader, lambda: title(reader.get(Todo, {"id": 2})) == "shared after it")
    assert "dropped a shared-store write" in caplog.text


async def test_a_value_larger_than_redis_lets_a_subscriber_buffer_reaches_the_fleet_without_an_outage(
    private_redis: RedisServer, make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    """Announced whole, it made Redis disconnect every subscriber: the whole fleet went offline, expired its
    data, and missed what was announced while it reconnected (32 MB by default; 1 MB here)."""
    await configure_redis(private_redis.url, "client-output-buffer-limit", "pubsub 1mb 1mb 60")
    writer, reader = make(private_redis.url), make(private_redis.url)
    await started(writer, reader)
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        writer.set(Todo, {"id": 1}, {"id": 1, "title": "x" * 2_000_000})
        writer.set(Todo, {"id": 2}, {"id": 2, "title": "small"})
        await until(reader, lambda: title(reader.get(Todo, {"id": 2})) == "small")
    assert title(reader.get(Todo, {"id": 1})) == "x" * 2_000_000
    assert "unreachable" not in caplog.text and shared(reader).online and shared(writer).online


class _CountedOpens(RedisStore):
    """A RedisStore noting the loop time of every `open` (each connection attempt), and waking `opened`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.opens: list[float] = []
        self.opened = asyncio.Event()

    async def open(self, on_patch: Any) -> None:
        self.opens.append(asyncio.get_running_loop().time())
        self.opened.set()
        await super().open(on_patch)


async def test_a_redis_failing_every_write_is_reconnected_with_a_growing_pause(
    private_redis: RedisServer, namespace: str
) -> None:
    """Each failed write reconnected at once (about 20 times a second), expiring the local data at every rejoin."""
    await configure_redis(private_redis.url, "client-query-buffer-limit", "1mb")  # it closes a larger call's connection
    store = _CountedOpens(private_redis.url, namespace=namespace)
    manager = SharedManager(store)
    ctrl = Controller(shared=manager)
    try:
        await started(ctrl)
        for i in range(3):  # each is sent again on 3 rejoins before it is dropped
            ctrl.set(Todo, {"id": i}, {"id": i, "title": "x" * 2_000_000})

        async def opens(count: int) -> None:
            for _ in range(100):
                if len(store.opens) >= count:
                    return
                store.opened.clear()
                await store.opened.wait()

        await asyncio.wait_for(opens(6), 30)
        pauses = [later - earlier for earlier, later in zip(store.opens, store.opens[1:], strict=False)]
        assert pauses[3] >= 0.4, pauses  # 0.05 s, doubled after each connection that failed again at once
    finally:
        ctrl.close()
        await manager.wait_closed()


async def test_a_shared_copy_of_an_entity_deleted_since_is_fetched_again_as_in_the_deleting_process(
    make: Make, res: Any, api: Any
) -> None:
    """Read through, the copy named the deleted row and suspense answered None without a request."""
    deleter = make()
    await started(deleter)
    await deleter.fetch(res.Todo.get, id=1)
    await deleter.fetch(res.Todo.delete, id=1)
    await shared(deleter).flush()
    reader = make()  # a process started since: it holds nothing of todo 1
    await started(reader)
    for ctrl in (deleter, reader):
        with pytest.raises(StatusError) as caught:
            await asyncio.wait_for(ctrl.suspense(res.Todo.get, id=1), 10)
        assert caught.value.status == 404
    assert len(gets(api, "/todos/1")) == 3


async def test_closing_while_unreachable_warns_of_the_kept_writes_it_loses(
    private_redis: RedisServer, make: Make, res: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The writes kept for the rejoin went away silently when the controller closed still offline."""
    ctrl = make(private_redis.url)
    await started(ctrl)
    private_redis.stop()
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        for todo_id in (1, 2):
            await asyncio.wait_for(ctrl.fetch(res.Todo.get, id=todo_id), 10)
        await asyncio.wait_for(shared(ctrl).flush(), 10)
        ctrl.close()
        await shared(ctrl).wait_closed()
    assert "2 writes kept for it are lost" in caplog.text


class FreezingProxy:
    """A TCP proxy to a Redis server whose open connections can be frozen: they stay open but carry
    nothing more, as when a host or a route dies without closing them. Later connections work."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.connections = 0
        self._more = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._frozen: list[list[bool]] = []  # one flag per connection

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return f"redis://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/0"

    async def connected(self, count: int) -> None:
        """Wait until `count` connections in all were accepted."""
        while self.connections < count:
            self._more.clear()
            await self._more.wait()

    def freeze(self) -> None:
        """Stop carrying data on every connection open now."""
        for flag in self._frozen:
            flag[0] = True

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers += [writer, upstream_writer]
        frozen = [False]
        self._frozen.append(frozen)
        self.connections += 1
        self._more.set()
        await asyncio.gather(self._pipe(reader, upstream_writer, frozen), self._pipe(upstream_reader, writer, frozen))

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, frozen: list[bool]) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if not frozen[0]:
                    writer.write(data)
                    await writer.drain()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.close()


async def test_a_subscription_that_dies_silently_is_noticed_and_rejoined(
    redis_server: RedisServer, namespace: str, make: Make, res: Any, raw: Any
) -> None:
    """A process that never writes waited on a dead subscription forever, missing every announcement."""
    proxy = FreezingProxy(redis_server.port)
    url = await proxy.start()
    store = RedisStore(url, namespace=namespace, timeout=0.2)
    reader = Controller(shared=store)
    writer = make()
    try:
        await started(reader, writer)
        opened = proxy.connections
        proxy.freeze()
        await asyncio.wait_for(proxy.connected(opened + 2), 10)  # noticed: connected again
        await asyncio.wait_for(shared(reader).wait_online(), 10)
        for _ in range(100):  # until the new subscription is in place on the server
            if (await raw.pubsub_numsub(store.channel))[0][1] == 2:
                break
        await writer.fetch(res.Todo.get, id=1)
        await shared(writer).flush()
        await asyncio.wait_for(until(reader, lambda: reader.cache(res.Todo.get, id=1) is not None), 10)
    finally:
        reader.close()
        await shared(reader).wait_closed()
        await proxy.close()


async def test_an_edit_by_another_version_of_an_entity_is_not_merged_into_this_versions_rows(
    make: Make, res: Any, api: Any
) -> None:
    """Two versions of a program in one fleet (a rolling deploy): `Todo` and `Todo2` share the key "Todo".
    The old version's edit was announced and merged into the new version's row, which then held both the
    old `title` (edited) and a stale `headline`, served as fresh. Each version now takes its own rows only."""
    old, new = make(), make()
    await started(old, new)
    todos2 = resource(path="/todos/:id", schema=Todo2, url_prefix=api.url)
    await new.fetch(todos2.get, id=1)
    await old.fetch(res.Todo.get, id=1)
    await old.fetch(res.Todo.partial_update, {"id": 1}, {"title": "edited by the old version"})
    old.set(res.User.get.schema, {"id": 9}, {"id": 9, "username": "marker"})  # announced after the edit
    await shared(old).flush()
    await until(new, lambda: new.get(res.User.get.schema, {"id": 9}) is not None)
    todo = new.cache(todos2.get, id=1)
    assert todo is not None
    assert todo.to_dict() == {"id": 1, "userId": 1, "headline": "delectus aut autem", "completed": False}
    assert len(gets(api, "/todos/1")) == 2  # each version fetched its own
    later = make()  # another process of the new version reads the new version's copy through Redis
    await started(later)
    assert (await later.suspense(todos2.get, id=1)).to_dict() == todo.to_dict()
    assert len(gets(api, "/todos/1")) == 2
