"""Controller methods against the example API: fetch, reads, writes, invalidation, reset."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Callable
from typing import Any, ClassVar, cast

import pytest

from restlayer._pmap import PMap
from restlayer.core import Controller, ExpiryStatus, NetworkManager, Response
from restlayer.errors import NetworkError, ParamError, ProcessingError, ResetError, RestLayerError, SchemaError
from restlayer.rest import RestEndpoint, resource
from restlayer.schema import All, Collection, Entity, Query, normalize
from tests._present import present, record
from tests.core._gate import Gates
from tests.core._models import Clock, Todo, User, gets, other_tasks_done


async def test_fetch_returns_the_stored_read_itself(ctrl: Controller, res: Any, api: Any) -> None:
    todo = await ctrl.fetch(res.Todo.get, id=1)
    assert todo == Todo(id=1, userId=1, title="delectus aut autem", completed=False)
    assert todo is ctrl.cache(res.Todo.get, id=1) is ctrl.get(Todo, {"id": 1})
    assert ctrl.get_state()["endpoints"][res.Todo.get.key({"id": 1})] == "1"
    assert len(gets(api, "/todos/1")) == 1


class _DuckManager:
    """A manager that does not subclass Manager but has its three hooks."""

    def init(self, controller: Any) -> None: ...

    def middleware(self, controller: Any, action: Any, next: Any) -> None:
        next(action)

    def cleanup(self) -> None: ...


@pytest.mark.parametrize(
    "options",
    [
        {"managers": 5},
        {"managers": NetworkManager()},  # one manager, not a list of them
        {"managers": [object()]},
        {"clock": 5},
        {"gc_policy": 5},
        {"refetch_overtaken": 5},
        {"shared": 5},
    ],
    ids=["managers-int", "managers-one", "managers-item", "clock", "gc_policy", "refetch_overtaken", "shared"],
)
def test_an_option_of_the_wrong_kind_is_refused_at_once(options: dict[str, Any]) -> None:
    """Such options failed later with a bare TypeError or AttributeError (at the first fetch, or at close)."""
    name = next(iter(options))
    with pytest.raises(ParamError, match=name):
        Controller(**options)


async def test_a_manager_needs_only_its_hooks(res: Any, api: Any) -> None:
    duck: Any = _DuckManager()  # typed code subclasses Manager; at run time the hooks are enough
    async with Controller(managers=[duck]) as ctrl:
        assert (await ctrl.fetch(res.Todo.get, id=1)).id == 1


def test_a_replaced_result_is_not_kept_alive_by_the_memo() -> None:
    """A result written over is dropped from the memo at once, with the instances only its read held."""
    ep = RestEndpoint(path="/todos", url_prefix="http://x.test", schema=[Todo])
    ctrl = Controller()
    ctrl.set_response(ep, [{"id": 1, "title": "a"}])
    first = ctrl.get_response(ep).data
    assert first is not None
    gone = weakref.ref(first[0])
    ctrl.set_response(ep, [{"id": 1, "title": "b"}])
    assert [todo.title for todo in ctrl.get_response(ep).data or []] == ["b"]
    del first
    gc.collect()
    assert gone() is None


async def test_state_by_key_and_attribute_and_snapshots(ctrl: Controller, res: Any) -> None:
    before = ctrl.get_state()
    await ctrl.fetch(res.Todo.get_list)
    after = ctrl.get_state()
    assert before["endpoints"] == {} and before.entities == {}
    assert after.endpoints is after["endpoints"] and isinstance(after.entities, PMap)
    assert set(after) == {"entities", "indexes", "entities_meta", "endpoints", "meta", "optimistic", "last_reset"}
    assert after["last_reset"] == 0 and after["optimistic"] == ()
    meta = after["meta"][res.Todo.get_list.key()]
    assert set(meta) == {"date", "fetched_at", "expires_at", "prev_expires_at"}


async def test_keyword_and_positional_args_are_one_key(ctrl: Controller, res: Any, api: Any) -> None:
    await ctrl.fetch(res.Todo.get, {"id": 2})
    assert ctrl.get_response(res.Todo.get, id=2).expiry_status == ExpiryStatus.VALID
    assert await ctrl.suspense(res.Todo.get, id=2) == Todo(id=2, userId=1, title="quis ut nam facilis")
    assert len(api.requests) == 1


async def test_expiry_lengths_default(cctrl: Controller, res: Any, clock: Clock) -> None:
    await cctrl.fetch(res.Todo.get, id=1)
    meta = cctrl.get_state()["meta"][res.Todo.get.key({"id": 1})]
    assert meta["expires_at"] - meta["date"] == 60000
    with pytest.raises(NetworkError):
        await cctrl.fetch(res.status, {"code": 404})
    meta = cctrl.get_state()["meta"][res.status.key({"code": 404})]
    assert meta["expires_at"] - meta["date"] == 1000 and meta["error_policy"] is None


async def test_500_is_soft_and_visible_without_data(ctrl: Controller, res: Any) -> None:
    with pytest.raises(NetworkError):
        await ctrl.fetch(res.status, {"code": 500})
    key = res.status.key({"code": 500})
    assert ctrl.get_state()["meta"][key]["error_policy"] == "soft"
    assert isinstance(ctrl.get_error(res.status, code=500), NetworkError)


async def test_soft_error_keeps_data_hard_error_shows(ctrl: Controller, res: Any, api: Any) -> None:
    ep = RestEndpoint(path="/todos/:id", url_prefix=api.url, schema=Todo)
    await ctrl.fetch(ep, id=1)
    ctrl.set_error(ep, {"id": 1}, NetworkError("x", status=503))
    assert ctrl.get_response(ep, id=1)[:2] == (Todo(id=1, userId=1, title="delectus aut autem"), ExpiryStatus.VALID)
    assert ctrl.get_error(ep, id=1) is None
    err = NetworkError("bad", status=400)
    ctrl.set_error(ep, {"id": 1}, err)
    assert ctrl.get_error(ep, id=1) is err
    assert present(ctrl.get_response(ep, id=1).data).id == 1


def test_set_error_refuses_a_value_that_is_not_an_exception(ctrl: Controller) -> None:
    ep = RestEndpoint(path="/todos/:id", schema=Todo)
    before = ctrl.get_state()
    with pytest.raises(ParamError, match="the error must be an exception, not 'oops'"):
        ctrl.set_error(ep, {"id": 1}, "oops")
    assert ctrl.get_state() is before


async def test_soft_error_from_server_keeps_data(ctrl: Controller, res: Any, api: Any) -> None:
    ep = RestEndpoint(path="/_test/status/:code", url_prefix=api.url)
    ctrl.set_response(ep, {"code": 503}, {"ok": 1})
    with pytest.raises(NetworkError):
        await ctrl.fetch(ep, code=503)
    assert ctrl.get_response(ep, code=503)[:2] == ({"ok": 1}, ExpiryStatus.VALID)
    assert ctrl.get_error(ep, code=503) is None


async def test_error_policy_none_means_no_policy_every_error_is_hard(ctrl: Controller, api: Any) -> None:
    """`error_policy=None` (allowed as "a function or None") is no policy, as in the original: errors show."""
    ep = RestEndpoint(path="/_test/status/:code", url_prefix=api.url, error_policy=None)
    ctrl.set_response(ep, {"code": 503}, {"ok": 1})
    with pytest.raises(NetworkError) as info:
        await ctrl.fetch(ep, code=503)
    assert info.value.status == 503 and ctrl.get_error(ep, code=503) is info.value
    assert ctrl.get_state()["meta"][ep.key({"code": 503})].get("error_policy") is None
    assert ctrl.get_response(ep, code=503).data == {"ok": 1}
    ctrl.set_error(ep, {"code": 500}, NetworkError("set by hand", status=500))
    assert str(ctrl.get_error(ep, code=500)) == "set by hand"


async def test_expire_all_and_invalidate_all(ctrl: Controller, res: Any) -> None:
    await ctrl.fetch(res.Todo.get, id=1)
    ctrl.expire_all(res.Todo.get.test_key)
    data, status, expires = ctrl.get_response(res.Todo.get, id=1)
    assert (present(data).id, status, expires) == (1, ExpiryStatus.VALID, 1)
    ctrl.invalidate_all(res.Todo.get.test_key)
    key = res.Todo.get.key({"id": 1})
    state = ctrl.get_state()
    assert key not in state["endpoints"]
    assert state["meta"][key]["invalidated"] is True and state["meta"][key]["expires_at"] == 0
    assert ctrl.get_response(res.Todo.get, id=1).expiry_status == ExpiryStatus.INVALID


async def test_invalidate_one_and_error_only_keys_untouched(ctrl: Controller, res: Any) -> None:
    with pytest.raises(NetworkError):
        await ctrl.fetch(res.status, {"code": 404})
    await ctrl.fetch(res.Todo.get, id=1)
    ctrl.invalidate_all(lambda key: True)
    assert "error" in ctrl.get_state()["meta"][res.status.key({"code": 404})]
    ctrl.invalidate(res.Todo.get, None)  # no-op
    ctrl.set_response(res.Todo.get, {"id": 1}, {"id": 1, "title": "x"})
    ctrl.invalidate(res.Todo.get, id=1)
    meta = ctrl.get_state()["meta"][res.Todo.get.key({"id": 1})]
    assert meta["invalidated"] and "error" not in meta


async def test_get_response_never_fetched_and_schemaless(ctrl: Controller, res: Any, api: Any) -> None:
    assert ctrl.get_response(res.Todo.get, {"id": 1}) == (None, ExpiryStatus.INVALIDATE_IF_STALE, 1)
    assert ctrl.get_response(res.raw, {"id": 1}) == (None, ExpiryStatus.INVALID, 0)
    assert ctrl.get_response(res.Todo.get, None) == Response(None, ExpiryStatus.VALID, float("inf"))
    await ctrl.fetch(res.Todo.get_list)
    response = ctrl.get_response(res.Todo.get, {"id": 1})
    meta = ctrl.get_state()["entities_meta"]["Todo"]["1"]
    assert response.expiry_status == ExpiryStatus.VALID and response.expires_at == meta["expires_at"]
    assert len(api.requests) == 1


async def test_a_schema_without_entities_reads_like_no_schema(ctrl: Controller, api: Any) -> None:
    """A schema that names no entity (a dict of plain members) was queried from the args like an
    entity schema: a never-fetched call read as `VALID` data made up of the schema's members, so
    `suspense` returned it without ever sending the request."""
    ep = RestEndpoint(path="/todos/:id", url_prefix=api.url, schema={"id": None, "title": None})
    assert ctrl.get_response(ep, {"id": 1}) == (None, ExpiryStatus.INVALID, 0)
    assert ctrl.dle(ep, {"id": 1}).loading
    todo = await ctrl.suspense(ep, {"id": 1})
    assert todo["title"] == "delectus aut autem"
    assert ctrl.get_response(ep, {"id": 1}).expiry_status == ExpiryStatus.VALID


async def test_delete_invalidates_entity_and_list(ctrl: Controller, res: Any) -> None:
    await ctrl.fetch(res.PlainTodo.get_list)
    deleted = await ctrl.fetch(res.PlainTodo.delete, {"id": 1})
    assert deleted == {"id": 1}  # the 204 reply: the URL params name the deleted entity
    assert ctrl.get_response(res.PlainTodo.get, {"id": 1})[:2] == (None, ExpiryStatus.INVALID)
    data, status, _ = ctrl.get_response(res.PlainTodo.get_list)
    assert [t.id for t in present(data)] == [2, 3, 4, 5, 6] and status == ExpiryStatus.VALID


async def test_normalization_failure_is_400_and_store_untouched(ctrl: Controller, res: Any, api: Any) -> None:
    ep = RestEndpoint(path="/todos", url_prefix=api.url, schema=Todo)  # a list answered for an entity
    with pytest.raises(Exception, match="Error processing") as info:
        await ctrl.fetch(ep)
    assert getattr(info.value, "status", None) == 400
    state = ctrl.get_state()
    assert state["entities"] == {} and state["endpoints"] == {}
    assert state["meta"][ep.key()]["error"] is info.value


async def test_get_set_query_all_and_indexes(ctrl: Controller, res: Any) -> None:
    assert ctrl.get(All(User)) is None
    await ctrl.fetch(res.User.get_list)
    assert present(ctrl.get(User, {"username": "bret"})).id == 1
    assert present(ctrl.get(User, "2")).username == "antonette"
    assert present(ctrl.get(User, id=3)).username == "samantha"
    names = Query(All(User), lambda users: sorted(u.username for u in users))
    assert ctrl.get(names) == ["antonette", "bret", "samantha"]
    ctrl.set(User, {"id": 9}, {"id": 9, "username": "nine"})
    assert present(ctrl.get(User, {"username": "nine"})).id == 9
    assert ctrl.get_response(res.User.get, {"username": "bret"}).expiry_status == ExpiryStatus.VALID


async def test_a_raising_test_key_or_query_process_is_a_restlayer_error_and_changes_nothing(
    ctrl: Controller, res: Any
) -> None:
    await ctrl.fetch(res.Todo.get, id=1)
    before = ctrl.get_state()
    wrong: Any = str.startswith  # takes two arguments: raises TypeError on every key
    for call in (ctrl.invalidate_all, ctrl.expire_all):
        with pytest.raises(RestLayerError, match="test_key") as raised:
            call(wrong)
        assert isinstance(raised.value.__cause__, TypeError)
    assert ctrl.get_state() is before
    broken = Query(All(Todo), lambda todos: 1 / 0)
    with pytest.raises(RestLayerError, match="process") as failed:
        ctrl.get(broken)
    assert isinstance(failed.value.__cause__, ZeroDivisionError)


async def test_update_option_rewrites_other_endpoints(ctrl: Controller, res: Any, api: Any) -> None:
    list_key = res.PlainTodo.get_list.key()
    create = res.PlainTodo.get_list.push.extend(
        schema=Todo, update=lambda new_id, *args: {list_key: lambda old: [*(old or []), new_id]}
    )
    plain_list = RestEndpoint(path="/todos", url_prefix=api.url, schema=[Todo])
    await ctrl.fetch(plain_list)
    created = await ctrl.fetch(create, {"title": "new"})
    stored_list = ctrl.get_state()["endpoints"][list_key]
    assert isinstance(stored_list, list) and stored_list[-1] == str(created.id)


async def test_update_exception_is_logged(ctrl: Controller, res: Any, caplog: Any) -> None:
    def broken(*args: Any) -> Any:
        raise RuntimeError("nope")

    ep = res.PlainTodo.get.extend(update=broken)
    await ctrl.fetch(ep, id=1)
    assert present(ctrl.get(Todo, "1")).id == 1
    assert "update() of" in caplog.text


async def test_fetch_if_stale(cctrl: Controller, res: Any, api: Any, clock: Clock) -> None:
    await cctrl.fetch(res.Todo.get, id=1)
    await cctrl.fetch_if_stale(res.Todo.get, id=1)
    assert len(api.requests) == 1
    clock.advance(60_001)
    await cctrl.fetch_if_stale(res.Todo.get, id=1)
    assert len(api.requests) == 2


async def test_negative_expiry_raises(ctrl: Controller, res: Any) -> None:
    with pytest.raises(Exception, match="must be >= 0"):
        await ctrl.fetch(res.Todo.get.extend(data_expiry_length=-1), id=1)


async def test_reset_during_slow_fetch(ctrl: Controller, res: Any, gated: Any, gates: Gates) -> None:
    await ctrl.fetch(res.Todo.get, id=1)
    name = gates.name()
    task = asyncio.ensure_future(ctrl.fetch(gated, name=name))
    await gates.arrived(name)
    ctrl.reset_entire_store()
    with pytest.raises(ResetError, match="Aborted due to RESET"):
        await task
    gates.open(name)
    await other_tasks_done()  # the dropped request has its reply now
    state = ctrl.get_state()
    assert state["endpoints"] == {} and state["entities"] == {} and state["last_reset"] > 0


async def test_fetch_after_reset_not_joined(ctrl: Controller, gated: Any, gates: Gates) -> None:
    name = gates.name()
    first = asyncio.ensure_future(ctrl.fetch(gated, name=name))
    await gates.arrived(name)
    ctrl.reset_entire_store()
    second = asyncio.ensure_future(ctrl.fetch(gated, name=name))
    await gates.arrived(name, count=2)
    gates.open(name)
    assert await second == {"gate": name}
    with pytest.raises(ResetError):
        await first
    assert gates.arrivals(name) == 2


async def test_watcher_exception_logged_other_watchers_fire(ctrl: Controller, res: Any, caplog: Any) -> None:
    seen: list[Any] = []

    def boom(data: Any) -> None:
        raise RuntimeError("watcher broke")

    ctrl.watch(res.Todo.get, id=1, callback=boom)
    ctrl.watch(res.Todo.get, id=1, callback=seen.append)
    await ctrl.fetch(res.Todo.get, id=1)
    assert [t.id for t in seen] == [1]
    assert "watch callback" in caplog.text and "watcher broke" in caplog.text
    assert present(ctrl.get(Todo, "1")).id == 1


async def test_manager_sees_actions_and_exception_is_logged(res: Any, caplog: Any) -> None:
    from restlayer.core import Manager

    seen: list[str] = []

    class Log(Manager):
        def middleware(self, controller: Controller, action: Any, next: Any) -> None:
            seen.append(action.type)
            next(action)

    class Broken(Manager):
        def middleware(self, controller: Controller, action: Any, next: Any) -> None:
            raise RuntimeError("manager broke")

    ctrl = Controller(managers=[Log(), Broken()])
    await ctrl.fetch(res.Todo.get, id=1)
    assert seen == ["fetch", "set_response"]
    assert present(ctrl.get(Todo, "1")).id == 1 and "manager broke" in caplog.text
    ctrl.close()


# ----- what fetch returns: the stored, processed read (issue 9.5, 10.18) -----------------------------


class Renamed(Entity):
    """Stores a user's `name` as `title`: a `process` that renames a field."""

    id: int = 0
    title: str = ""

    @classmethod
    def process(cls, input: Any, parent: Any, key: str | None, args: tuple[Any, ...]) -> Any:
        data = dict(input)
        data["title"] = data.pop("name", "")
        return data


