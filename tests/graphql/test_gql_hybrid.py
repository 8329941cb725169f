"""Hybrid resources: GraphQL members mixed into a REST resource with `extend`."""

from __future__ import annotations

from typing import Any

import pytest

from examples.todo_api import LocalServer
from restlayer import Controller
from restlayer.graphql import GQLEndpoint
from restlayer.rest import ExtendedResource, RestEndpoint, resource
from restlayer.schema import denormalize, normalize
from tests.graphql.conftest import TODO_QUERY, UPDATE_TODO, USER_QUERY, last
from tests.graphql.schemas import Todo, User


def hybrid(url: str) -> ExtendedResource:
    """REST CRUD on /todos/:id plus GraphQL `gql_get` / `gql_update` over the same data."""
    gql = GQLEndpoint(f"{url}/graphql")
    return resource(path="/todos/:id", schema=Todo, url_prefix=url).extend(
        lambda base: {
            "gql_get": gql.query(TODO_QUERY, {"todo": Todo}),
            "gql_update": gql.mutation(UPDATE_TODO, {"updateTodo": Todo}),
        }
    )


@pytest.fixture
def todos(api: LocalServer) -> ExtendedResource:
    return hybrid(api.url)


def test_extend_adds_graphql_members_next_to_rest(todos: ExtendedResource) -> None:
    assert list(todos) == ["get", "get_list", "update", "partial_update", "delete", "gql_get", "gql_update"]
    assert isinstance(todos.get, RestEndpoint) and not isinstance(todos.get, GQLEndpoint)
    assert isinstance(todos.gql_get, GQLEndpoint) and todos.gql_get.side_effect is None
    assert todos.gql_update.side_effect is True
    assert todos["gql_get"] is todos.gql_get
    assert todos.members()["gql_update"] is todos.gql_update


def test_member_options_override_on_graphql_members(todos: ExtendedResource) -> None:
    changed = todos.extend(gql_get={"data_expiry_length": 0})
    assert isinstance(changed.gql_get, GQLEndpoint)
    assert changed.gql_get.data_expiry_length == 0
    assert changed.gql_get.key({"id": "1"}) == todos.gql_get.key({"id": "1"})
    assert todos.gql_get.data_expiry_length is None
    renamed = todos.extend("gql_get", name="Todo.gql_get")
    assert renamed.gql_get.name == "Todo.gql_get" and isinstance(renamed.gql_get, GQLEndpoint)


async def test_rest_and_graphql_replies_are_one_entity(api: LocalServer, todos: ExtendedResource) -> None:
    rest = await todos.get({"id": 3})
    state = normalize(todos.get.schema, rest, ({"id": 3},))
    assert state.entities["Todo"]["3"] == {"id": 3, "userId": 1, "title": "fugiat veniam minus", "completed": True}
    api.db.update("todos", 3, {"title": "changed on the server"})
    over_gql = await todos.gql_get({"id": "3"})
    assert over_gql["todo"]["user"] == {"id": "1"}
    merged = normalize(todos.gql_get.schema, over_gql, ({"id": "3"},), state=state)
    assert merged.result == {"todo": "3"}
    assert list(merged.entities["Todo"]) == ["3"]
    assert merged.entities["Todo"]["3"] == {
        "id": 3,
        "userId": 1,
        "title": "changed on the server",
        "completed": True,
    }
    todo: Any = denormalize(Todo, "3", merged.entities)
    assert isinstance(todo, Todo) and todo.title == "changed on the server" and todo.id == 3


async def test_graphql_mutation_then_rest_read(api: LocalServer, todos: ExtendedResource) -> None:
    await todos.gql_update({"id": "4", "completed": False})
    assert last(api).path == "/graphql"
    assert (await todos.get({"id": 4}))["completed"] is False
    assert last(api).path == "/todos/4"
    await todos.partial_update({"id": 4}, {"title": "rest title"})
    assert (await todos.gql_get({"id": "4"}))["todo"]["title"] == "rest title"


async def test_a_numeric_id_of_a_gql_entity_is_stored_and_read_as_its_text(api: LocalServer) -> None:
    """`GQLEntity.id` is a str (a GraphQL ID): a REST member's numeric id (`1`) is the same entity, stored and
    returned as `"1"`, not an int its type does not allow."""
    users = resource(path="/users/:id", schema=User, url_prefix=api.url).extend(
        lambda base: {"gql_get": GQLEndpoint(f"{api.url}/graphql").query(USER_QUERY, {"user": User})}
    )
    async with Controller() as ctrl:
        over_rest = await ctrl.fetch(users.get, {"id": 1})
        assert over_rest.id == "1" and over_rest.name == "Leanne Graham"
        stored: Any = ctrl.get_state()["entities"]["User"]
        assert stored["1"]["id"] == "1"
        api.db.update("users", 1, {"name": "renamed"})
        over_gql = await ctrl.fetch(users.gql_get, {"id": "1"})
        user = ctrl.get(User, {"id": 1})
        assert over_gql["user"] is user and user is not None
        assert user.id == "1" and user.name == "renamed"
