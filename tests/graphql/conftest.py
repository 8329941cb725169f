"""Fixtures of the GraphQL tests: the example server's /graphql and the shared schemas."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from examples.todo_api import LocalServer
from restlayer.graphql import GQLEndpoint
from restlayer.rest import aclose
from tests.graphql.schemas import Todo, User

USER_QUERY = "query getUser($id: ID!) { user(id: $id) { id name } }"
TODO_QUERY = """
query getTodo($id: ID!) {
  todo(id: $id) { id title completed user { id } }
}
"""
UPDATE_TODO = """
mutation updateTodo($id: ID!, $title: String, $completed: Boolean) {
  updateTodo(id: $id, title: $title, completed: $completed) { id title completed user { id } }
}
"""


@pytest.fixture(autouse=True)
async def _close_shared_client() -> AsyncIterator[None]:
    """Each test runs in its own loop: close that loop's shared client afterwards."""
    yield
    await aclose()


@pytest.fixture
def gql(api: LocalServer) -> GQLEndpoint:
    """The example server's GraphQL endpoint (no operation yet)."""
    return GQLEndpoint(f"{api.url}/graphql")


@pytest.fixture
def get_user(gql: GQLEndpoint) -> GQLEndpoint:
    """`get_user`: a function query with a `{"user": User}` schema."""
    return gql.query(lambda v: USER_QUERY, {"user": User})


@pytest.fixture
def get_todo(gql: GQLEndpoint) -> GQLEndpoint:
    return gql.query(TODO_QUERY, {"todo": Todo})


@pytest.fixture
def update_todo(gql: GQLEndpoint) -> GQLEndpoint:
    return gql.mutation(UPDATE_TODO, {"updateTodo": Todo})


def last(api: LocalServer) -> Any:
    """The last request the server received."""
    assert api.requests, "the server received no request"
    return api.requests[-1]