async def test_fetch_returns_processed_entity_same_as_cache(ctrl: Controller, api: Any) -> None:
    ep = RestEndpoint(path="/users/:id", url_prefix=api.url, schema=Renamed)
    fetched = await ctrl.fetch(ep, id=1)
    assert fetched.title == "Leanne Graham" and "name" not in fetched.__dict__
    assert fetched is ctrl.cache(ep, id=1)


async def test_fetch_of_a_list_is_the_memoized_list(ctrl: Controller, res: Any) -> None:
    fetched = await ctrl.fetch(res.PlainTodo.get_list, userId=1)
    assert [t.id for t in fetched] == [1, 2, 3]
    assert fetched[0] is ctrl.get(Todo, {"id": 1})
    assert fetched is ctrl.cache(res.PlainTodo.get_list, userId=1)


async def test_fetch_without_schema_returns_the_process_value(ctrl: Controller, api: Any) -> None:
    ep = RestEndpoint(path="/todos/:id", url_prefix=api.url, process=lambda value, *args: {"got": value["title"]})
    fetched = await ctrl.fetch(ep, id=2)
    assert fetched == {"got": "quis ut nam facilis"}
    assert fetched is ctrl.cache(ep, id=2)


async def test_fetch_of_a_single_create_returns_the_created_item(ctrl: Controller, res: Any) -> None:
    await ctrl.fetch(res.PlainTodo.get_list, userId=1)
    created = await ctrl.fetch(res.PlainTodo.get_list.push, {"userId": 1}, {"title": "new", "userId": 1})
    assert isinstance(created, Todo) and created.title == "new"
    assert created is ctrl.cache(res.PlainTodo.get_list.push, {"userId": 1}, {"title": "new", "userId": 1})
    assert present(ctrl.cache(res.PlainTodo.get_list, userId=1))[-1] is created


