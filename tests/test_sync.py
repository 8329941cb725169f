"""The blocking facade `restlayer.sync.Controller`, against the real local API."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import inspect
import os
import select
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from restlayer import ClosedError, Entity, ExpiryStatus, NetworkError, RestEndpoint, RestLayerError, resource
from restlayer.core import Manager
from restlayer.sync import Controller
from tests._present import present
from tests.core._gate import Gates, gate_server


@pytest.fixture(scope="module")
def gates() -> Iterator[Gates]:
    """A server on 127.0.0.1 whose `/gate/{name}` replies wait until the test opens them."""
    yield from gate_server()


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


def todo_resource(api: Any) -> Any:
    return resource(path="/todos/:id", schema=Todo, url_prefix=api.url)


def loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "restlayer-sync-loop"]


def test_fetch_cache_and_mutations_block(api: Any) -> None:
    todos = todo_resource(api)
    with Controller() as ctrl:
        listed = ctrl.fetch(todos.get_list, userId=1)
        assert [t.userId for t in listed] == [1, 1, 1]
        assert ctrl.suspense(todos.get_list, userId=1) is ctrl.cache(todos.get_list, userId=1)
        updated = ctrl.fetch(todos.partial_update, {"id": listed[0].id}, {"title": "sync"})
        assert updated.title == "sync"
        assert present(ctrl.cache(todos.get_list, userId=1))[0].title == "sync"
        assert ctrl.get_response(todos.get, id=listed[0].id).expiry_status is ExpiryStatus.VALID
    methods = [(r.method, r.path) for r in api.requests]
    assert methods == [("GET", "/todos"), ("PATCH", f"/todos/{listed[0].id}")]


def test_errors_raise_in_the_calling_thread(api: Any) -> None:
    todos = todo_resource(api)
    with Controller() as ctrl:
        with pytest.raises(NetworkError) as info:
            ctrl.fetch(todos.get, id=999)
        assert info.value.status == 404
        assert ctrl.get_error(todos.get, id=999) is info.value


def test_watch_calls_back_on_change(api: Any) -> None:
    todos = todo_resource(api)
    seen: list[str] = []
    changed = threading.Event()

    def callback(todo: Any) -> None:
        seen.append(todo.title)
        changed.set()

    with Controller() as ctrl:
        ctrl.fetch(todos.get, id=1)
        stop = ctrl.watch(todos.get, id=1, callback=callback)
        ctrl.fetch(todos.partial_update, {"id": 1}, {"title": "watched"})
        assert changed.wait(10)
        stop()
    assert seen[-1] == "watched"


def test_a_callback_can_stop_its_own_watch(api: Any) -> None:
    todos = todo_resource(api)
    seen: list[str] = []

    def once(todo: Any) -> None:
        seen.append(todo.title)
        unwatch()  # runs on the loop thread: must not be refused there

    with Controller() as ctrl:
        unwatch = ctrl.watch(todos.get, id=1, callback=once)
        ctrl.fetch(todos.get, id=1)
        ctrl.set(Todo, {"id": 1, "title": "after the watch stopped"}, id=1)
    assert seen == [api.db.get("todos", 1)["title"]]


def test_leaving_a_subscription_after_close_is_a_no_op(api: Any) -> None:
    polled = todo_resource(api).get.extend(poll_frequency=60_000)
    ctrl = Controller()
    ctrl.fetch(polled, id=1)  # fresh: the first poll is a minute away, no request runs at close
    with ctrl.subscription(polled, id=1):
        ctrl.close()  # the app shuts down while the block still runs
    ctrl.unsubscribe(polled, id=1)  # as the async Controller: nothing polls, nothing to leave
    with pytest.raises(ClosedError):
        ctrl.subscribe(polled, id=1)


def test_live_iterates_changes(api: Any) -> None:
    polled = todo_resource(api).get.extend(poll_frequency=50)
    with Controller() as ctrl:
        stream = ctrl.live(polled, id=2)
        first = next(stream)
        api.db.update("todos", 2, {"title": "remote edit"})
        second = next(stream)
        stream.close()
    assert first.title != "remote edit" and second.title == "remote edit"


def test_closing_while_a_request_connects_leaves_no_unawaited_coroutine(api: Any) -> None:
    polled = todo_resource(api).get.extend(poll_frequency=60_000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):  # the first poll is still opening its connection when close() comes
            ctrl = Controller()
            with ctrl.subscription(polled, id=1):
                ctrl.close()
            gc.collect()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


def test_close_joins_the_thread_without_warnings(api: Any) -> None:
    before = len(loop_threads())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ctrl = Controller()
        ctrl.fetch(todo_resource(api).get, id=1)
        assert len(loop_threads()) == before + 1
        ctrl.close()
        ctrl.close()  # idempotent
    assert len(loop_threads()) == before


# -- the facade cannot drift from the async Controller ------------------------------------------

#: Members only one side has, on purpose: the async context manager vs the blocking one,
#: the manager API (called by managers, on the event loop), `on_close` (takes an asyncio.Event
#: of the controller's loop) and the sync facade's handles on the async controller underneath
#: (UI bindings use call/submit).
_ASYNC_ONLY = {"__aenter__", "__aexit__", "resolve", "abort", "poll", "on_close"}
_SYNC_ONLY = {"controller", "call", "submit", "__enter__", "__exit__"}


def _public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if (not name.startswith("_") or name in _ASYNC_ONLY | _SYNC_ONLY) and callable(member)
    }


def test_sync_controller_has_every_async_method_with_the_same_parameters() -> None:
    from restlayer import Controller as AsyncController

    async_methods = {n: s for n, s in _public_methods(AsyncController).items() if n not in _ASYNC_ONLY}
    sync_methods = {n: s for n, s in _public_methods(Controller).items() if n not in _SYNC_ONLY}
    assert sorted(async_methods) == sorted(sync_methods)
    for name, signature in async_methods.items():
        expected = [(p.name, p.kind) for p in signature.parameters.values()]
        assert [(p.name, p.kind) for p in sync_methods[name].parameters.values()] == expected, name


def test_set_response_set_error_and_set_accept_keyword_arguments() -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix="http://127.0.0.1:9")
    with Controller() as ctrl:
        ctrl.set_response(todos.get, {"id": 5, "title": "stored"}, id=5)
        assert present(ctrl.cache(todos.get, id=5)).title == "stored"
        ctrl.set(Todo, {"id": 5, "title": "set"}, id=5)
        assert present(ctrl.cache(todos.get, id=5)).title == "set"
        error = NetworkError("gone", status=410)
        ctrl.set_error(todos.get, error, id=6)
        assert ctrl.get_error(todos.get, id=6) is error


def test_every_read_and_write_runs_on_the_loop_thread(api: Any) -> None:
    todos = todo_resource(api)
    with Controller() as ctrl:
        fetched = ctrl.fetch_if_stale(todos.get, id=1)
        stored = ctrl.fetch_if_stale(todos.get, id=1)  # fresh: from the store, no request
        assert stored == fetched and len(api.requests.matching("GET", "/todos/1")) == 1
        assert ctrl.get(Todo, {"id": 1}) is stored
        assert ctrl.dle(todos.get, id=1).data is stored and ctrl.last_error(todos.get, id=1) is None
        seen: list[Any] = []
        unwatch = ctrl.watch(todos.get, id=1, callback=seen.append)
        ctrl.set(Todo, {"id": 1, "title": "watched"}, id=1)
        assert [t.title for t in seen] == ["watched"]
        unwatch()
        ctrl.expire_all(lambda key: True)
        assert ctrl.get_response(todos.get, id=1).expires_at < ctrl.controller.now()
        ctrl.invalidate_all(lambda key: True)
        assert ctrl.get_response(todos.get, id=1).expiry_status is ExpiryStatus.INVALID
        ctrl.reset_entire_store()
        assert ctrl.get_state().to_dict()["endpoints"] == {}
    unwatch()  # after close: a no-op, not an error


def test_close_releases_every_blocked_thread_with_closed_error(gates: Gates) -> None:
    gated = RestEndpoint(path="/gate/:name", url_prefix=gates.url)
    names = gates.group(8)
    outcomes: list[str] = []
    lock = threading.Lock()
    ctrl = Controller()

    def worker(name: str) -> None:
        for attempt in range(5):  # the first call is held by the gate; the others run after close()
            try:
                ctrl.fetch(gated, name=name, attempt=attempt)
                outcome = "ok"
            except ClosedError:
                outcome = "ClosedError"
            except BaseException as exc:  # anything else is a defect the test reports
                outcome = repr(exc)
            with lock:
                outcomes.append(outcome)

    threads = [threading.Thread(target=worker, args=(name,), daemon=True) for name in names]
    for thread in threads:
        thread.start()
    for name in names:
        assert gates.wait_arrived(name), f"{name}: the first call never reached the server"
    ctrl.close()
    for thread in threads:
        thread.join(10)
    assert [t for t in threads if t.is_alive()] == []
    assert outcomes == ["ClosedError"] * 40


def test_calls_after_close_raise_closed_error_without_warnings() -> None:
    ctrl = Controller()
    ctrl.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ClosedError, match="closed"):
            ctrl.fetch(RestEndpoint(path="/todos/:id", url_prefix="http://127.0.0.1:9"), id=1)
        with pytest.raises(ClosedError):
            ctrl.get_state()
        gc.collect()
    assert [str(w.message) for w in caught] == []


def test_an_interrupted_call_stops_the_request_it_waited_on(gates: Gates) -> None:
    """Ctrl-C in a blocked call cancels its work on the loop, as cancelling an awaiting task does in async code."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("KeyboardInterrupt reaches the main thread only")
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT does not raise KeyboardInterrupt here")
    gated = RestEndpoint(path="/gate/:name", url_prefix=gates.url)
    name = gates.name()
    main = threading.main_thread().ident
    assert main is not None

    def press_ctrl_c() -> None:
        if gates.wait_arrived(name):  # the call is blocked waiting for the reply
            signal.pthread_kill(main, signal.SIGINT)

    with Controller() as ctrl:
        threading.Thread(target=press_ctrl_c, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            ctrl.fetch(gated, name=name)
        gates.open(name)
        # the interrupted request is gone: the next fetch sends its own instead of joining it
        assert ctrl.fetch(gated, name=name) == {"gate": name}
    assert gates.arrivals(name) == 2


def with_loop_thread(**options: Any) -> tuple[Controller, threading.Thread]:
    """A new controller (given `options`) and the loop thread it started."""
    before = set(loop_threads())
    ctrl = Controller(**options)
    (thread,) = set(loop_threads()) - before
    return ctrl, thread


def test_a_close_refused_in_a_callback_leaves_close_working_afterwards(api: Any) -> None:
    todos = todo_resource(api)
    refused: list[BaseException] = []
    ctrl, thread = with_loop_thread()

    def close_from_callback(_todo: Any) -> None:
        try:
            ctrl.close()
        except RestLayerError as exc:
            refused.append(exc)

    ctrl.watch(todos.get, id=1, callback=close_from_callback)
    ctrl.fetch(todos.get, id=1)
    assert [type(e) for e in refused] == [RestLayerError]
    ctrl.close()  # from the script's thread: this one must still close it
    thread.join(10)
    assert not thread.is_alive()
    with pytest.raises(ClosedError):
        ctrl.fetch(todos.get, id=2)


def test_a_controller_collected_on_its_own_loop_thread_is_still_closed(api: Any) -> None:
    """An unclosed controller dropped in a reference cycle may be collected by its own loop thread's allocations."""
    polled = todo_resource(api).get.extend(poll_frequency=60_000)
    dropped = threading.Event()
    collected = threading.Event()

    def collect_on_the_loop_thread(_todo: Any) -> None:
        if dropped.wait(10):
            gc.collect()
            collected.set()

    gc.disable()  # only the loop thread's collection may find the cycle
    try:
        ctrl, thread = with_loop_thread()
        ctrl.watch(polled, id=1, callback=collect_on_the_loop_thread)
        ctrl.subscribe(polled, id=1)  # never fetched: the first poll runs at once and calls back
        cycle: list[object] = [ctrl]
        cycle.append(cycle)
        del ctrl, cycle
        dropped.set()
        assert collected.wait(10), "the poll never called back"
    finally:
        gc.enable()
    thread.join(10)
    assert not thread.is_alive(), "the collected controller's loop (and its polling) kept running"


def test_a_callback_raising_system_exit_closes_the_controller_instead_of_hanging_it(
    api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """SystemExit escapes asyncio's callback handling and ends the loop thread: nothing may wait on it after."""
    todos = todo_resource(api)
    ctrl, thread = with_loop_thread()
    ctrl.watch(todos.get, id=1, callback=lambda _todo: sys.exit(3))
    outcomes: list[BaseException | None] = []

    def fetch() -> None:
        try:
            ctrl.fetch(todos.get, id=1)
            outcomes.append(None)
        except BaseException as exc:  # the outcome is what the test checks
            outcomes.append(exc)

    caller = threading.Thread(target=fetch, daemon=True)
    caller.start()
    caller.join(10)
    assert not caller.is_alive(), "the fetch whose watcher raised SystemExit hung"
    assert [type(e) for e in outcomes] == [ClosedError]
    assert "SystemExit" in str(outcomes[0])
    thread.join(10)
    assert not thread.is_alive()
    with pytest.raises(ClosedError):
        ctrl.get(Todo, id=1)
    ctrl.close()  # already closed: a no-op
    assert any("SystemExit" in r.getMessage() for r in caplog.records if r.levelname == "ERROR")


class _FailingCleanup(Manager):
    """A manager whose `cleanup` raises (a bug of the app's own)."""

    def cleanup(self) -> None:
        raise ValueError("cleanup failed")


def test_close_stops_the_loop_even_when_a_managers_cleanup_raises(api: Any) -> None:
    polled = todo_resource(api).get.extend(poll_frequency=60_000)
    ctrl, thread = with_loop_thread(managers=[_FailingCleanup()])
    ctrl.fetch(polled, id=1)
    ctrl.subscribe(polled, id=1)
    with pytest.raises(ValueError, match="cleanup failed"):  # the app's own error is not hidden
        ctrl.close()
    thread.join(10)
    assert not thread.is_alive(), "the loop (and its polling) ran on after close()"
    with pytest.raises(ClosedError):
        ctrl.fetch(polled, id=2)


def test_a_live_iterator_collected_on_the_loop_thread_is_closed_there(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `live()` iterator left in a reference cycle may be collected by the loop thread's allocations."""
    todos = todo_resource(api)
    polled = todos.get.extend(poll_frequency=60_000)
    ignored: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: ignored.append(info.exc_value))
    collected = threading.Event()

    def collect_on_the_loop_thread(_todo: Any) -> None:
        gc.collect()
        collected.set()

    with Controller() as ctrl:
        gc.disable()  # only the loop thread's collection may find the cycle
        try:
            stream = ctrl.live(polled, id=1)
            assert next(stream).id == 1
            cycle: list[object] = [stream]
            cycle.append(cycle)
            del stream, cycle
            ctrl.watch(todos.get, id=2, callback=collect_on_the_loop_thread)
            ctrl.fetch(todos.get, id=2)
            assert collected.wait(10)
        finally:
            gc.enable()
        ctrl.get_state()  # one more turn of the loop: the stream's closing ran by then
    assert ignored == []


def test_submitted_work_cut_short_by_close_ends_with_closed_error() -> None:
    started = threading.Event()
    ended = threading.Event()

    async def wait_until_cancelled(_ctrl: Any) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            ended.set()

    ctrl = Controller()
    mine = ctrl.submit(wait_until_cancelled)
    assert started.wait(10)
    assert mine.cancel()  # the caller's own cancellation stays one, and reaches the loop
    assert ended.wait(10)
    with pytest.raises(concurrent.futures.CancelledError):
        mine.result(10)
    started.clear()
    cut_short = ctrl.submit(wait_until_cancelled)
    assert started.wait(10)
    ctrl.close()
    with pytest.raises(ClosedError, match="closed"):
        cut_short.result(10)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_controller_inherited_through_fork_refuses_calls_instead_of_hanging(api: Any) -> None:
    """A forked child (multiprocessing's default on Linux, a pre-forking server) has no copy of the
    loop thread: every call on a controller made before the fork, even `cache`, used to block the
    child for good. It raises ClosedError saying why; the parent's controller goes on working."""
    todos = todo_resource(api)
    with Controller() as ctrl:
        ctrl.fetch(todos.get, id=1)
        read, write = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "fork() of a multi-threaded process"
            pid = os.fork()
        if pid == 0:  # the child: report each call's outcome, never run the test runner's exit
            outcomes: list[str] = []
            calls: list[Callable[[], object]] = [
                lambda: ctrl.cache(todos.get, id=1),
                lambda: ctrl.fetch(todos.get, id=2),
            ]
            for call in calls:
                try:
                    call()
                    outcomes.append("returned")
                except ClosedError as error:
                    outcomes.append("ClosedError: " + str(error))
                except BaseException as error:
                    outcomes.append(type(error).__name__)
            os.write(write, "\n".join(outcomes).encode())
            os._exit(0)
        os.close(write)
        ready: list[int] = []
        try:
            ready = select.select([read], [], [], 30)[0]
            report = os.read(read, 4096).decode() if ready else "(the child is blocked)"
        finally:
            os.close(read)
            if not ready:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        lines = report.splitlines()
        assert len(lines) == 2 and all(line.startswith("ClosedError") for line in lines), report
        assert "another process" in lines[0]
        assert ctrl.fetch(todos.get, id=3).id == 3
