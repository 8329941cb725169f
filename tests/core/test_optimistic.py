"""Optimistic updates: applied on every read, replaced by the reply, rolled back on error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from restlayer.core import Controller
from restlayer.errors import NetworkError, ParamError, SchemaError
from restlayer.rest import RestEndpoint, resource
from tests._present import present, record
from tests.core._gate import Gates
from tests.core._models import Clock, Recorder, Todo, User, gets, stored


async def test_partial_update_shows_then_server_value(ctrl: Controller, res: Any, api: Any) -> None:
    await ctrl.fetch(res.Todo.get, id=1)
    task = asyncio.ensure_future(ctrl.fetch(res.Todo.partial_update, {"id": 1}, {"title": "opt"}))
    await asyncio.sleep(0)
    assert present(ctrl.get(Todo, {"id": 1})).title == "opt"
    assert len(ctrl.get_state()["optimistic"]) == 1
    assert record(ctrl.get_state(), "Todo", "1")["title"] == "opt"
    result = await task
    assert result.title == "opt" and ctrl.get_state()["optimistic"] == ()
    assert gets(api, "/todos/1", "PATCH")[0].json() == {"title": "opt"}


async def test_rejected_update_rolls_back(ctrl: Controller, res: Any) -> None:
    await ctrl.fetch(res.Todo.get_list)
    before = ctrl.get_state()
    task = asyncio.ensure_future(ctrl.fetch(res.Todo.update, {"id": 1}, {"title": "REJECT"}))
    await asyncio.sleep(0)
    assert present(ctrl.get(Todo, "1")).title == "REJECT"
    with pytest.raises(NetworkError) as info:
        await task
    assert info.value.status == 400
    after = ctrl.get_state()
    assert present(ctrl.get(Todo, "1")).title == "delectus aut autem"
    assert after.entities == before.entities and after.endpoints == before.endpoints
    assert after.optimistic == ()


async def test_failing_mutation_to_status_400_rolls_back(ctrl: Controller, res: Any, api: Any) -> None:
    await ctrl.fetch(res.Todo.get, id=2)
    ep = RestEndpoint(
        path="/_test/status/:code",
        url_prefix=api.url,
        method="PATCH",
        schema=Todo,
        get_optimistic_response=lambda snap, params, body: {"id": 2, **body},
    )
    task = asyncio.ensure_future(ctrl.fetch(ep, {"code": 400}, {"title": "temp"}))
    await asyncio.sleep(0)
    assert present(ctrl.get(Todo, "2")).title == "temp"
    with pytest.raises(NetworkError):
        await task
    assert present(ctrl.get(Todo, "2")).title == "quis ut nam facilis"


async def test_body_json_cannot_encode_is_a_param_error_and_rolls_back(ctrl: Controller, res: Any) -> None:
    """A body json cannot encode (here a set) fails as a ParamError, and the optimistic update is undone."""
    await ctrl.fetch(res.Todo.get_list)
    before = ctrl.get_state()
    with pytest.raises(ParamError, match=r"Todo\.partial_update: .*body\['title'\]: set") as info:
        await ctrl.fetch(res.Todo.partial_update, {"id": 1}, {"title": {1}})
    assert isinstance(info.value.__cause__, TypeError)
    after = ctrl.get_state()
    assert after.entities == before.entities and after.optimistic == ()


async def test_partial_update_aborts_when_not_stored(ctrl: Controller, res: Any) -> None:
    task = asyncio.ensure_future(ctrl.fetch(res.Todo.partial_update, {"id": 4}, {"title": "x"}))
    await asyncio.sleep(0)
    assert ctrl.get(Todo, "4") is None  # snapshot.abort: no optimistic entity
    await task
    assert present(ctrl.get(Todo, "4")).title == "x"


def titled(gates: Gates, title: str) -> RestEndpoint:
    """A PATCH held by the gate server whose reply sets Todo 5's title to `title`."""
    return RestEndpoint(
        path="/gate/:name",
        url_prefix=gates.url,
        method="PATCH",
        schema=Todo,
        process=lambda value, *a: {"id": 5, "title": title},
    )


async def overtaken_patches(ctrl: Controller, gates: Gates, clock: Clock) -> str:
    """Start PATCH "first", then PATCH "second"; "second"'s reply lands first. Returns "first"'s gate."""
    a, b = gates.name(), gates.name()
    first = asyncio.ensure_future(ctrl.fetch(titled(gates, "first"), {"name": a}, {}))
    await gates.arrived(a)
    clock.advance(1)
    second = asyncio.ensure_future(ctrl.fetch(titled(gates, "second"), {"name": b}, {}))
    await gates.arrived(b)
    gates.open(b)
    await second
    gates.open(a)
    await first
    return a