async def test_delete_answered_with_empty_object_returns_params_not_defaults(ctrl: Controller, api: Any) -> None:
    todos = resource(path="/_test/empty-object/todos/:id", schema=Todo, url_prefix=api.url)
    ctrl.set(Todo, {"id": 3, "title": "doomed"})
    deleted = await ctrl.fetch(todos.delete, id=3)  # json-server answers a DELETE with {}
    assert deleted == {"id": 3}
    assert ctrl.get(Todo, {"id": 3}) is None


async def test_object_where_list_expected_fetch_and_store_agree(ctrl: Controller, api: Any) -> None:
    ep = RestEndpoint(path="/_test/todo-map", url_prefix=api.url, schema=[Todo])
    fetched = await ctrl.fetch(ep)
    assert [t.title for t in fetched] == ["one", "two"]  # an object's values, as the original reads it
    assert fetched is ctrl.cache(ep)
    assert sorted(ctrl.get_state().entities["Todo"]) == ["1", "2"]


# ----- a create's reply must name the created item (issue 9.21) --------------------------------------


async def test_create_reply_without_pk_is_refused_and_stores_nothing(ctrl: Controller, res: Any, api: Any) -> None:
    echo = resource(path="/_test/echo/todos/:id", schema=Todo, url_prefix=api.url)  # replies without an id
    await ctrl.fetch(res.PlainTodo.get_list, userId=1)  # the list a create would join
    before = ctrl.get_state()
    with pytest.raises(SchemaError, match="Missing usable primary key for Todo") as info:
        await ctrl.fetch(echo.get_list.push, {"userId": 1}, {"title": "lost", "userId": 1})
    assert isinstance(info.value, ProcessingError) and info.value.status == 400
    after = ctrl.get_state()
    assert after.entities is before.entities and after.endpoints is before.endpoints
    assert after.indexes is before.indexes and after.entities_meta is before.entities_meta
    assert [t.id for t in present(ctrl.cache(res.PlainTodo.get_list, userId=1))] == [1, 2, 3]
    assert ctrl.get_error(echo.get_list.push, {"userId": 1}, {"title": "lost"}) is info.value


