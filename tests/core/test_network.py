"""NetworkManager: deduplication per key, side effects never shared, per-caller cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from restlayer.core import Controller, NetworkManager
from restlayer.core.network import DEFAULT_MAX_CONCURRENT_REQUESTS
from restlayer.errors import ClosedError, NetworkError, ParamError, ResetError, RestLayerError
from restlayer.rest import RestEndpoint, resource
from tests._present import present
from tests.core._gate import Gates
from tests.core._models import Clock, Recorder, Todo, aborted, gets, other_tasks_done


def network(ctrl: Controller) -> NetworkManager:
    """The controller's NetworkManager."""
    return next(m for m in ctrl.managers if isinstance(m, NetworkManager))


async def test_two_concurrent_gets_one_request(ctrl: Controller, res: Any, api: Any) -> None:
    a, b = await asyncio.gather(ctrl.fetch(res.Todo.get, {"id": 1}), ctrl.fetch(res.Todo.get, id=1))
    assert a == b and len(gets(api, "/todos/1")) == 1


async def test_concurrent_fetches_of_a_streamed_body_each_get_their_own(ctrl: Controller, api: Any) -> None:
    """A `content="stream"` body is read once: two callers sharing one request got one stream, and the
    second to read it got no bytes at all instead of the reply."""
    drip = RestEndpoint(path="/_test/drip", url_prefix=api.url, content="stream")
    a, b = await asyncio.gather(ctrl.fetch(drip, chunks=3, ms=1), ctrl.fetch(drip, chunks=3, ms=1))
    assert a is not b
    assert b"".join([chunk async for chunk in a]) == b"".join([chunk async for chunk in b]) == b"   {}"
    assert len(gets(api, "/_test/drip")) == 2


async def test_100_concurrent_suspense_one_request(ctrl: Controller, res: Any, api: Any) -> None:
    results = await asyncio.gather(*(ctrl.suspense(res.Todo.get, id=3) for _ in range(100)))
    assert len(gets(api, "/todos/3")) == 1
    assert all(r is results[0] for r in results)


async def test_pushes_are_never_deduplicated(ctrl: Controller, res: Any, api: Any) -> None:
    await asyncio.gather(
        ctrl.fetch(res.PlainTodo.get_list.push, {"title": "a"}),
        ctrl.fetch(res.PlainTodo.get_list.push, {"title": "a"}),
    )
    assert len(gets(api, "/todos", "POST")) == 2


async def test_later_fetch_after_settle_sends_again(ctrl: Controller, res: Any, api: Any) -> None:
    await ctrl.fetch(res.Todo.get, id=1)
    await ctrl.fetch(res.Todo.get, id=1)
    assert len(gets(api, "/todos/1")) == 2


async def test_cancelling_one_caller_keeps_the_shared_request(ctrl: Controller, gated: Any, gates: Gates) -> None:
    name = gates.name()
    first = asyncio.ensure_future(ctrl.fetch(gated, name=name))
    second = asyncio.ensure_future(ctrl.fetch(gated, name=name))
    await gates.arrived(name)
    first.cancel()
    gates.open(name)
    assert await second == {"gate": name}
    assert first.cancelled()
    assert gates.arrivals(name) == 1
    assert ctrl.get_response(gated, name=name).data == {"gate": name}


async def test_cancelling_every_caller_cancels_the_request(
    rctrl: Controller, rec: Recorder, gated: Any, gates: Gates
) -> None:
    name = gates.name()
    task = asyncio.ensure_future(rctrl.fetch(gated, name=name))
    await gates.arrived(name)
    task.cancel()
    await rec.wait_for(aborted)
    assert rctrl.get_state()["endpoints"] == {}
    assert not network(rctrl).in_flight(gated.key({"name": name}))
    gates.open(name)


