"""SQLiteStore: a second run of the same program serves fresh reads from the file, without requests."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from restlayer.core import Controller, SharedManager, Write
from restlayer.errors import ParamError
from restlayer.rest import RestEndpoint, resource
from restlayer.stores import SQLiteStore
from tests.core._models import Clock, Todo, gets
from tests.shared._keys import Todo2, endpoint_store_key, row_store_key


async def run(path: Path, work: Any) -> Any:
    """One "run of the script": a controller on the file, `work(ctrl)`, then every write flushed."""
    ctrl = Controller(shared=SQLiteStore(path))
    manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
    try:
        assert await asyncio.wait_for(manager.wait_started(), 10)
        result = await work(ctrl)
        await manager.flush()
        return result
    finally:
        ctrl.close()
        await manager.wait_closed()


async def test_second_run_serves_fresh_reads_from_the_file(tmp_path: Path, res: Any, api: Any) -> None:
    path = tmp_path / "cache.sqlite3"

    async def read(ctrl: Controller) -> Any:
        return await ctrl.suspense(res.Todo.get_list), await ctrl.suspense(res.User.get, id=1)

    first = await run(path, read)
    assert len(api.requests) == 2
    second = await run(path, read)
    assert second == first and len(api.requests) == 2


async def test_lengths_of_time_may_be_timedeltas(tmp_path: Path, res: Any, api: Any) -> None:
    """`keep_ms` and `lock_ms` as timedeltas: the writes used to fail (logged as "not JSON") and nothing was shared."""
    path = tmp_path / "cache.sqlite3"
    store = SQLiteStore(path, keep_ms=timedelta(minutes=1))
    manager = SharedManager(store, lock_ms=timedelta(seconds=30))
    assert (store.keep_ms, manager.lock_ms) == (60_000, 30_000)
    async with Controller(shared=manager) as ctrl:
        await ctrl.fetch(res.Todo.get, id=1)
    again = await run(path, lambda ctrl: ctrl.suspense(res.Todo.get, id=1))
    assert again.id == 1 and len(api.requests) == 1


@pytest.mark.parametrize("length", ["1 min", None, -1, float("nan"), [60_000]])
def test_a_length_of_time_that_is_not_one_is_refused(tmp_path: Path, length: Any) -> None:
    with pytest.raises(ParamError, match="keep_ms"):
        SQLiteStore(tmp_path / "cache.sqlite3", keep_ms=length)
    with pytest.raises(ParamError, match="lock_ms"):
        SharedManager(SQLiteStore(tmp_path / "cache.sqlite3"), lock_ms=length)


async def test_second_run_sees_stored_data_in_plain_cache_reads(tmp_path: Path, res: Any, api: Any) -> None:
    path = tmp_path / "cache.sqlite3"
    await run(path, lambda ctrl: ctrl.suspense(res.User.get, id=1))

    async def cached(ctrl: Controller) -> Any:
        user = ctrl.cache(res.User.get, id=1)
        assert user is not None
        return user, ctrl.get(res.User.get.schema, {"username": user.username})

    user, by_index = await run(path, cached)
    assert user.id == 1 and by_index == user
    assert len(api.requests) == 1


async def test_expired_and_invalidated_data_is_fetched_again(tmp_path: Path, res: Any, api: Any) -> None:
    path = tmp_path / "cache.sqlite3"

    async def read_then_drop(ctrl: Controller) -> None:
        await ctrl.suspense(res.Todo.get, id=1)
        await ctrl.suspense(res.Todo.get, id=2)
        ctrl.expire_all(lambda key: key.endswith("/todos/1"))
        ctrl.invalidate(res.Todo.get, id=2)

    await run(path, read_then_drop)

    async def read_again(ctrl: Controller) -> None:
        assert ctrl.get_response(res.Todo.get, id=1).expires_at == 1  # stale: served, and refetched
        await ctrl.fetch_if_stale(res.Todo.get, id=1)
        await ctrl.suspense(res.Todo.get, id=2)

    await run(path, read_again)
    assert len(gets(api, "/todos/1")) == 2 and len(gets(api, "/todos/2")) == 2


async def test_malformed_rows_in_the_file_are_ignored_and_logged(
    tmp_path: Path, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.sqlite3"
    await run(path, lambda ctrl: ctrl.suspense(res.Todo.get, id=1))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE endpoints SET data = '{broken'")
        db.execute('UPDATE entities SET data = \'["Todo", "1", 5, {}]\'')
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        todo = await run(path, lambda ctrl: ctrl.suspense(res.Todo.get, id=1))
    assert todo == Todo(id=1, userId=1, title="delectus aut autem", completed=False)
    assert len(gets(api, "/todos/1")) == 2 and caplog.text.count("malformed") >= 2


async def test_malformed_index_rows_of_a_foreign_file_are_ignored_and_logged(
    tmp_path: Path, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.sqlite3"
    user = row_store_key(res.User.get.schema)
    with sqlite3.connect(path) as db:  # a file written by something else: no NOT NULL, a blob, a number
        db.execute("CREATE TABLE indexes (key, field, value, pk, PRIMARY KEY (key, field, value))")
        db.executemany(
            "INSERT INTO indexes VALUES (?, ?, ?, ?)",
            [
                (user, "username", "bret", "1"),
                (user, None, "x", "2"),
                (user, "email", b"\x00", "3"),
                (user, "username", "sam", 7),
            ],
        )
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        indexes = await run(path, lambda ctrl: asyncio.sleep(0, ctrl.get_state()["indexes"]))
    assert indexes == {"User": {"username": {"bret": "1"}}}
    assert caplog.text.count("malformed stored index row") == 3


async def test_an_endpoint_whose_entity_rows_were_pruned_is_not_served_as_none(
    tmp_path: Path, res: Any, api: Any
) -> None:
    """Each row lives until its own expiry: a list that expired at once took todo 1's row with it,
    while the long-lived `get` of todo 1 stayed in the file. The next run must not read that `get` as None."""
    path = tmp_path / "cache.sqlite3"
    hour_ago = time.time() * 1000 - 3_600_000
    get = res.Todo.get.extend(data_expiry_length=2 * 3_600_000)
    listed = res.Todo.get_list.extend(data_expiry_length=0)
    ctrl = Controller(shared=SQLiteStore(path, keep_ms=0), clock=lambda: hour_ago)
    manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
    try:
        assert await asyncio.wait_for(manager.wait_started(), 10)
        await ctrl.fetch(get, id=1)
        await ctrl.fetch(listed)  # rewrites todo 1's row with the list's (past) expiry
        await manager.flush()
    finally:
        ctrl.close()
        await manager.wait_closed()

    async def read(ctrl: Controller) -> Any:
        return ctrl.get_response(get, id=1).data, await ctrl.suspense(get, id=1)

    cached, todo = await run(path, read)
    assert cached is None
    assert todo == Todo(id=1, userId=1, title="delectus aut autem", completed=False)
    assert len(gets(api, "/todos/1")) == 1  # served from the file's stored response


async def test_an_unopenable_file_leaves_the_controller_working_locally(
    tmp_path: Path, res: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ctrl = Controller(shared=SQLiteStore(tmp_path / "missing-dir" / "cache.sqlite3"))
    manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
    try:
        with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
            assert await asyncio.wait_for(manager.wait_started(), 10) is False
            assert (await ctrl.suspense(res.Todo.get, id=1)).id == 1
        assert "unreachable" in caplog.text
    finally:
        ctrl.close()
        await manager.wait_closed()


async def test_leaving_async_with_hands_every_queued_write_to_the_file(tmp_path: Path, res: Any) -> None:
    path = tmp_path / "cache.sqlite3"
    async with Controller(shared=SQLiteStore(path)) as ctrl:
        for todo_id in range(100, 140):  # queued without a pause: none is written before the exit
            ctrl.set_response(res.Todo.get, {"id": todo_id}, {"id": todo_id, "title": f"t{todo_id}"})
    with sqlite3.connect(path) as db:
        (count,) = db.execute("SELECT count(*) FROM endpoints").fetchone()
    assert count == 40


class OpensLate(SQLiteStore):
    """A store whose `open` waits for `release` and swallows a cancellation meanwhile, as some clients do."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.is_open = False
        self.closed_after_open = asyncio.Event()

    async def open(self, on_patch: Any) -> None:
        self.entered.set()
        while not self.release.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await self.release.wait()
        await super().open(on_patch)
        self.is_open = True

    async def close(self) -> None:
        await super().close()
        if self.is_open:
            self.is_open = False
            self.closed_after_open.set()