async def test_create_replying_several_items_for_one_object_returns_them_all(ctrl: Controller, res: Any) -> None:
    """A create whose body is one object but whose reply lists several items gives every one of them."""
    push = res.PlainTodo.get_list.push
    await ctrl.fetch(res.PlainTodo.get_list, userId=1)
    reply = [{"id": 70, "userId": 1, "title": "a"}, {"id": 71, "userId": 1, "title": "b"}]
    ctrl.set_response(push, {"userId": 1}, {"title": "a"}, reply)
    created: Any = ctrl.get_response(push, {"userId": 1}, {"title": "a"}).data  # typed as one item: the call sent one
    assert [t.id for t in created] == [70, 71]
    assert [t.id for t in present(ctrl.cache(res.PlainTodo.get_list, userId=1))] == [1, 2, 3, 70, 71]


def test_normalize_keeps_the_placeholder_for_optimistic_guesses() -> None:
    result = normalize(Collection([Todo]).push, {"title": "draft"}, args=[{}])
    [placeholder] = result.result
    assert placeholder.startswith("MISS-")
    drafts = [{"title": "a"}, {"title": "b"}]
    seeded = [normalize(Collection([Todo]).push, drafts, args=[{}], placeholder_seed=s).result for s in "xxy"]
    assert seeded[0] == seeded[1] != seeded[2]  # one seed, the same placeholders; another seed, others
    assert len(set(seeded[0])) == 2 and all(pk.startswith("MISS-") for pk in seeded[0])
    with pytest.raises(SchemaError, match="Missing usable primary key"):
        normalize(Collection([Todo]).push, {"title": "draft"}, args=[{}], placeholders=False)


