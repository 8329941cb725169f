"""GraphQL endpoints through the Controller: fetch, suspense, dle, live, optimistic, hybrid."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from examples.todo_api import LocalServer
from restlayer.core import Controller, ExpiryStatus
from restlayer.errors import NetworkError, RestLayerError
from restlayer.graphql import GQLEndpoint, GQLNetworkError
from restlayer.rest import ExtendedResource
from tests._present import present
from tests.graphql.schemas import Todo, User
from tests.graphql.test_gql_hybrid import hybrid


@pytest.fixture
def ctrl() -> Controller:
    return Controller()


@pytest.fixture
def todos(api: LocalServer) -> ExtendedResource:
    return hybrid(api.url)


async def test_fetch_stores_entities_and_result(api: LocalServer, ctrl: Controller, get_user: GQLEndpoint) -> None:
    data = await ctrl.fetch(get_user, {"id": "2"})
    assert isinstance(data["user"], User) and data["user"].name == "Ervin Howell"
    state = ctrl.get_state()
    assert dict(state["entities"]["User"]) == {"2": {"id": "2", "name": "Ervin Howell"}}
    assert state["endpoints"][get_user.key({"id": "2"})] == {"user": "2"}
    assert ctrl.get(User, {"id": "2"}) == data["user"]
    assert present(ctrl.get_response(get_user, id="2").data)["user"] is ctrl.get(User, {"id": "2"})


async def test_fetch_without_variables(api: LocalServer, ctrl: Controller, gql: GQLEndpoint) -> None:
    users = gql.query("query users { users { id name } }", {"users": [User]})
    data = await ctrl.fetch(users)
    assert [u.id for u in data["users"]] == ["1", "2", "3"]
    assert api.requests[-1].json()["variables"] == {}
    assert present(ctrl.get_response(users).data)["users"][0].name == "Leanne Graham"
    assert users.key() in ctrl.get_state()["endpoints"]


async def test_error_is_stored_with_hard_policy(api: LocalServer, ctrl: Controller) -> None:
    ep = GQLEndpoint(f"{api.url}/_test/500").query("query boom { x }")
    with pytest.raises(GQLNetworkError) as info:
        await ctrl.fetch(ep)
    assert info.value.status == 400 and info.value.errors == [{"message": "boom"}]
    assert ctrl.get_error(ep) is info.value
    meta = ctrl.get_state()["meta"][ep.key()]
    assert meta["error_policy"] is None


async def test_graphql_errors_through_the_controller(api: LocalServer, ctrl: Controller, get_user: GQLEndpoint) -> None:
    with pytest.raises(GQLNetworkError, match="Invalid id") as info:
        await ctrl.fetch(get_user, {"id": "nope"})
    assert info.value.data == {"user": None}
    assert ctrl.get_error(get_user, {"id": "nope"}) is info.value
    with pytest.raises(GQLNetworkError):
        await ctrl.suspense(get_user, {"id": "nope"})


async def test_schema_mismatch_is_a_400_error(api: LocalServer, ctrl: Controller, gql: GQLEndpoint) -> None:
    ep = gql.query("query { todo: todos { id title } }", {"todo": Todo})
    with pytest.raises(RestLayerError) as info:
        await ctrl.fetch(ep)
    assert info.value.status == 400
    assert ep.key() not in ctrl.get_state()["endpoints"]
    assert "Todo" not in ctrl.get_state()["entities"]


async def test_suspense_fetches_once(api: LocalServer, ctrl: Controller, get_user: GQLEndpoint) -> None:
    first = await ctrl.suspense(get_user, {"id": "3"})
    again = await ctrl.suspense(get_user, id="3")
    assert first["user"].name == "Clementine Bauch"
    assert again is first
    assert len(api.requests.matching("POST", "/graphql")) == 1
    assert ctrl.get_response(get_user, {"id": "3"}).expiry_status == ExpiryStatus.VALID


async def test_suspense_refetches_after_invalidate_all(
    api: LocalServer, ctrl: Controller, get_user: GQLEndpoint
) -> None:
    await ctrl.suspense(get_user, {"id": "1"})
    await ctrl.suspense(get_user, {"id": "2"})
    ctrl.invalidate_all(get_user.test_key)
    assert ctrl.get_response(get_user, {"id": "1"}).expiry_status == ExpiryStatus.INVALID
    await ctrl.suspense(get_user, {"id": "1"})
    assert len(api.requests.matching("POST", "/graphql")) == 3


async def test_invalidate_all_with_a_query_function_that_needs_its_variables(
    api: LocalServer, ctrl: Controller, gql: GQLEndpoint
) -> None:
    def text(variables: dict[str, str]) -> str:
        return 'query { user(id: "' + variables["id"] + '") { id name } }'  # no text without an id

    get_user = gql.query(text, {"user": User})
    get_todo = gql.query(lambda v: 'query { todo(id: "' + v["id"] + '") { id } }', {"todo": Todo})
    await ctrl.fetch(get_user, {"id": "1"})
    await ctrl.fetch(get_user, {"id": "2"})
    await ctrl.fetch(get_todo, {"id": "1"})
    assert get_user.test_key(get_user.key({"id": "2"}))
    assert not get_user.test_key(get_todo.key({"id": "1"}))
    ctrl.invalidate_all(get_user.test_key)
    assert ctrl.get_response(get_user, {"id": "1"}).expiry_status == ExpiryStatus.INVALID
    assert ctrl.get_response(get_user, {"id": "2"}).expiry_status == ExpiryStatus.INVALID
    assert ctrl.get_response(get_todo, {"id": "1"}).expiry_status == ExpiryStatus.VALID


async def test_dle_loading_then_data(api: LocalServer, ctrl: Controller, get_user: GQLEndpoint) -> None:
    arrived = asyncio.Event()
    unwatch = ctrl.watch(get_user, {"id": "1"}, callback=lambda data: arrived.set())
    loading = ctrl.dle(get_user, {"id": "1"})
    assert loading.loading and loading.error is None
    await asyncio.wait_for(arrived.wait(), 10)  # the background fetch stored its reply
    unwatch()
    now = ctrl.dle(get_user, {"id": "1"})
    assert not now.loading and now.error is None
    assert present(now.data)["user"].name == "Leanne Graham"
    assert len(api.requests.matching("POST", "/graphql")) == 1
    assert ctrl.dle(get_user, None) == (None, False, None)


async def test_live_sees_a_mutation(
    api: LocalServer, ctrl: Controller, get_todo: GQLEndpoint, update_todo: GQLEndpoint
) -> None:
    seen: list[Any] = []
    first = asyncio.Event()

    async def follow() -> None:
        async for data in ctrl.live(get_todo, {"id": "5"}):
            seen.append(data["todo"])
            first.set()
            if len(seen) == 2:
                return

    task = asyncio.create_task(follow())
    await asyncio.wait_for(first.wait(), 10)
    assert seen[0].title == "laboriosam mollitia"
    await ctrl.fetch(update_todo, {"id": "5", "title": "live change"})
    await asyncio.wait_for(task, 10)
    assert [t.title for t in seen] == ["laboriosam mollitia", "live change"]


def _optimistic_update(snapshot: Any, variables: dict[str, Any]) -> Any:
    """Expected reply of UPDATE_TODO: the stored todo with the sent fields changed."""
    stored = snapshot.get(Todo, {"id": variables["id"]})
    if stored is None:
        raise snapshot.abort
    fields = {k: v for k, v in variables.items() if k in ("title", "completed")}
    return {"updateTodo": {**stored.to_dict(), **fields, "id": variables["id"]}}


async def test_optimistic_mutation_applies_then_settles(
    api: LocalServer, ctrl: Controller, todos: ExtendedResource
) -> None:
    update = todos.gql_update.extend(get_optimistic_response=_optimistic_update)
    await ctrl.fetch(todos.get, id=1)
    task = asyncio.create_task(ctrl.fetch(update, {"id": "1", "title": "optimistic"}))
    await asyncio.sleep(0)
    assert present(ctrl.get(Todo, {"id": 1})).title == "optimistic"  # before the reply
    assert present(ctrl.get_response(todos.get, id=1).data).title == "optimistic"
    result = await task
    assert result["updateTodo"].title == "optimistic"
    assert present(ctrl.get(Todo, {"id": 1})).title == "optimistic"
    assert api.db.get("todos", 1)["title"] == "optimistic"  # type: ignore[index]


async def test_optimistic_mutation_rolls_back_on_error(
    api: LocalServer, ctrl: Controller, todos: ExtendedResource
) -> None:
    update = todos.gql_update.extend(get_optimistic_response=_optimistic_update)
    await ctrl.fetch(todos.get, id=2)
    task = asyncio.create_task(ctrl.fetch(update, {"id": "2", "title": "REJECT"}))
    await asyncio.sleep(0)
    assert present(ctrl.get(Todo, {"id": 2})).title == "REJECT"
    with pytest.raises(GQLNetworkError, match="rejected"):
        await task
    assert present(ctrl.get(Todo, {"id": 2})).title == "quis ut nam facilis"
    assert present(ctrl.get_response(todos.get, id=2).data).title == "quis ut nam facilis"


# -- hybrid: one entity through both protocols ----------------------------------------------


async def test_graphql_mutation_visible_through_rest_member(
    api: LocalServer, ctrl: Controller, todos: ExtendedResource
) -> None:
    rest = await ctrl.fetch(todos.get, id=3)
    assert rest.title == "fugiat veniam minus" and rest.userId == 1
    rest_key = todos.get.key({"id": 3})
    before = api.requests.total
    await ctrl.fetch(todos.gql_update, {"id": "3", "title": "over graphql", "completed": False})
    assert api.requests.total - before == 1 and api.requests[-1].path == "/graphql"
    seen = ctrl.get_response(todos.get, id=3)
    assert seen.expiry_status == ExpiryStatus.VALID
    data = present(seen.data)
    assert (data.title, data.completed, data.userId, data.id) == ("over graphql", False, 1, 3)
    assert ctrl.get(Todo, {"id": 3}) is seen.data
    assert await ctrl.suspense(todos.get, id=3) is seen.data
    assert api.requests.total - before == 1  # no REST request
    assert list(ctrl.get_state()["entities"]["Todo"]) == ["3"]
    assert ctrl.get_state()["endpoints"][rest_key] == "3"


async def test_rest_change_visible_through_graphql_member(
    api: LocalServer, ctrl: Controller, todos: ExtendedResource
) -> None:
    data = await ctrl.suspense(todos.gql_get, {"id": "4"})
    assert data["todo"].title == "et porro tempora" and data["todo"].userId == 2 and data["todo"].id == 4
    await ctrl.fetch(todos.partial_update, {"id": 4}, {"title": "over rest"})
    before = api.requests.total
    after = await ctrl.suspense(todos.gql_get, {"id": "4"})
    assert after["todo"].title == "over rest"
    assert ctrl.get(Todo, {"id": 4}) is after["todo"]
    assert api.requests.total == before


async def test_graphql_list_and_rest_item_share_entities(
    api: LocalServer, ctrl: Controller, todos: ExtendedResource, gql: GQLEndpoint
) -> None:
    by_user = gql.query(
        "query byUser($userId: Int) { todos(userId: $userId) { id title completed user { id } } }",
        {"todos": [Todo]},
    )
    listed = await ctrl.suspense(by_user, {"userId": 1})
    assert [t.id for t in listed["todos"]] == [1, 2, 3]
    await ctrl.fetch(todos.update, {"id": 2}, {"title": "put over rest", "completed": True})
    relisted = present(ctrl.get_response(by_user, {"userId": 1}).data)
    assert relisted["todos"][1].title == "put over rest" and relisted["todos"][1].completed is True
    assert relisted is not listed


async def test_transport_error_is_soft(ctrl: Controller, get_user: GQLEndpoint) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ep = get_user.extend(url=f"http://127.0.0.1:{port}/graphql")
    with pytest.raises(NetworkError) as info:
        await ctrl.fetch(ep, {"id": "1"})
    assert info.value.status == 500
    assert ctrl.get_state()["meta"][ep.key({"id": "1"})]["error_policy"] == "soft"