async def test_a_store_that_opens_after_close_despite_the_cancellation_is_closed_again(tmp_path: Path) -> None:
    store = OpensLate(tmp_path / "cache.sqlite3")
    ctrl = Controller(shared=store)
    manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
    await asyncio.wait_for(store.entered.wait(), 10)
    ctrl.close()
    await manager.wait_closed()
    store.release.set()
    await asyncio.wait_for(store.closed_after_open.wait(), 10)
    assert not store.is_open


class _FailsOnce(SQLiteStore):
    """A store whose first write fails with an error of its own (not `SharedStoreError`), as a buggy backend's may."""

    failed = False

    async def write(self, write: Write) -> None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("a backend bug")
        await super().write(write)


async def test_a_backend_write_failing_unexpectedly_is_logged_and_later_writes_go_on(
    tmp_path: Path, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.sqlite3"
    ctrl = Controller(shared=_FailsOnce(path))
    manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
    try:
        assert await asyncio.wait_for(manager.wait_started(), 10)
        await ctrl.fetch(res.Todo.get, id=1)
        await asyncio.wait_for(manager.flush(), 10)
        assert "a backend bug" in caplog.text
        await asyncio.wait_for(ctrl.fetch(res.Todo.get, id=2), 10)  # a read-through: it waits for earlier writes
        await asyncio.wait_for(manager.flush(), 10)
    finally:
        ctrl.close()
        await manager.wait_closed()

    async def read(ctrl: Controller) -> Any:
        return await ctrl.suspense(res.Todo.get, id=2)

    requests = len(gets(api, "/todos/2"))
    assert (await run(path, read)).id == 2
    assert len(gets(api, "/todos/2")) == requests  # written to the file despite the earlier failure


class _CannotOpen(SQLiteStore):
    """A store whose `open` fails with an error of its own (not `SharedStoreError`)."""

    async def open(self, on_patch: Any) -> None:
        raise ValueError("a backend bug")


async def test_a_backend_failing_to_open_unexpectedly_leaves_the_controller_working_locally(
    tmp_path: Path, res: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ctrl = Controller(shared=_CannotOpen(tmp_path / "cache.sqlite3"))
    manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
    try:
        assert not await asyncio.wait_for(manager.wait_started(), 10)
        assert (await asyncio.wait_for(ctrl.suspense(res.Todo.get, id=1), 10)).id == 1
        assert "a backend bug" in caplog.text
    finally:
        ctrl.close()
        await manager.wait_closed()


class _CannotRead(SQLiteStore):
    """A store whose `read` fails with an error of its own (not `SharedStoreError`)."""

    async def read(self, key: str) -> Any:
        raise RuntimeError("a backend bug")


async def test_a_backend_read_failing_unexpectedly_leaves_the_fetch_to_the_network(
    tmp_path: Path, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ctrl = Controller(shared=_CannotRead(tmp_path / "cache.sqlite3"))
    manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
    try:
        assert await asyncio.wait_for(manager.wait_started(), 10)
        assert (await asyncio.wait_for(ctrl.suspense(res.Todo.get, id=1), 10)).id == 1
        assert len(gets(api, "/todos/1")) == 1
        assert "a backend bug" in caplog.text
    finally:
        ctrl.close()
        await manager.wait_closed()


def _foreign_file(path: Path, kind: str) -> None:
    """A file another program wrote at `path`."""
    if kind == "not-sqlite":
        path.write_text("name,email\nann,ann@example.com\n" * 20)
        return
    with sqlite3.connect(path) as db:
        if kind == "other-tables":
            db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        else:  # a table of restlayer's name, laid out otherwise
            db.execute("CREATE TABLE entities (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("INSERT INTO " + ("users" if kind == "other-tables" else "entities") + " VALUES (1, 'ann')")
    # a connection closed: the file holds everything


@pytest.mark.parametrize("kind", ["other-tables", "other-columns", "not-sqlite"])
async def test_a_file_of_another_program_is_refused_with_a_clear_error_and_left_unchanged(
    tmp_path: Path, res: Any, api: Any, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    """Such a file never becomes usable: `SQLiteStore(path)` says so at once; one that appears after the
    store was made is refused when it opens (an error logged once, no retrying as if it were down) and the
    controller works locally. Either way restlayer writes nothing into it."""
    path = tmp_path / "app.db"
    _foreign_file(path, kind)
    before = path.read_bytes()
    with pytest.raises(ParamError, match=r"app\.db"):
        SQLiteStore(path)

    later = tmp_path / "later.db"
    store = SQLiteStore(later)
    _foreign_file(later, kind)
    written = later.read_bytes()
    ctrl = Controller(shared=store)
    manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
    try:
        with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
            assert await asyncio.wait_for(manager.wait_started(), 10) is False
            assert (await asyncio.wait_for(ctrl.suspense(res.Todo.get, id=1), 10)).id == 1
        refused = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(refused) == 1 and "later.db" in refused[0].getMessage()
        assert "until it is back" not in caplog.text
    finally:
        ctrl.close()
        await manager.wait_closed()
    assert path.read_bytes() == before and later.read_bytes() == written


async def test_rows_of_a_foreign_file_holding_numbers_are_ignored_and_logged(
    tmp_path: Path, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Tables made by another tool, without column types, may hold a number where restlayer keeps text
    (a row's data, an endpoint's key): such rows are skipped like other malformed ones, the rest loads."""
    path = tmp_path / "cache.sqlite3"
    await run(path, lambda ctrl: ctrl.suspense(res.Todo.get, id=1))
    with sqlite3.connect(path) as db:
        good_entities = db.execute("SELECT * FROM entities").fetchall()
        good_endpoints = db.execute("SELECT * FROM endpoints").fetchall()
        db.execute("DROP TABLE entities")
        db.execute("DROP TABLE endpoints")
        db.execute("CREATE TABLE entities (key, pk, fetched_at, data, keep_until)")
        db.execute("CREATE TABLE endpoints (key, fetched_at, data, expired, keep_until)")
        db.executemany("INSERT INTO entities VALUES (?, ?, ?, ?, ?)", good_entities)
        db.executemany("INSERT INTO endpoints VALUES (?, ?, ?, ?, ?)", good_endpoints)
        far = good_endpoints[0][4]
        db.execute("INSERT INTO entities VALUES ('Todo', '9', 1, 5, ?)", (far,))
        db.execute("INSERT INTO endpoints VALUES ('GET /x', 1, 5, 0, ?)", (far,))
        db.execute("INSERT INTO endpoints VALUES (7, 1, ?, 0, ?)", (good_endpoints[0][2], far))
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        keys, todo = await run(path, lambda ctrl: _keys_and_todo(ctrl, res))
    assert keys == [res.Todo.get.key({"id": 1})]
    assert todo == Todo(id=1, userId=1, title="delectus aut autem", completed=False)
    assert len(gets(api, "/todos/1")) == 1  # the good rows were loaded: no second request
    assert caplog.text.count("malformed") >= 3 and "unexpectedly" not in caplog.text


async def _keys_and_todo(ctrl: Controller, res: Any) -> tuple[list[object], Any]:
    return list(ctrl.get_state()["endpoints"]), await ctrl.suspense(res.Todo.get, id=1)


async def test_keep_ms_takes_a_timedelta_and_refuses_what_is_no_length_of_time(tmp_path: Path, res: Any) -> None:
    """Like the endpoints' time options: a timedelta works; a str, None, NaN or a negative length is a
    ParamError when the store is made (it made every write fail, logged as "not JSON", and stored nothing)."""
    path = tmp_path / "cache.sqlite3"
    assert SQLiteStore(path, keep_ms=timedelta(minutes=10)).keep_ms == 600_000
    for bad in ("600", None, math.nan, -1):
        with pytest.raises(ParamError, match="keep_ms"):
            SQLiteStore(path, keep_ms=bad)  # type: ignore[arg-type]
    store = SQLiteStore(path, keep_ms=timedelta(minutes=10))
    await run(path, lambda ctrl: ctrl.suspense(res.Todo.get, id=1))
    async with Controller(shared=store) as ctrl:
        manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
        assert await asyncio.wait_for(manager.wait_started(), 10)
        await ctrl.fetch(res.Todo.get, id=2)
        await manager.flush()
        assert sorted(await store.keys()) == sorted(
            [endpoint_store_key(res.Todo.get, {"id": 1}), endpoint_store_key(res.Todo.get, {"id": 2})]
        )


def test_a_file_locked_by_a_writer_is_not_taken_for_another_programs(tmp_path: Path) -> None:
    """ "database is locked" passes: only a file that is no SQLite database, or holds other tables, is refused."""
    path = tmp_path / "cache.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript("CREATE TABLE entities (key TEXT, pk TEXT, fetched_at REAL, data TEXT, keep_until REAL);")
    locker = sqlite3.connect(path, isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        assert SQLiteStore(path).path == path
    finally:
        locker.close()


def test_a_directory_is_refused_at_once_not_retried_as_unreachable(tmp_path: Path) -> None:
    with pytest.raises(ParamError, match="is a directory"):
        SQLiteStore(tmp_path)


async def test_a_row_nested_deeper_than_json_parses_is_ignored_and_logged(
    tmp_path: Path, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """RecursionError from such a row (written by another program) failed opening the whole file, retried
    for good; it is one malformed row, and the others load."""
    path = tmp_path / "cache.sqlite3"
    await run(path, lambda ctrl: ctrl.suspense(res.Todo.get, id=1))
    deep = "[" * 100_000 + "]" * 100_000
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO entities VALUES ('Todo', '9', 1, ?, 1e15)", (deep,))
        db.execute("INSERT INTO endpoints VALUES ('GET /deep', 1, ?, 0, 1e15)", (deep,))
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        todo = await run(path, lambda ctrl: ctrl.suspense(res.Todo.get, id=1))
    assert todo == Todo(id=1, userId=1, title="delectus aut autem", completed=False)
    assert len(gets(api, "/todos/1")) == 1 and caplog.text.count("malformed") >= 2


class _FailingStore(SQLiteStore):
    """A store of one's own with a bug: its `write` raises ValueError whatever the values."""

    async def write(self, write: Write) -> None:
        raise ValueError("a bug of the store itself")


def _deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


async def test_a_stores_own_failure_is_not_reported_as_a_value_that_is_not_json(
    tmp_path: Path, res: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Any TypeError/ValueError of `store.write` was logged as "not shared (not JSON)": a backend's bug looked
    like the caller's data. And a value nested deeper than JSON encodes (RecursionError) was, the other way
    round, a write that "failed unexpectedly". Each is now reported for what it is."""
    ctrl = Controller(shared=_FailingStore(tmp_path / "cache.sqlite3"))
    manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        try:
            assert await asyncio.wait_for(manager.wait_started(), 10)
            assert (await ctrl.fetch(res.Todo.get, id=1)).id == 1
            await asyncio.wait_for(manager.flush(), 10)
        finally:
            ctrl.close()
            await manager.wait_closed()
    assert "not JSON" not in caplog.text and "a bug of the store itself" in caplog.text
    caplog.clear()

    deep = RestEndpoint(path="/todos/:id", url_prefix=res.Todo.get.url_prefix, process=lambda *_: _deep_list(5000))
    with caplog.at_level(logging.WARNING, logger="restlayer.shared"):
        await run(tmp_path / "deep.sqlite3", lambda ctrl: ctrl.fetch(deep, id=1))
    assert "not shared (not JSON)" in caplog.text and "unexpectedly" not in caplog.text


@contextlib.contextmanager
def read_only(path: Path, *, directory_only: bool = False) -> Iterator[None]:
    """`path` and its directory (or the directory only) made read-only; as root (who writes through
    permissions) made immutable instead, and the test skipped where that is not possible."""
    made = path.parent if directory_only else path
    if not directory_only:
        os.chmod(path, 0o444)
    os.chmod(path.parent, 0o555)
    immutable = False
    try:
        if os.access(made, os.W_OK):  # root: permissions do not stop it
            immutable = subprocess.run(["chattr", "+i", str(made)], capture_output=True, check=False).returncode == 0
            if not immutable:
                pytest.skip("cannot make a file read-only for this user")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(made)], check=True)
        os.chmod(path.parent, 0o755)
        os.chmod(path, 0o644)


async def test_a_read_only_file_starts_the_next_run_warm_and_refuses_its_writes(
    tmp_path: Path, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A file that cannot be written was retried forever as "unreachable": no warm start, ever."""
    path = tmp_path / "cache" / "cache.sqlite3"
    path.parent.mkdir()
    await run(path, lambda ctrl: ctrl.suspense(res.Todo.get, id=1))
    with read_only(path), caplog.at_level(logging.WARNING, logger="restlayer.shared"):

        async def read(ctrl: Controller) -> Any:
            todo = ctrl.cache(res.Todo.get, id=1)
            await ctrl.fetch(res.Todo.get, id=2)  # its write is refused, not retried
            manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
            await manager.flush()
            assert manager.online
            return todo

        todo = await run(path, read)
    assert todo is not None and todo.id == 1
    assert len(gets(api, "/todos/1")) == 1
    assert "cannot be written" in caplog.text and "refused a write" in caplog.text
    assert "unreachable" not in caplog.text


async def test_a_controller_on_an_injected_clock_starts_the_next_run_warm(tmp_path: Path, res: Any, api: Any) -> None:
    """Rows were dated on the controller's clock and pruned at open by wall time: on a test
    clock the file emptied at every start."""
    path = tmp_path / "cache.sqlite3"
    clock = Clock()

    async def read() -> Any:
        ctrl = Controller(shared=SQLiteStore(path), clock=clock)
        manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
        try:
            assert await asyncio.wait_for(manager.wait_started(), 10)
            todo = await ctrl.suspense(res.Todo.get, id=1)
            await manager.flush()
            return todo
        finally:
            ctrl.close()
            await manager.wait_closed()

    first = await read()
    assert await read() == first
    assert len(gets(api, "/todos/1")) == 1


async def test_a_file_in_a_read_only_directory_starts_warm_and_refuses_its_writes(
    tmp_path: Path, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Its journal cannot be created: pruning at open failed (retried forever as "unreachable"),
    and each write took the store offline, expiring the local data at every reconnection."""
    path = tmp_path / "cache" / "cache.sqlite3"
    path.parent.mkdir()
    await run(path, lambda ctrl: ctrl.suspense(res.Todo.get, id=1))
    with contextlib.closing(sqlite3.connect(path)) as db, db:  # a row past its keep_until: open must prune
        db.execute("INSERT INTO entities VALUES ('Gone', '1', 0, '[]', 0)")
    with read_only(path, directory_only=True), caplog.at_level(logging.WARNING, logger="restlayer.shared"):

        async def read(ctrl: Controller) -> Any:
            todo = ctrl.cache(res.Todo.get, id=1)
            for todo_id in (2, 3):  # their writes are refused, not retried
                await ctrl.fetch(res.Todo.get, id=todo_id)
            manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
            await manager.flush()
            assert manager.online
            assert ctrl.get_response(res.Todo.get, id=2).expires_at > ctrl.now()  # not expired by a rejoin
            return todo

        todo = await run(path, read)
    assert todo is not None and todo.id == 1
    assert len(gets(api, "/todos/1")) == 1
    assert "refused a write" in caplog.text and "unreachable" not in caplog.text


async def test_a_read_only_file_without_restlayers_tables_reads_as_empty(
    tmp_path: Path, res: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Opened for reads, an empty file had no tables to read: each read-through failed with
    "no such table" and took the store offline."""
    path = tmp_path / "cache" / "cache.sqlite3"
    path.parent.mkdir()
    path.touch()
    with read_only(path), caplog.at_level(logging.WARNING, logger="restlayer.shared"):

        async def fetch(ctrl: Controller) -> Any:
            todos = [await ctrl.fetch(res.Todo.get, id=todo_id) for todo_id in (1, 2)]
            manager = next(m for m in ctrl.managers if isinstance(m, SharedManager))
            await manager.flush()
            assert manager.online
            return todos

        todos = await run(path, fetch)
    assert [todo.id for todo in todos] == [1, 2]
    assert "refused a write" in caplog.text and "unreachable" not in caplog.text


#: A run of the previous version of the program: a Todo with an `owner` field (no class here has that shape).
_PREVIOUS_VERSION = """
import asyncio, sys
from restlayer import Controller
from restlayer.rest import resource
from restlayer.schema import Entity
from restlayer.stores import SQLiteStore

class Todo(Entity):
    id: int | None = None
    owner: str = ""
    title: str = ""
    completed: bool = False

async def main() -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=sys.argv[2])
    async with Controller(shared=SQLiteStore(sys.argv[1])) as ctrl:
        await ctrl.suspense(todos.get, id=1)
        await ctrl.suspense(todos.get_list)

asyncio.run(main())
"""


async def test_rows_another_version_of_an_entity_wrote_are_not_loaded_as_this_versions(
    tmp_path: Path, api: Any
) -> None:
    """A file written by the previous version of the program (another field set under the same key "Todo")
    was loaded into the next version's store: its row served as fresh, with the old `title` beside an empty
    `headline`. Now each version keeps its own rows: the next one fetches its own."""
    path = tmp_path / "cache.sqlite3"
    child = subprocess.run(
        [sys.executable, "-c", _PREVIOUS_VERSION, str(path), api.url], capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr
    assert len(gets(api, "/todos/1")) == 1
    todos = resource(path="/todos/:id", schema=Todo2, url_prefix=api.url)

    async def read(ctrl: Controller) -> Any:
        assert ctrl.cache(todos.get, id=1) is None and ctrl.cache(todos.get_list) is None
        assert "Todo" not in ctrl.get_state()["entities"]
        return await ctrl.suspense(todos.get, id=1)

    todo = await run(path, read)
    assert todo.to_dict() == {"id": 1, "userId": 1, "headline": "delectus aut autem", "completed": False}
    assert len(gets(api, "/todos/1")) == 2
    again = await run(path, lambda ctrl: asyncio.sleep(0, ctrl.cache(todos.get, id=1)))  # its own rows: shared
    assert again == todo and len(gets(api, "/todos/1")) == 2