async def test_new_caller_never_inherits_a_cancelled_callers_cancellation(
    ctrl: Controller, gated: Any, gates: Gates
) -> None:
    name = gates.name()
    first = asyncio.ensure_future(ctrl.fetch(gated, name=name))
    await gates.arrived(name)
    first.cancel()
    second = asyncio.ensure_future(ctrl.fetch(gated, name=name))
    gates.open(name)
    assert await asyncio.wait_for(second, 10) == {"gate": name}
    assert first.cancelled()


async def test_close_gives_every_waiting_caller_closed_error(gated: Any, gates: Gates, res: Any) -> None:
    ctrl = Controller()
    name = gates.name()
    await ctrl.fetch(res.Todo.get, id=1)
    readers = [asyncio.ensure_future(ctrl.fetch(gated, name=name)) for _ in range(3)]
    optimistic = res.Todo.partial_update.extend(path="/gate/:name", url_prefix=gates.url)
    mutation = asyncio.ensure_future(ctrl.fetch(optimistic, {"name": name, "id": 1}, {"title": "guess"}))
    await gates.arrived(name, count=2)
    assert present(ctrl.get(Todo, "1")).title == "guess"
    ctrl.close()
    assert present(ctrl.get(Todo, "1")).title == "delectus aut autem"  # the optimistic guess is rolled back
    for task in [*readers, mutation]:
        with pytest.raises(ClosedError):
            await asyncio.wait_for(task, 10)
    with pytest.raises(ClosedError, match="closed"):
        await ctrl.fetch(gated, name=name)
    gates.open(name)


async def test_close_cancels_the_requests_a_reset_dropped(gated: Any, gates: Gates) -> None:
    """A request dropped by `reset_entire_store()` runs on (its reply is dropped), but `close()` lost
    track of it: the request, its task and its connection outlived the closed controller, until the
    server answered (never, for a server that hangs)."""
    ctrl = Controller()
    name = gates.name()
    reader = asyncio.ensure_future(ctrl.fetch(gated, name=name))
    await gates.arrived(name)
    ctrl.reset_entire_store()
    with pytest.raises(ResetError):
        await reader
    ctrl.close()
    try:
        await other_tasks_done(timeout=5)  # the dropped request ends with the controller
    finally:
        gates.open(name)


async def test_raising_error_policy_reaches_the_caller_and_the_fetch_error_is_stored(
    ctrl: Controller, res: Any
) -> None:
    def strict_policy(error: BaseException) -> str | None:
        raise ValueError("policy bug")

    ep = res.status.extend(error_policy=strict_policy)
    with pytest.raises(RestLayerError, match=r"error_policy .*strict_policy.* raised ValueError: policy bug") as info:
        await asyncio.wait_for(ctrl.fetch(ep, code=404), 10)
    assert isinstance(info.value.__cause__, ValueError)
    stored = ctrl.get_error(ep, code=404)
    assert isinstance(stored, NetworkError) and stored.status == 404


async def test_an_error_policy_returning_another_word_than_soft_is_a_rest_layer_error_naming_it(
    ctrl: Controller, res: Any
) -> None:
    """ "Soft" (or any other word) silently counted as hard: the stored data was hidden behind the error."""

    def misspelled(error: BaseException) -> str | None:
        return "Soft"

    ep = res.status.extend(error_policy=misspelled)
    with pytest.raises(
        RestLayerError, match=r"error_policy .*misspelled.* returned 'Soft': it must return 'soft' or None"
    ):
        await asyncio.wait_for(ctrl.fetch(ep, code=404), 10)
    stored = ctrl.get_error(ep, code=404)
    assert isinstance(stored, NetworkError) and stored.status == 404


async def test_requests_beyond_the_limit_wait_for_a_free_slot(gated: Any, gates: Gates) -> None:
    ctrl = Controller(max_concurrent_requests=2)
    names = gates.group(5)
    tasks = [asyncio.ensure_future(ctrl.fetch(gated, name=n)) for n in names]
    await gates.arrived(names[0])
    await gates.arrived(names[1])
    for i, name in enumerate(names):  # release one at a time: the next queued request then goes out
        gates.open(name)
        if i + 2 < len(names):
            await gates.arrived(names[i + 2])
    assert await asyncio.wait_for(asyncio.gather(*tasks), 10) == [{"gate": n} for n in names]
    assert gates.max_held(names[0]) == 2
    ctrl.close()