# ----- set with an updater; suspense across a reset (issue 9.12, 9.9) --------------------------------


def test_set_updater_not_called_when_nothing_is_stored(ctrl: Controller) -> None:
    calls: list[Any] = []

    def rename(current: Any) -> Any:
        calls.append(current)
        return {**current.to_dict(), "title": "renamed"}

    ctrl.set(Todo, {"id": 9}, rename)
    assert calls == [] and ctrl.get_state().entities == {}
    ctrl.set(Todo, {"id": 9, "title": "first"})
    ctrl.set(Todo, {"id": 9}, rename)
    assert [c.title for c in calls] == ["first"] and present(ctrl.get(Todo, {"id": 9})).title == "renamed"


def test_set_updater_returning_the_instances_it_got_raises_and_keeps_the_list(ctrl: Controller) -> None:
    """The instances were stored as is and read back as nothing: the list silently became empty."""
    todos = Collection([Todo])
    ctrl.set(todos, {"userId": 1}, [{"id": 1, "userId": 1}, {"id": 2, "userId": 1}])
    state = ctrl.get_state()
    with pytest.raises(SchemaError, match=r"found Todo \(an entity instance: pass its fields"):
        ctrl.set(todos, {"userId": 1}, lambda current: [*current, Todo(id=3, userId=1)])
    assert ctrl.get_state() is state
    ctrl.set(todos, {"userId": 1}, lambda current: [*(t.to_dict() for t in current), {"id": 3, "userId": 1}])
    assert [t.id for t in present(ctrl.get(todos, {"userId": 1}))] == [1, 2, 3]


def _network(ctrl: Controller) -> NetworkManager:
    return next(m for m in ctrl.managers if isinstance(m, NetworkManager))


async def test_suspense_whose_fetch_a_reset_dropped_refetches(ctrl: Controller, gated: Any, gates: Gates) -> None:
    name = gates.name()
    task = asyncio.ensure_future(ctrl.suspense(gated, name=name))
    await gates.arrived(name)  # the suspense's request is on the wire
    assert _network(ctrl).in_flight(gated.key({"name": name}))
    ctrl.reset_entire_store()
    gates.open(name)
    value = await asyncio.wait_for(task, 10)
    assert value == {"gate": name}
    assert value is ctrl.cache(gated, name=name)
    assert gates.arrivals(name) == 2


async def test_fetch_whose_request_a_reset_dropped_raises(ctrl: Controller, res: Any) -> None:
    task = asyncio.ensure_future(ctrl.fetch(res.Todo.get, id=1))
    await asyncio.sleep(0)
    ctrl.reset_entire_store()
    with pytest.raises(ResetError):
        await asyncio.wait_for(task, 10)


# ----- a deleted entity stays deleted for replies to earlier requests (issue 9.15) -------------------


