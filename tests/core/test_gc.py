"""GCPolicy: reference counts, queued items, expiry-based sweep."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from restlayer.core import Controller, GCPolicy
from restlayer.core.gc import MIN_LIFETIME
from restlayer.errors import NetworkError, ParamError
from restlayer.rest import RestEndpoint
from tests.core._gate import Gates
from tests.core._models import Clock, Recorder, Todo, stored


async def test_default_never_removes(cctrl: Controller, res: Any, clock: Clock) -> None:
    await cctrl.fetch(res.Todo.get, id=1)
    clock.advance(10**9)
    assert cctrl.get(Todo, "1") is not None


async def test_a_policy_takes_its_interval_as_a_timedelta(res: Any, api: Any) -> None:
    """`GCPolicy(interval_ms=timedelta(...))`: the fetch that schedules the first sweep used to raise TypeError."""
    policy = GCPolicy(interval_ms=timedelta(minutes=5))
    assert policy.interval_ms == 300_000
    async with Controller(gc_policy=policy) as ctrl:
        assert (await ctrl.fetch(res.Todo.get, id=1)).id == 1
        assert policy.scheduled


@pytest.mark.parametrize("interval", ["5 min", None, 0, -1, float("nan"), float("inf"), timedelta(0)])
def test_a_policy_refuses_an_interval_that_is_not_a_length_of_time(interval: Any) -> None:
    with pytest.raises(ParamError, match="interval_ms"):
        GCPolicy(interval_ms=interval)


@pytest.mark.parametrize("multiplier", ["2", None, -1, float("nan"), float("inf"), True])
def test_a_policy_refuses_a_multiplier_that_is_not_a_number(multiplier: Any) -> None:
    """A bad multiplier used to fail only inside the first timed sweep, which then never ran again."""
    with pytest.raises(ParamError, match="expiry_multiplier"):
        GCPolicy(expiry_multiplier=multiplier)


async def test_sweep_removes_released_expired_only(res: Any, clock: Clock) -> None:
    policy = GCPolicy(interval_ms=10**9)
    ctrl = Controller(clock=clock, gc_policy=policy)
    await ctrl.fetch(res.Todo.get_list)
    unwatch = ctrl.watch(res.Todo.get, id=1, callback=lambda d: None)
    clock.advance(60_000 * 2 - 1)
    policy.sweep()
    assert ctrl.get_state()["endpoints"]  # not yet old enough
    clock.advance(2)
    policy.sweep()
    state = ctrl.get_state()
    assert state["endpoints"] == {} and list(state["entities"]["Todo"]) == ["1"]  # held by the watcher
    unwatch()
    policy.sweep()
    assert ctrl.get_state()["entities"] == {}
    ctrl.close()


async def test_never_referenced_is_never_swept(res: Any, clock: Clock) -> None:
    policy = GCPolicy()
    ctrl = Controller(clock=clock, gc_policy=policy)
    ctrl.set_response(res.Todo.get, {"id": 1}, {"id": 1, "title": "x"})
    clock.advance(10**9)
    policy.sweep()
    assert ctrl.get(Todo, "1") is not None
    ctrl.close()


async def test_expire_all_then_sweep_after_min_lifetime(res: Any, clock: Clock) -> None:
    policy = GCPolicy()
    ctrl = Controller(clock=clock, gc_policy=policy)
    await ctrl.fetch(res.Todo.get_list)
    ctrl.expire_all(lambda key: True)
    clock.advance(119_000)
    policy.sweep()
    assert ctrl.get_state()["endpoints"]
    clock.advance(2_000)
    assert policy.sweep() > 0
    assert ctrl.get_state()["endpoints"] == {} and ctrl.get_state()["entities"] == {}
    ctrl.close()


async def test_failed_fetches_are_swept_like_data(res: Any, clock: Clock) -> None:
    policy = GCPolicy(interval_ms=10**9)
    ctrl = Controller(clock=clock, gc_policy=policy)
    for n in range(20):
        with pytest.raises(NetworkError):
            await ctrl.fetch(res.status, code=404, n=n)
    assert len(ctrl.get_state()["meta"]) == 20
    clock.advance(MIN_LIFETIME + 1)
    assert policy.sweep() == 20
    assert ctrl.get_state()["meta"] == {}
    ctrl.close()


async def test_requests_that_could_not_be_built_are_swept_like_failed_fetches(api: Any, clock: Clock) -> None:
    """A request refused before sending (a `ParamError`: here a header with a line break) is remembered
    per key so `last_error` and `dle` can show it. The sweep forgot the key but kept that record, so a
    worker whose requests kept failing so grew without bound, whatever its `GCPolicy`."""

    class Broken(RestEndpoint):
        def get_headers(self, headers: dict[str, str]) -> dict[str, str]:
            return {**headers, "Authorization": "Bearer a\nb"}

    broken = Broken(path="/todos/:id", url_prefix=api.url)
    policy = GCPolicy(interval_ms=10**9)
    ctrl = Controller(clock=clock, gc_policy=policy)
    for n in range(1, 21):
        with pytest.raises(ParamError, match="line break"):
            await ctrl.fetch(broken, id=n)
    assert all(isinstance(ctrl.last_error(broken, id=n), ParamError) for n in range(1, 21))
    clock.advance(MIN_LIFETIME + 1)
    policy.sweep()
    assert [n for n in range(1, 21) if ctrl.last_error(broken, id=n) is not None] == []
    assert api.requests.matching("GET", "/todos/1") == []
    ctrl.close()


async def test_a_mutation_whose_caller_was_cancelled_is_swept_once_its_reply_is_stored(
    gates: Gates, clock: Clock
) -> None:
    """A cancelled mutation runs on and its reply is stored (the server may have applied it). With
    nobody left to read that reply, its key was never queued, so the sweep never removed it: a worker
    whose mutations time out kept every such reply for good."""
    rec = Recorder()
    policy = GCPolicy(interval_ms=10**9)
    ctrl = Controller(clock=clock, gc_policy=policy, managers=[rec])
    vote = RestEndpoint(path="/gate/:name", url_prefix=gates.url, method="POST")
    name = gates.name()
    key = vote.key({"name": name}, {})
    task = asyncio.ensure_future(ctrl.fetch(vote, {"name": name}, {}))
    await gates.arrived(name)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gates.open(name)
    await rec.wait_for(stored(key))
    assert ctrl.get_state()["endpoints"][key] == {"gate": name}
    clock.advance(MIN_LIFETIME + 1)
    assert policy.sweep() == 1
    assert key not in ctrl.get_state()["meta"]
    ctrl.close()


def test_a_sweep_keeps_the_objects_of_what_it_did_not_remove(clock: Clock) -> None:
    """Removing other entities is no change to a held one: its reads stay the same objects (a list's too)."""
    policy = GCPolicy(interval_ms=10**9)
    ctrl = Controller(clock=clock, gc_policy=policy)
    get: RestEndpoint[Any] = RestEndpoint(path="/todos/:id", schema=Todo, url_prefix="http://127.0.0.1:9")
    listing: RestEndpoint[Any] = RestEndpoint(path="/todos", schema=[Todo], url_prefix="http://127.0.0.1:9")
    ctrl.set_response(listing, None, [{"id": 1, "title": "kept"}])
    ctrl.set_response(get, {"id": 2}, {"id": 2, "title": "garbage"})
    unwatch = ctrl.watch(listing, callback=lambda todos: None)
    before = ctrl.cache(listing)
    ctrl.cache(get, id=2)  # read once, then released: swept once expired
    clock.advance(10**9)
    assert policy.sweep() == 2  # todo 2 and its endpoint key
    assert "2" not in ctrl.get_state().entities["Todo"]
    after = ctrl.cache(listing)
    assert after is before and after is not None and after[0] is ctrl.get(Todo, "1")
    unwatch()
    ctrl.close()


async def test_reads_after_close_schedule_no_sweep(res: Any, clock: Clock) -> None:
    policy = GCPolicy(interval_ms=10**9)
    ctrl = Controller(clock=clock, gc_policy=policy)
    await ctrl.fetch(res.Todo.get, id=1)
    assert policy.scheduled
    ctrl.close()
    assert not policy.scheduled
    assert ctrl.cache(res.Todo.get, id=1) is not None  # reads keep working, holds are still counted
    assert not policy.scheduled


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"interval_ms": 0}, "interval_ms"),  # a sweep on every turn of the loop: a busy loop
        ({"interval_ms": -5}, "interval_ms"),
        ({"interval_ms": float("nan")}, "interval_ms"),
        ({"interval_ms": "300000"}, "interval_ms"),
        ({"expiry_multiplier": None}, "expiry_multiplier"),
        ({"expiry_multiplier": -1}, "expiry_multiplier"),
    ],
)
def test_unusable_policy_options_are_refused_when_the_policy_is_made(options: dict[str, Any], named: str) -> None:
    """They used to surface later: a TypeError from an unrelated read, a sweep that died in a timer, or a busy loop."""
    with pytest.raises(ParamError, match=named):
        GCPolicy(**options)