async def test_a_request_waiting_for_a_slot_is_never_sent_after_a_reset_dropped_it(
    gated: Any, gates: Gates, res: Any, api: Any, clock: Clock
) -> None:
    """A mutation queued behind the request limit got `ResetError` ("Aborted due to RESET") from
    `reset_entire_store()`, yet was sent once a slot freed: the server created the item its caller
    was told had been aborted (and queued reads were sent for nobody)."""
    rec = Recorder()
    ctrl = Controller(clock=clock, managers=[rec], max_concurrent_requests=1)
    name = gates.name()
    busy = asyncio.ensure_future(ctrl.fetch(gated, name=name))  # holds the only slot
    await gates.arrived(name)
    push = asyncio.ensure_future(ctrl.fetch(res.PlainTodo.get_list.push, {"title": "queued"}))
    read = asyncio.ensure_future(ctrl.fetch(res.PlainTodo.get, id=2))
    await rec.wait_for(lambda a: a.type == "fetch", count=3)  # both wait for the slot
    ctrl.reset_entire_store()
    for task in (busy, push, read):
        with pytest.raises(ResetError):
            await task
    gates.open(name)
    await other_tasks_done()
    assert gets(api, "/todos", "POST") == [] and gets(api, "/todos/2") == []
    assert ctrl.get_state()["endpoints"] == {}
    ctrl.close()


def test_max_concurrent_requests_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_concurrent_requests"):
        Controller(max_concurrent_requests=0)
    assert network(Controller()).max_concurrent_requests == DEFAULT_MAX_CONCURRENT_REQUESTS
    assert network(Controller(max_concurrent_requests=None)).max_concurrent_requests is None


@pytest.mark.parametrize("limit", ["4", 0, -1, 2.5, True])
def test_a_bad_max_concurrent_requests_is_a_param_error(limit: Any) -> None:
    """It was a bare ValueError, outside the RestLayerError tree; True passed as a limit of 1."""
    with pytest.raises(ParamError, match="max_concurrent_requests"):
        Controller(max_concurrent_requests=limit)
    with pytest.raises(ParamError, match="max_concurrent_requests"):
        NetworkManager(max_concurrent_requests=limit)


async def test_close_ends_waiting_live_and_suspense_with_closed_error(res: Any, gated: Any, gates: Gates) -> None:
    ctrl = Controller()
    first = asyncio.Event()

    async def follow() -> None:
        async for _ in ctrl.live(res.Todo.get, id=1):
            first.set()

    following = asyncio.ensure_future(follow())
    await asyncio.wait_for(first.wait(), 10)
    name = gates.name()
    waiting = asyncio.ensure_future(ctrl.suspense(gated, name=name))
    await gates.arrived(name)
    ctrl.close()
    for task in (following, waiting):
        with pytest.raises(ClosedError):
            await asyncio.wait_for(task, 10)
    with pytest.raises(ClosedError):
        await ctrl.suspense(gated, name=gates.name())
    gates.open(name)


async def test_dle_after_close_reports_closed_error_instead_of_loading_forever(
    res: Any, gated: Any, gates: Gates
) -> None:
    ctrl = Controller()
    await ctrl.fetch(res.Todo.get, id=1)
    name = gates.name()
    first = ctrl.dle(gated, name=name)  # starts the background fetch
    assert first.loading and first.error is None
    await gates.arrived(name)
    ctrl.close()
    for never_fetched in (name, gates.name()):  # the one whose fetch was cut off, and a new key
        state = ctrl.dle(gated, name=never_fetched)
        assert state.data is None and not state.loading
        assert isinstance(state.error, ClosedError)
    stored = ctrl.dle(res.Todo.get, id=1)  # data already stored still reads as it is
    assert stored.error is None and not stored.loading and present(stored.data).id == 1
    gates.open(name)