def held_patch(api: Any, arrived: asyncio.Event, gate: asyncio.Event) -> RestEndpoint:
    """PATCH /todos/:id whose reply, once fully received, is held until `gate` opens."""

    class Held(RestEndpoint):
        async def parse_response(self, response: Any) -> Any:
            value = await super().parse_response(response)
            arrived.set()
            await gate.wait()
            return value

    return Held(path="/todos/:id", url_prefix=api.url, schema=Todo, method="PATCH")


async def test_slow_patch_overtaken_by_delete_does_not_revive(
    cctrl: Controller, res: Any, api: Any, clock: Clock
) -> None:
    await cctrl.fetch(res.PlainTodo.get, id=3)
    arrived, gate = asyncio.Event(), asyncio.Event()
    patch = asyncio.ensure_future(cctrl.fetch(held_patch(api, arrived, gate), {"id": 3}, {"title": "patched"}))
    await asyncio.wait_for(arrived.wait(), 10)  # the server applied the PATCH; its reply is held
    clock.advance(10)
    await cctrl.fetch(res.PlainTodo.delete, id=3)  # started later, completes first
    gate.set()
    assert await asyncio.wait_for(patch, 10) is None  # the reply lands: todo 3 reads as deleted
    assert cctrl.get(Todo, {"id": 3}) is None
    assert cctrl.get_response(res.PlainTodo.get, id=3).expiry_status == ExpiryStatus.INVALID


async def test_reply_to_request_started_after_delete_brings_entity_back(
    cctrl: Controller, res: Any, api: Any, clock: Clock
) -> None:
    await cctrl.fetch(res.PlainTodo.delete, id=3)
    api.reset()  # the server has todo 3 again
    clock.advance(10)
    todo = await cctrl.fetch(res.PlainTodo.get, id=3)
    assert todo is not None and todo.title == "fugiat veniam minus"
    assert cctrl.get(Todo, {"id": 3}) is todo


# ----- a reply to a read does not replace a result written after the read started -------------------


async def test_reply_to_a_list_read_started_before_set_response_keeps_the_set_list(
    cctrl: Controller, api: Any, clock: Clock
) -> None:
    arrived, gate = asyncio.Event(), asyncio.Event()

    class HeldList(RestEndpoint):
        async def parse_response(self, response: Any) -> Any:
            value = await super().parse_response(response)
            arrived.set()
            await gate.wait()
            return value

    todos = HeldList(path="/todos", url_prefix=api.url, schema=[Todo])
    read = asyncio.ensure_future(cctrl.fetch(todos, userId=2))
    await asyncio.wait_for(arrived.wait(), 10)  # the server answered; its reply is held
    clock.advance(10)
    cctrl.set_response(todos, {"userId": 2}, [{"id": 99, "title": "written later"}])
    gate.set()
    listed = await asyncio.wait_for(read, 10)
    assert [t.id for t in listed] == [99]  # the later write wins, and the read returns it
    assert listed is cctrl.cache(todos, userId=2)
    assert cctrl.get_state()["meta"][todos.key({"userId": 2})]["fetched_at"] == clock.now
    assert cctrl.get(Todo, {"id": 4}) is not None  # the reply's entities are still stored


# ----- one stored list, one object, however it is read (issue 9.8) -----------------------------------


class Owner(Entity):
    """A user whose `todos` member is the same stored list as `get_list(userId=<id>)`."""

    id: int = 0
    username: str = ""
    todos: list[Todo] = []
    schema = {"todos": Collection([Todo], nest_key=lambda parent, key: {"userId": parent["id"]})}


async def test_nested_and_top_level_reads_of_one_collection_are_one_list(ctrl: Controller, res: Any, api: Any) -> None:
    owners = resource(path="/users/:id", schema=Owner, url_prefix=api.url)
    user = await ctrl.fetch(owners.get, id=1, expand="todos")
    listed = present(ctrl.cache(res.PlainTodo.get_list, userId=1))
    assert [t.id for t in listed] == [1, 2, 3]
    assert user.todos is listed
    await ctrl.fetch(res.PlainTodo.get_list, userId=1)  # refetched: a new stored list
    user = present(ctrl.cache(owners.get, id=1, expand="todos"))
    listed = present(ctrl.cache(res.PlainTodo.get_list, userId=1))
    assert user.todos is listed
    await ctrl.fetch(res.PlainTodo.partial_update, {"id": 2}, {"title": "changed"})
    listed = ctrl.get(res.PlainTodo.get_list.schema, {"userId": 1})
    assert listed[1].title == "changed"
    assert present(ctrl.cache(owners.get, id=1, expand="todos")).todos is listed


async def test_page_object_where_list_expected_is_refused_storing_nothing(ctrl: Controller, api: Any) -> None:
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, schema=[Todo])  # an object of strings and a dict
    before = ctrl.get_state()
    with pytest.raises(SchemaError, match="found an object whose values are not all records"):
        await ctrl.fetch(ep)
    after = ctrl.get_state()
    assert after.entities is before.entities and after.endpoints is before.endpoints


async def test_suspense_refetches_after_each_reset_even_at_one_instant(
    cctrl: Controller, gated: Any, gates: Gates
) -> None:
    for _ in range(2):
        cctrl.reset_entire_store()  # the clock never moves: every reset has the same date
        name = gates.name()
        task = asyncio.ensure_future(cctrl.suspense(gated, name=name))
        await gates.arrived(name)  # the suspense's request is on the wire
        assert _network(cctrl).in_flight(gated.key({"name": name}))
        cctrl.reset_entire_store()
        gates.open(name)
        assert await asyncio.wait_for(task, 10) == {"gate": name}
        assert gates.arrivals(name) == 2