async def test_interval_may_be_a_timedelta_like_every_other_length_of_time(res: Any, clock: Clock) -> None:
    policy = GCPolicy(interval_ms=timedelta(minutes=5))
    assert policy.interval_ms == 300_000
    ctrl = Controller(clock=clock, gc_policy=policy)
    ctrl.set_response(res.Todo.get, {"id": 1}, {"id": 1})
    assert ctrl.cache(res.Todo.get, id=1) is not None and policy.scheduled
    ctrl.close()


def test_a_controller_used_again_in_a_new_event_loop_sweeps_in_that_loop(res: Any, clock: Clock) -> None:
    """One controller across two `asyncio.run` calls: the sweep timer set in the first loop died with
    it, and the second loop never swept (the policy believed a timer was still set)."""
    import asyncio

    from restlayer.core import Manager

    policy = GCPolicy(interval_ms=1)
    swept: list[asyncio.Event] = []

    class SweepSeen(Manager):
        def middleware(self, controller: Controller, action: Any, next: Any) -> None:
            next(action)
            if action.type == "gc" and swept:
                swept[-1].set()

    ctrl = Controller(clock=clock, gc_policy=policy, managers=[SweepSeen()])

    async def first() -> None:
        await ctrl.fetch(res.Todo.get, id=1)  # schedules a sweep in this loop, which then closes

    async def second() -> None:
        swept.append(asyncio.Event())
        await ctrl.fetch(res.Todo.get, id=2)
        clock.advance(MIN_LIFETIME * 10)  # both results released and long expired: a sweep removes them
        await asyncio.wait_for(swept[-1].wait(), timeout=5)

    asyncio.run(first())
    asyncio.run(second())
    assert ctrl.get_state()["endpoints"] == {}
    ctrl.close()


async def test_a_policy_serves_one_controller(res: Any, clock: Clock) -> None:
    """A GCPolicy given to a second Controller is refused: it swept the second one's store only (with both
    controllers' counts), so the first one's released, expired data was never removed."""
    policy = GCPolicy(interval_ms=10**9)
    first = Controller(clock=clock, gc_policy=policy)
    with pytest.raises(ParamError, match="GCPolicy already serves another Controller"):
        Controller(clock=clock, gc_policy=policy)
    await first.fetch(res.Todo.get, id=1)
    first.watch(res.Todo.get, id=1, callback=lambda d: None)()
    clock.advance(10**9)
    assert policy.sweep() == 2 and first.get_state()["endpoints"] == {}
    first.close()
