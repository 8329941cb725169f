"""suspense, dle, cache, watch, live."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from restlayer.core import DLE, Controller
from restlayer.core.controller import UNSENT_RETRY_FLOOR
from restlayer.core.expiry import ERROR_EXPIRY
from restlayer.errors import NetworkError, ParamError, RestLayerError
from tests._present import present
from tests.core._models import Clock, Recorder, Todo, aborted, gets, stored


async def test_suspense_fetches_once_then_cached(ctrl: Controller, res: Any, api: Any) -> None:
    first = await ctrl.suspense(res.Todo.get, id=1)
    assert await ctrl.suspense(res.Todo.get, {"id": 1}) is first
    assert len(api.requests) == 1
    assert await ctrl.suspense(res.Todo.get, None) is None


async def test_suspense_stale_returns_at_once_and_refreshes(
    rctrl: Controller, rec: Recorder, res: Any, api: Any, clock: Clock
) -> None:
    first = await rctrl.suspense(res.Todo.get, id=1)
    clock.advance(60_001)
    assert await rctrl.suspense(res.Todo.get, id=1) is first
    await rec.wait_for(stored(res.Todo.get.key({"id": 1})), count=2)
    assert len(gets(api, "/todos/1")) == 2


async def test_suspense_invalid_if_stale_blocks(cctrl: Controller, res: Any, api: Any, clock: Clock) -> None:
    ep = res.Todo.get.extend(invalid_if_stale=True)
    await cctrl.suspense(ep, id=1)
    await cctrl.suspense(ep, id=1)
    assert len(api.requests) == 1
    clock.advance(60_001)
    await cctrl.suspense(ep, id=1)
    assert len(api.requests) == 2


async def test_suspense_raises_hard_error_until_expiry(cctrl: Controller, res: Any, api: Any, clock: Clock) -> None:
    with pytest.raises(NetworkError):
        await cctrl.suspense(res.status, code=404)
    with pytest.raises(NetworkError):
        await cctrl.suspense(res.status, code=404)
    assert len(api.requests) == 1
    clock.advance(1001)
    with pytest.raises(NetworkError):
        await cctrl.suspense(res.status, code=404)
    assert len(api.requests) == 2


async def test_suspense_raises_a_failure_the_store_did_not_record(ctrl: Controller, res: Any, api: Any) -> None:
    """A request that cannot be built (a header with a line break) is never stored: suspense raises it, never None."""
    # request_init headers are checked when the endpoint is defined; get_headers' only when the request is built
    ep = res.Todo.get.extend(get_headers=lambda headers: {**headers, "X-Token": "a\nb"})
    for _ in range(2):
        with pytest.raises(ParamError, match="line break"):
            await asyncio.wait_for(ctrl.suspense(ep, id=1), 10)
    assert ctrl.get_error(ep, id=1) is None and len(api.requests) == 0


async def test_suspense_after_invalidate_refetches(ctrl: Controller, res: Any, api: Any) -> None:
    await ctrl.suspense(res.Todo.get, id=1)
    ctrl.invalidate(res.Todo.get, id=1)
    await ctrl.suspense(res.Todo.get, id=1)
    assert len(api.requests) == 2


async def test_dle_and_cache(rctrl: Controller, rec: Recorder, res: Any, api: Any) -> None:
    ctrl = rctrl
    assert ctrl.dle(res.Todo.get, None) == DLE(None, False, None)
    assert ctrl.cache(res.Todo.get, id=1) is None
    assert ctrl.dle(res.Todo.get, id=1) == DLE(None, True, None)
    await rec.wait_for(stored())
    data, loading, error = ctrl.dle(res.Todo.get, id=1)
    assert present(data).id == 1 and not loading and error is None
    assert ctrl.cache(res.Todo.get, id=1) is data
    assert len(api.requests) == 1


async def test_dle_loading_hides_stale_entities(rctrl: Controller, rec: Recorder, res: Any, api: Any) -> None:
    ctrl = rctrl
    wrapped = res.Todo.get.extend(schema={"todo": Todo}, path="/todos/:id", process=lambda v, *a: {"todo": v})
    ctrl.set_response(wrapped, {"id": 1}, {"todo": {"id": 1, "title": "t"}})
    ctrl.set_response(res.Todo.delete, {"id": 1}, {"id": 1})  # Todo 1 deleted: the dict is invalid
    data, loading, error = ctrl.dle(wrapped, id=1)
    assert loading and data == {"todo": None} and error is None
    assert ctrl.cache(wrapped, id=1) == {"todo": None}
    await rec.wait_for(stored())
    assert present(ctrl.dle(wrapped, id=1).data)["todo"].title == "delectus aut autem"
    assert len(gets(api, "/todos/1")) == 1


async def test_dle_shows_a_request_that_could_not_be_built_instead_of_loading_forever(
    rctrl: Controller, rec: Recorder, res: Any, api: Any, clock: Clock
) -> None:
    ctrl = rctrl
    bad = res.raw.extend(get_headers=lambda h: {**h, "X-Bad": "a\r\nInjected: 1"})
    shown: list[object] = []
    ctrl.watch_response(bad, id=1, callback=shown.append)
    assert ctrl.dle(bad, id=1) == DLE(None, True, None)
    await rec.wait_for(aborted)
    data, loading, error = ctrl.dle(bad, id=1)
    assert (data, loading) == (None, False) and isinstance(error, ParamError)
    assert ctrl.last_error(bad, id=1) is error and ctrl.get_error(bad, id=1) is None  # never stored
    assert shown == [None], "a UI bound with watch_response is told the read changed"
    assert ctrl.dle(bad, id=1).error is error
    assert len(rec.matching(lambda a: a.type == "fetch")) == 1  # no new attempt on every read
    clock.advance(ERROR_EXPIRY + 1)  # like a stored error: retried once it expired
    assert ctrl.dle(bad, id=1).loading
    await rec.wait_for(aborted, count=2)
    assert api.requests == []


async def test_a_request_that_could_not_be_built_is_shown_a_while_even_when_errors_expire_at_once(
    rctrl: Controller, rec: Recorder, res: Any, api: Any, clock: Clock
) -> None:
    """A screen reads a call on every change: with `error_expiry_length=0` each read tried again, for ever."""
    ctrl = rctrl
    bad = res.raw.extend(get_headers=lambda h: {**h, "X-Bad": "a\r\nInjected: 1"}, error_expiry_length=0)
    assert ctrl.dle(bad, id=1).loading
    await rec.wait_for(aborted)
    clock.advance(UNSENT_RETRY_FLOOR - 1)
    data, loading, error = ctrl.dle(bad, id=1)
    assert (data, loading) == (None, False) and isinstance(error, ParamError)
    assert len(rec.matching(lambda a: a.type == "fetch")) == 1
    clock.advance(2)  # then tried again, as its arguments or headers may have changed
    assert ctrl.dle(bad, id=1).loading
    await rec.wait_for(aborted, count=2)
    assert api.requests == []


async def test_watch_fires_only_on_real_changes(ctrl: Controller, res: Any) -> None:
    seen: list[Any] = []
    unwatch = ctrl.watch(res.Todo.get_list, callback=seen.append)
    await ctrl.fetch(res.Todo.get_list)
    assert len(seen) == 1
    ctrl.set(Todo, {"id": 99}, {"id": 99, "title": "unrelated"})
    assert len(seen) == 1
    await ctrl.fetch(res.Todo.get_list)  # equal data again: new records, equal value
    assert len(seen) == 1
    ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "changed"})
    assert len(seen) == 2 and seen[-1][0].title == "changed"
    unwatch()
    ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "again"})
    assert len(seen) == 2


async def test_live_yields_first_then_changes(ctrl: Controller, res: Any) -> None:
    values: list[Any] = []
    first = asyncio.Event()

    async def consume() -> None:
        async for todo in ctrl.live(res.Todo.get, id=1):
            values.append(todo)
            first.set()
            if len(values) == 2:
                break

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(first.wait(), 10)
    ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "live"})
    await asyncio.wait_for(task, 10)
    assert values[0].title == "delectus aut autem" and values[1].title == "live"


async def test_memo_shared_identity(ctrl: Controller, res: Any) -> None:
    await ctrl.fetch(res.Todo.get_list)
    a = ctrl.get_response(res.Todo.get_list).data
    assert a is not None
    assert ctrl.get(Todo, "1") is a[0]
    assert ctrl.cache(res.Todo.get_list) is a and ctrl.dle(res.Todo.get_list).data is a


def test_dle_outside_an_event_loop_says_no_fetch_could_start(res: Any, api: Any) -> None:
    ctrl = Controller()
    try:
        data, loading, error = ctrl.dle(res.Todo.get, id=1)
        assert (data, loading) == (None, False)  # not "loaded, empty": the error tells why
        assert isinstance(error, RestLayerError) and "outside a running event loop" in str(error)
        ctrl.set_response(res.Todo.get, {"id": 1}, {"id": 1, "title": "stored"})
        data, loading, error = ctrl.dle(res.Todo.get, id=1)  # fresh data needs no fetch: read as usual
        assert present(data).title == "stored" and not loading and error is None
    finally:
        ctrl.close()
    assert api.requests == []
