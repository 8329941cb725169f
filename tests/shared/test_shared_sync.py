"""The blocking facade with a shared store: read-through, write-through, and no write lost at `close()`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from examples.redis_server import RedisServer
from restlayer import sync
from restlayer.stores import RedisStore, SQLiteStore
from tests.core._models import Todo, gets
from tests.shared._keys import endpoint_store_key


@pytest.fixture
def raw(redis_server: RedisServer) -> Iterator[Any]:
    client = redis.Redis.from_url(redis_server.url)
    yield client
    client.close()


def on_redis(redis_server: RedisServer, namespace: str) -> sync.Controller:
    return sync.Controller(shared=RedisStore(redis_server.url, namespace=namespace))


def test_sync_controllers_read_through_the_shared_store(
    redis_server: RedisServer, namespace: str, res: Any, api: Any
) -> None:
    with on_redis(redis_server, namespace) as first, on_redis(redis_server, namespace) as second:
        todo = first.suspense(res.Todo.get, id=1)
        assert second.suspense(res.Todo.get, id=1) == todo
        assert second.get(Todo, {"id": 1}) == todo
    assert len(gets(api, "/todos/1")) == 1


def test_an_edit_through_one_sync_controller_reaches_the_other(
    redis_server: RedisServer, namespace: str, res: Any
) -> None:
    with on_redis(redis_server, namespace) as writer, on_redis(redis_server, namespace) as reader:
        reader.suspense(res.Todo.get, id=2)
        seen = threading.Event()

        def callback(todo: Todo | None) -> None:
            if todo is not None and todo.title == "edited in sync code":
                seen.set()

        unwatch = reader.watch(res.Todo.get, id=2, callback=callback)
        writer.fetch(res.Todo.partial_update, {"id": 2}, {"title": "edited in sync code"})
        assert seen.wait(10)
        unwatch()
        assert reader.cache(res.Todo.get, id=2).title == "edited in sync code"  # type: ignore[union-attr]


def test_closing_a_sync_controller_writes_everything_through_first(
    redis_server: RedisServer, namespace: str, res: Any, raw: Any
) -> None:
    ids = range(100, 160)
    store = RedisStore(redis_server.url, namespace=namespace)
    ctrl = sync.Controller(shared=store)

    def set_all() -> None:  # one call on the loop: every write is queued when close() starts
        for todo_id in ids:
            ctrl.controller.set_response(res.Todo.get, {"id": todo_id}, {"id": todo_id, "title": f"t{todo_id}"})

    ctrl.call(set_all)
    ctrl.close()
    stored = [raw.exists(store.endpoint_key(endpoint_store_key(res.Todo.get, {"id": i}))) for i in ids]
    assert stored == [1] * len(ids)


def test_a_sync_script_run_twice_reads_from_its_sqlite_file(tmp_path: Path, res: Any, api: Any) -> None:
    path = tmp_path / "cache.sqlite3"
    titles = []
    for _ in range(2):
        with sync.Controller(shared=SQLiteStore(path)) as ctrl:
            titles.append([ctrl.suspense(res.Todo.get, id=i).title for i in (1, 2, 3)])
    assert titles[0] == titles[1] and len(titles[0]) == 3
    assert len(gets(api)) == 3