async def test_last_started_wins_whatever_reply_order(cctrl: Controller, res: Any, gates: Gates, clock: Clock) -> None:
    await cctrl.fetch(res.Todo.get, id=5)
    await overtaken_patches(cctrl, gates, clock)
    assert present(cctrl.get(Todo, "5")).title == "second"


async def test_refetch_overtaken_mutation_shows_the_server_state(
    res: Any, api: Any, gates: Gates, clock: Clock
) -> None:
    rec = Recorder()
    asked: list[tuple[Any, ...]] = []

    def refetch(endpoint: Any, args: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
        asked.append(args)
        return res.Todo.get, ({"id": 5},)

    ctrl = Controller(clock=clock, managers=[rec], refetch_overtaken=refetch)
    await ctrl.fetch(res.Todo.get, id=5)
    api.db.update("todos", 5, {"title": "first"})  # the server applied "second", then "first"
    first_gate = await overtaken_patches(ctrl, gates, clock)
    assert [args[0]["name"] for args in asked] == [first_gate]  # only "first" was overtaken
    await rec.wait_for(stored(res.Todo.get.key({"id": 5})), count=2)
    assert present(ctrl.get(Todo, "5")).title == "first"
    ctrl.close()


async def test_refetch_overtaken_leaves_mutations_in_order_alone(res: Any, gates: Gates, clock: Clock) -> None:
    asked: list[Any] = []
    ctrl = Controller(clock=clock, refetch_overtaken=lambda ep, args: asked.append(args))
    await ctrl.fetch(res.Todo.get, id=5)
    name = gates.name()
    gates.open(name)
    await ctrl.fetch(titled(gates, "only"), {"name": name}, {})
    assert asked == [] and present(ctrl.get(Todo, "5")).title == "only"
    ctrl.close()


async def test_push_without_id_then_reply(ctrl: Controller, res: Any) -> None:
    await ctrl.fetch(res.Todo.get_list)
    task = asyncio.ensure_future(ctrl.fetch(res.Todo.get_list.push, {"title": "new one"}))
    await asyncio.sleep(0)
    titles = [t.title for t in present(ctrl.get_response(res.Todo.get_list).data)]
    assert titles[-1] == "new one"
    await task
    data = present(ctrl.get_response(res.Todo.get_list).data)
    assert data[-1].title == "new one" and data[-1].id == 7 and len(data) == 7
    assert not any(pk.startswith("MISS") for pk in ctrl.get_state()["entities"]["Todo"])


async def test_a_pending_create_keeps_its_placeholder_pk_when_the_store_changes(ctrl: Controller, res: Any) -> None:
    def placeholders() -> list[str]:
        return [pk for pk in ctrl.get_state()["entities"]["Todo"] if pk.startswith("MISS-")]

    await ctrl.fetch(res.Todo.get_list)
    task = asyncio.ensure_future(ctrl.fetch(res.Todo.get_list.push, {"title": "new one"}))
    await asyncio.sleep(0)  # started: its guess shows under a placeholder pk
    shown = placeholders()
    assert len(shown) == 1
    ctrl.set(User, {"id": 5, "username": "other"})  # an unrelated write recomputes the overlay
    assert placeholders() == shown
    assert present(ctrl.get_response(res.Todo.get_list).data)[-1].title == "new one"
    await task
    assert placeholders() == []


async def test_reads_keep_their_objects_while_a_guess_is_pending_and_other_data_changes(
    ctrl: Controller, res: Any
) -> None:
    await ctrl.fetch(res.Todo.get_list)
    task = asyncio.ensure_future(ctrl.fetch(res.Todo.partial_update, {"id": 1}, {"title": "guess"}))
    await asyncio.sleep(0)  # started: its guess shows
    listed, one = ctrl.cache(res.Todo.get_list), present(ctrl.get(Todo, {"id": 1}))
    assert one.title == "guess" and present(listed)[0] is one
    ctrl.set(User, {"id": 5, "username": "other"})  # unrelated: the guess is recomputed, equal
    assert ctrl.cache(res.Todo.get_list) is listed and ctrl.get(Todo, {"id": 1}) is one
    ctrl.set(Todo, {"id": 1, "completed": True})  # the record under the guess changed: new objects
    changed = present(ctrl.get(Todo, {"id": 1}))
    assert changed is not one and changed.completed
    assert present(ctrl.cache(res.Todo.get_list))[0] is changed
    await task


async def test_failing_optimistic_guess_is_reported_by_get_error_until_settled(
    ctrl: Controller, res: Any, caplog: Any
) -> None:
    def bad_guess(snapshot: Any, params: Any, body: Any) -> Any:
        raise ValueError("no guess for this body")

    ep = res.Todo.partial_update.extend(get_optimistic_response=bad_guess)
    await ctrl.fetch(res.Todo.get, id=1)
    task = asyncio.ensure_future(ctrl.fetch(ep, {"id": 1}, {"title": "sent"}))
    await asyncio.sleep(0)  # started: pending, its guess failed
    error = ctrl.get_error(ep, {"id": 1}, {"title": "sent"})
    assert isinstance(error, ValueError) and str(error) == "no guess for this body"
    assert present(ctrl.get(Todo, {"id": 1})).title == "delectus aut autem"  # the guess is a no-op
    ctrl.set(User, {"id": 5, "username": "other"})  # another change recomputes the overlay
    assert isinstance(ctrl.get_error(ep, {"id": 1}, {"title": "sent"}), ValueError)
    logged = [r for r in caplog.records if "get_optimistic_response" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert (await task).title == "sent"
    assert ctrl.get_error(ep, {"id": 1}, {"title": "sent"}) is None


async def test_optimistic_guess_the_schema_cannot_read_is_reported_once_like_a_failing_guess(
    ctrl: Controller, res: Any, caplog: Any
) -> None:
    """A guess of the wrong shape was logged again on every change of the store, and `get_error` missed it."""
    ep = res.Todo.partial_update.extend(get_optimistic_response=lambda snapshot, params, body: [params])
    await ctrl.fetch(res.Todo.get, id=1)
    task = asyncio.ensure_future(ctrl.fetch(ep, {"id": 1}, {"title": "sent"}))
    await asyncio.sleep(0)  # started: pending, its guess cannot be stored
    for pk in range(5, 10):  # other changes recompute the overlay
        ctrl.set(User, {"id": pk, "username": "other"})
        assert present(ctrl.get(Todo, {"id": 1})).title == "delectus aut autem"  # the guess is a no-op
    error = ctrl.get_error(ep, {"id": 1}, {"title": "sent"})
    assert isinstance(error, SchemaError) and "found a list" in str(error)
    assert len([r for r in caplog.records if "optimistic" in r.getMessage()]) == 1
    assert (await task).title == "sent"
    assert ctrl.get_error(ep, {"id": 1}, {"title": "sent"}) is None


async def test_snapshot_reads_skip_a_none_argument_like_the_controller(ctrl: Controller, res: Any) -> None:
    """`snapshot.get_response(ep, None)` is the skipped read `ctrl.get_response(ep, None)` gives, not an error."""
    seen: list[object] = []

    def guess(snapshot: Any, params: Any, body: Any) -> Any:
        seen.append(snapshot.get_response(res.Todo.get, None))
        seen.append(snapshot.get_error(res.Todo.get, None))
        return {**params, **body}

    vote = res.Todo.partial_update.extend(get_optimistic_response=guess)
    task = asyncio.ensure_future(ctrl.fetch(vote, {"id": 1}, {"title": "opt"}))
    await asyncio.sleep(0)
    assert present(ctrl.get(Todo, {"id": 1})).title == "opt"
    assert ctrl.get_error(vote, {"id": 1}, {"title": "opt"}) is None
    assert seen[:2] == [ctrl.get_response(res.Todo.get, None), None]
    await asyncio.wait_for(task, 10)


async def test_cancelling_a_mutations_caller_still_stores_the_reply(ctrl: Controller, res: Any, api: Any) -> None:
    await ctrl.fetch(res.Todo.get, id=1)
    arrived, gate = asyncio.Event(), asyncio.Event()

    class HeldPatch(RestEndpoint):
        async def parse_response(self, response: Any) -> Any:
            value = await super().parse_response(response)
            arrived.set()
            await gate.wait()
            return value

    held = resource(
        path="/todos/:id", schema=Todo, url_prefix=api.url, optimistic=True, endpoint_class=HeldPatch
    ).partial_update
    task = asyncio.ensure_future(ctrl.fetch(held, {"id": 1}, {"title": "sent"}))
    await asyncio.wait_for(arrived.wait(), 10)  # the server applied the PATCH; its reply is held
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert present(ctrl.get(Todo, "1")).title == "sent"  # the guess stays while the request runs on
    settled = asyncio.Event()
    unwatch = ctrl.watch_response(held, {"id": 1}, {"title": "sent"}, callback=lambda data: settled.set())
    gate.set()
    await asyncio.wait_for(settled.wait(), 10)
    unwatch()
    assert ctrl.get_state()["optimistic"] == ()
    assert present(ctrl.get(Todo, "1")).title == "sent" == present(api.db.get("todos", 1))["title"]