async def test_fetch_of_a_move_returns_the_moved_item_now_in_its_new_list(ctrl: Controller, res: Any) -> None:
    await ctrl.fetch(res.PlainTodo.get_list, userId=1)
    await ctrl.fetch(res.PlainTodo.get_list, userId=2)
    moved = await ctrl.fetch(res.PlainTodo.get_list.move, {"id": 3}, {"userId": 2})
    assert isinstance(moved, Todo) and moved.userId == 2
    assert [t.id for t in present(ctrl.cache(res.PlainTodo.get_list, userId=1))] == [1, 2]
    assert present(ctrl.cache(res.PlainTodo.get_list, userId=2))[-1] is moved


def test_set_response_with_data_the_schema_cannot_read_raises_and_changes_nothing(res: Any) -> None:
    """It used to record a ProcessingError in the key's meta (a failure of a fetch that never ran) and return."""
    ctrl = Controller()
    ctrl.set_response(res.Todo.get, {"id": 1}, {"id": 1, "title": "stored"})
    before = ctrl.get_state()
    for bad in ({"title": "no pk"}, [{"id": 1}], b'{"id": 1}'):
        with pytest.raises(ProcessingError, match="Error processing"):
            ctrl.set_response(res.Todo.get, {"id": 1}, bad)
    assert ctrl.get_state() is before
    assert ctrl.get_error(res.Todo.get, id=1) is None
    assert ctrl.cache(res.Todo.get, id=1) == Todo(id=1, title="stored")


def test_wrong_kinds_of_arguments_are_param_errors_naming_them(res: Any) -> None:
    ctrl = Controller()
    nothing: Any = None  # what a caller's mistake passes, past the type checker
    wrong: list[Any] = [None, res.Todo, "GET /todos/1"]
    for not_an_endpoint in wrong:
        with pytest.raises(ParamError, match="expected an endpoint"):
            ctrl.set_response(not_an_endpoint, {"id": 1}, {"id": 1})
        with pytest.raises(ParamError, match="expected an endpoint"):
            ctrl.cache(not_an_endpoint, {"id": 1})
    with pytest.raises(ParamError, match="is not a schema"):
        ctrl.set(res.Todo.get, {"id": 1}, {"id": 1})
    with pytest.raises(ParamError, match="test_key must be a function"):
        ctrl.expire_all(nothing)
    with pytest.raises(ParamError, match="callback must be callable"):
        ctrl.watch(res.Todo.get, {"id": 1}, callback=nothing)
    assert ctrl.get_state().entities == {}


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"clock": 5}, "clock"),
        ({"gc_policy": "every 5 minutes"}, "gc_policy"),
        ({"managers": [object()]}, "managers"),
        ({"managers": "NetworkManager"}, "managers"),
        ({"refetch_overtaken": True}, "refetch_overtaken"),
    ],
)
def test_wrong_controller_options_are_param_errors_naming_them(options: dict[str, Any], named: str) -> None:
    """They used to fail later as an AttributeError or a TypeError from the first read or write."""
    with pytest.raises(ParamError, match=named):
        Controller(**options)


def test_a_stored_result_that_does_not_fit_the_schema_reads_as_invalid(res: Any) -> None:
    """An `update=` that returns the wrong shape for a list: reads report INVALID (a refetch mends it)."""
    broken = res.Todo.get.extend(update=lambda pk, *args: {res.Todo.get_list.key(): lambda old: 5})
    ctrl = Controller()
    ctrl.set_response(res.Todo.get_list, [{"id": 1}])
    ctrl.set_response(broken, {"id": 2}, {"id": 2})
    response = ctrl.get_response(res.Todo.get_list)
    assert response.data is None and response.expiry_status == ExpiryStatus.INVALID


async def test_watch_response_also_follows_errors_and_invalidation(ctrl: Controller, res: Any) -> None:
    """`watch` follows data only; `watch_response` also hears a failed fetch and an invalidation."""
    data_only: list[object] = []
    everything: list[object] = []
    ctrl.watch(res.status, code=404, callback=data_only.append)
    stop = ctrl.watch_response(res.status, code=404, callback=everything.append)
    with pytest.raises(NetworkError):
        await ctrl.fetch(res.status, code=404)
    assert data_only == [] and everything == [None]
    ctrl.invalidate(res.status, code=404)
    assert data_only == [] and len(everything) == 2
    stop()
    ctrl.invalidate(res.status, code=404)
    assert len(everything) == 2
    with pytest.raises(ParamError, match="callback must be callable"):
        ctrl.watch_response(res.status, code=404, callback=5)  # type: ignore[arg-type]


class _FlakyTodo(Entity):
    """A Todo whose `from_json` raises while `fails` is above zero (a user hook on the read path)."""

    key = "Todo"
    fails: ClassVar[int] = 0
    id: int | None = None
    userId: int = 1
    title: str = ""
    completed: bool = False

    @classmethod
    def from_json(cls, data: Any) -> Any:
        if _FlakyTodo.fails > 0:
            _FlakyTodo.fails -= 1
            raise ValueError("cannot build")
        return super().from_json(data)