async def test_an_exception_of_the_endpoints_own_code_reaches_callers_as_a_restlayer_error(
    ctrl: Controller, res: Any
) -> None:
    """A hook that raises (here `process` and `get_headers`) fails the fetch with a RestLayerError
    naming the endpoint; the original is its cause, and `get_error` gives the same error."""

    def missing_key(value: Any, *args: Any) -> Any:
        return value["no such field"]

    def expired(headers: dict[str, str]) -> dict[str, str]:
        raise RuntimeError("token expired")

    cases = [(res.raw.extend(process=missing_key), KeyError), (res.raw.extend(get_headers=expired), RuntimeError)]
    for ep, cause in cases:
        with pytest.raises(RestLayerError, match=f"{cause.__name__}: ") as info:
            await asyncio.wait_for(ctrl.fetch(ep, id=1), 10)
        assert type(info.value.__cause__) is cause
        assert ep.name in str(info.value)
        assert ctrl.get_error(ep, id=1) is info.value


def test_a_request_left_pending_in_a_closed_event_loop_is_never_joined(api: Any) -> None:
    """A loop closed with fetches still pending (run_until_complete, then close): a caller in the next
    loop joined that dead request and waited forever, its optimistic guess showed for good, and
    `close()` raised RuntimeError."""
    held: list[bool] = [True]
    arrivals: list[str] = []

    class Stuck(RestEndpoint):
        async def fetch_response(self, url: str, init: Any) -> Any:
            if held[0]:
                arrivals.append(self.method)
                await asyncio.Event().wait()  # its loop closes first: never resumes
            return await super().fetch_response(url, init)

    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, optimistic=True, endpoint_class=Stuck)
    plain = RestEndpoint(path="/todos/:id", url_prefix=api.url, schema=Todo)
    ctrl = Controller()
    left: list[asyncio.Future[Any]] = []  # the callers left pending when their loop closes

    async def leave_pending() -> None:
        await ctrl.fetch(plain, id=1)  # stored: the partial update shows a guess
        left.extend(asyncio.ensure_future(ctrl.fetch(todos.get, id=1)) for _ in range(2))  # two callers, one request
        left.append(asyncio.ensure_future(ctrl.fetch(todos.partial_update, {"id": 1}, {"title": "guess"})))
        for _ in range(100):  # bounded: both requests reach fetch_response within a few steps
            if len(arrivals) == 2:
                break
            await asyncio.sleep(0)
        assert sorted(arrivals) == ["GET", "PATCH"]

    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda loop, context: None)  # its tasks are destroyed pending, on purpose
    loop.run_until_complete(leave_pending())
    loop.close()
    held[0] = False

    async def again() -> Any:
        todo = await asyncio.wait_for(ctrl.fetch(todos.get, id=1), 10)
        return todo, ctrl.get_state()["optimistic"]

    todo, pending = asyncio.run(again())
    assert present(todo).title == "delectus aut autem" and pending == ()
    ctrl.close()  # nothing left to cancel in a closed loop: no RuntimeError


async def test_a_network_manager_serves_one_controller(res: Any, api: Any) -> None:
    """A NetworkManager given to a second Controller is refused: that controller's fetches would join the
    first one's requests, whose replies are stored in the first controller only (the second got nothing)."""
    manager = NetworkManager()
    first = Controller(managers=[manager])
    with pytest.raises(ParamError, match="NetworkManager already serves another Controller"):
        Controller(managers=[manager])
    assert (await first.fetch(res.Todo.get, id=1)).id == 1
    first.close()
    with pytest.raises(ParamError, match="NetworkManager already serves another Controller"):
        Controller(managers=[manager])  # closed, it cancelled its flights for good