async def test_a_read_hook_that_raises_is_a_rest_layer_error_each_time_and_caches_nothing(
    ctrl: Controller, api: Any
) -> None:
    """`fetch` raised the hook's bare ValueError, and later reads gave None (the failed build stayed cached as
    "being built"). Each read raises a RestLayerError with the hook's error as its cause; once the hook
    works, the stored data reads."""
    get = resource(path="/todos/:id", schema=_FlakyTodo, url_prefix=api.url).get
    _FlakyTodo.fails = 3
    with pytest.raises(RestLayerError, match=r"_FlakyTodo\.from_json raised ValueError: cannot build") as info:
        await ctrl.fetch(get, id=1)
    assert isinstance(info.value.__cause__, ValueError)
    for read in (lambda: ctrl.cache(get, id=1), lambda: ctrl.get_response(get, id=1)):
        with pytest.raises(RestLayerError, match="from_json raised ValueError"):
            read()
    assert record(ctrl.get_state(), "Todo", "1")["title"] == "delectus aut autem"  # the reply was stored
    todo = ctrl.cache(get, id=1)
    assert todo == _FlakyTodo(id=1, userId=1, title="delectus aut autem", completed=False)
    assert ctrl.get_response(get, id=1).data is todo


def _owner_key(params: Any = None, *rest: Any) -> dict[str, Any]:
    """A Collection's args_key with a bug: a call without `owner` raises KeyError."""
    return {"owner": params["owner"]}


async def test_a_read_whose_query_hook_raises_is_a_rest_layer_error(ctrl: Controller, api: Any) -> None:
    """A Collection's `args_key` raising on a read of the store (nothing fetched for these args yet) gave
    `cache`, `dle`, `get_response` and `get` the bare KeyError; it is a RestLayerError, the hook's error as
    its cause, as a failing `from_json` on a read is."""
    todos = RestEndpoint(path="/todos", url_prefix=api.url, schema=Collection([Todo], args_key=_owner_key))
    reads: list[Callable[[], object]] = [
        lambda: ctrl.cache(todos, {"userId": 1}),
        lambda: ctrl.dle(todos, {"userId": 1}),
        lambda: ctrl.get_response(todos, {"userId": 1}),
        lambda: ctrl.get(todos.schema, {"userId": 1}),
    ]
    for read in reads:
        with pytest.raises(RestLayerError, match=r"querying Collection\(\[Todo\]\) raised KeyError") as info:
            read()
        assert isinstance(info.value.__cause__, KeyError)
    await ctrl.fetch(todos, {"owner": 1, "userId": 1})  # a working call reads as before
    assert [t.id for t in ctrl.get(todos.schema, {"owner": 1, "userId": 1}) or []] == [1, 2, 3]


async def test_list_params_with_non_str_names_are_stored_under_the_names_the_url_sends(
    ctrl: Controller, res: Any, api: Any
) -> None:
    """`{1: "a", "userId": 1}` (and a `None` name) are sent as `1=a`; the reply is stored, not lost after sending."""
    params: dict[Any, Any] = {1: "a", None: "b", "userId": 1}
    todos = await ctrl.fetch(res.Todo.get_list, params)
    assert [t.id for t in todos] == [1, 2, 3]
    assert ctrl.get_state()["endpoints"][res.Todo.get_list.key(params)] == '{"1":"a","None":"b","userId":"1"}'
    created = await ctrl.fetch(res.Todo.get_list.push, {1: "a", None: "b", "userId": 1}, {"title": "x"})
    assert [t.id for t in present(ctrl.cache(res.Todo.get_list, params))] == [1, 2, 3, created.id]
    assert len(gets(api, "/todos")) == 1


async def test_a_list_key_args_key_cannot_build_refuses_the_fetch_before_sending(ctrl: Controller, api: Any) -> None:
    """An `args_key` failing on the call's params failed after the request was sent, losing the reply."""
    by_user = RestEndpoint(
        path="/todos", url_prefix=api.url, schema=Collection([Todo], args_key=lambda p: {"userId": p["userId"]})
    )
    with pytest.raises(ParamError, match=r"args_key raised KeyError: 'userId'"):
        await ctrl.fetch(by_user, {})
    not_a_dict = by_user.extend(schema=Collection([Todo], args_key=cast(Any, lambda p: [p])))
    with pytest.raises(RestLayerError, match="args_key must return a dict"):
        await ctrl.fetch(not_a_dict, {"userId": 1})
    assert gets(api, "/todos") == [] and ctrl.get_state()["meta"] == {}
    assert [t.id for t in await ctrl.fetch(by_user, {"userId": 2})] == [4, 5, 6]


async def test_a_streamed_body_goes_to_its_caller_and_is_not_kept_in_the_store(ctrl: Controller, api: Any) -> None:
    """A `content="stream"` body is read once: the store kept it as the call's data, so every later read
    (`get_response`, `cache`, a UI) got a spent iterator yielding no bytes in place of the file, and the
    store held the reply (and its hold on the shared client) as long as it kept the call."""
    download = RestEndpoint(path="/_test/file", url_prefix=api.url, content="stream")
    stream = await ctrl.fetch(download)
    body = b"".join([chunk async for chunk in stream])
    assert body.startswith(b"\x89PNG")
    stored = ctrl.get_response(download)
    assert stored.data is None and ctrl.get_error(download) is None
    assert ctrl.cache(download) is None
    again = await ctrl.fetch(download)
    assert again is not stream and b"".join([chunk async for chunk in again]) == body
