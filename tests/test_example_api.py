"""Tests of the embedded example API (examples.todo_api) over real HTTP with plain httpx."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from examples.todo_api import LocalServer, TodoDB
from examples.todo_api.db import SEED_TODOS, SEED_USERS


@pytest.fixture
def client(api: LocalServer) -> Iterator[httpx.Client]:
    """A plain httpx client bound to the freshly reset example API."""
    with httpx.Client(base_url=api.url, timeout=10) as c:
        yield c


def gql(client: httpx.Client, query: str, **variables: Any) -> httpx.Response:
    """POST a GraphQL operation."""
    return client.post("/graphql", json={"query": query, "variables": variables or None})


def is_json(response: httpx.Response) -> bool:
    """True when the reply is labelled exactly ``application/json``."""
    return bool(response.headers.get("content-type") == "application/json")


# -- REST: reads --------------------------------------------------------------------


def test_list_todos_returns_seed_as_json(client: httpx.Client) -> None:
    r = client.get("/todos")
    assert r.status_code == 200
    assert is_json(r)
    assert r.json() == list(SEED_TODOS)
    assert r.headers["x-total-count"] == str(len(SEED_TODOS))


def test_seed_shape(client: httpx.Client) -> None:
    users = client.get("/users").json()
    assert users == list(SEED_USERS)
    assert set(users[0]) == {"id", "username", "name", "email"}
    todo_users = {t["userId"] for t in client.get("/todos").json()}
    assert todo_users == {1, 2}
    comment = client.get("/comments").json()[0]
    assert set(comment) == {"id", "todoId", "userId", "body"}


def test_filters(client: httpx.Client) -> None:
    assert [t["id"] for t in client.get("/todos", params={"userId": 2}).json()] == [4, 5, 6]
    done = client.get("/todos", params={"completed": "true"}).json()
    assert [t["id"] for t in done] == [3, 4, 6]
    assert all(t["completed"] is True for t in done)
    both = client.get("/todos", params={"userId": 1, "completed": "false"}).json()
    assert [t["id"] for t in both] == [1, 2]
    assert [c["id"] for c in client.get("/comments", params={"todoId": 1}).json()] == [1, 2]
    # unknown parameters (e.g. cache busters) are ignored
    assert len(client.get("/todos", params={"_": "123"}).json()) == len(SEED_TODOS)


def test_bad_filter_value_is_400(client: httpx.Client) -> None:
    r = client.get("/todos", params={"userId": "abc"})
    assert r.status_code == 400
    assert is_json(r)
    assert "userId" in r.json()["message"]


def test_ordering(client: httpx.Client) -> None:
    titles = sorted(t["title"] for t in SEED_TODOS)
    assert [t["title"] for t in client.get("/todos?orderBy=title").json()] == titles
    assert [t["title"] for t in client.get("/todos?orderBy=-title").json()] == titles[::-1]
    assert [t["id"] for t in client.get("/todos?orderBy=id").json()] == [1, 2, 3, 4, 5, 6]
    assert [t["id"] for t in client.get("/todos?orderBy=-id").json()] == [6, 5, 4, 3, 2, 1]
    r = client.get("/todos?orderBy=nope")
    assert r.status_code == 400
    assert "orderBy" in r.json()["message"]


def test_pagination(client: httpx.Client) -> None:
    assert [t["id"] for t in client.get("/todos?page=1&limit=4").json()] == [1, 2, 3, 4]
    page2 = client.get("/todos?page=2&limit=4")
    assert [t["id"] for t in page2.json()] == [5, 6]
    assert page2.headers["x-total-count"] == "6"
    assert client.get("/todos?page=3&limit=4").json() == []
    assert [t["id"] for t in client.get("/todos?page=2&limit=2&orderBy=-id").json()] == [4, 3]
    # page without limit: default page size (10) -> all six seed todos
    assert len(client.get("/todos?page=1").json()) == 6
    assert client.get("/todos?page=0").status_code == 400


def test_get_one_and_404(client: httpx.Client) -> None:
    r = client.get("/todos/4")
    assert r.json() == {"id": 4, "userId": 2, "title": "et porro tempora", "completed": True}
    for path in ("/todos/999", "/users/999", "/comments/999", "/nowhere", "/todos/abc"):
        r = client.get(path)
        assert r.status_code == 404, path
        assert is_json(r), path
        assert r.json() == {"message": "Not found"}, path


def test_numbers_sqlite_cannot_hold_are_a_404_or_a_400_not_a_500(client: httpx.Client) -> None:
    huge = 10**30
    for method in ("GET", "PATCH", "PUT", "DELETE"):
        body = None if method in ("GET", "DELETE") else {"title": "x", "userId": 1, "completed": False}
        r = client.request(method, f"/todos/{huge}", json=body)
        assert r.status_code == 404, method
    r = client.get("/todos", params={"userId": str(huge)})
    assert r.status_code == 400 and "out of range" in r.json()["message"]
    r = client.post("/todos", json={"title": "x", "userId": huge})
    assert r.status_code == 400 and "userId" in r.json()["message"]
    assert client.get("/todos/1").status_code == 200  # the connection and the server are fine after them


def test_wrong_method_is_json_405(client: httpx.Client) -> None:
    r = client.delete("/todos")
    assert r.status_code == 405
    assert is_json(r)
    assert {"GET", "POST"} <= {m.strip() for m in r.headers["allow"].split(",")}


def test_nested_and_expand(client: httpx.Client) -> None:
    nested = client.get("/users/1/todos")
    assert is_json(nested)
    assert [t["id"] for t in nested.json()] == [1, 2, 3]
    assert [t["id"] for t in client.get("/users/2/todos?completed=true").json()] == [4, 6]
    assert client.get("/users/3/todos").json() == []
    assert client.get("/users/99/todos").status_code == 404

    user = client.get("/users/1", params={"expand": "todos"}).json()
    assert user["username"] == "bret"
    assert [t["id"] for t in user["todos"]] == [1, 2, 3]
    assert "todos" not in client.get("/users/1").json()

    todo = client.get("/todos/1?expand=user,comments").json()
    assert todo["user"]["id"] == 1
    assert [c["id"] for c in todo["comments"]] == [1, 2]
    assert client.get("/users/1?expand=nope").status_code == 400


# -- REST: writes ------------------------------------------------------------------


def test_create_todo(client: httpx.Client) -> None:
    r = client.post("/todos", json={"userId": 3, "title": "new one"})
    assert r.status_code == 201
    assert is_json(r)
    created = r.json()
    assert created == {"id": 7, "userId": 3, "title": "new one", "completed": False}
    assert client.get("/todos/7").json() == created
    assert [t["id"] for t in client.get("/users/3/todos").json()] == [7]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "title"),
        ({"title": ""}, "title"),
        ({"title": 5}, "title"),
        ({"title": "x", "completed": "yes"}, "completed"),
        ({"title": "x", "userId": "1"}, "userId"),
        ({"title": "x", "userId": True}, "userId"),
        ([1, 2], "object"),
        ({"title": "REJECT"}, "REJECT"),
    ],
)
def test_create_validation_errors(client: httpx.Client, body: Any, fragment: str) -> None:
    r = client.post("/todos", json=body)
    assert r.status_code == 400
    assert is_json(r)
    assert fragment in r.json()["message"]
    assert len(client.get("/todos").json()) == len(SEED_TODOS)


def test_invalid_json_body_is_400(client: httpx.Client) -> None:
    r = client.post("/todos", content=b"{nope", headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["message"] == "request body is not valid JSON"


def test_put_and_patch(client: httpx.Client) -> None:
    r = client.put("/todos/1", json={"title": "renamed", "completed": True, "userId": 1})
    assert r.status_code == 200
    assert r.json() == {"id": 1, "userId": 1, "title": "renamed", "completed": True}
    r = client.patch("/todos/4", json={"completed": False})
    assert r.json() == {"id": 4, "userId": 2, "title": "et porro tempora", "completed": False}
    assert client.get("/todos/4").json()["completed"] is False
    # ids in the body are ignored: the URL decides
    assert client.patch("/todos/2", json={"id": 99, "title": "t"}).json()["id"] == 2
    assert client.patch("/todos/999", json={"title": "x"}).status_code == 404
    assert client.patch("/todos/1", json={"title": "REJECT"}).status_code == 400
    assert client.put("/todos/1", json={"completed": 3}).status_code == 400


def test_delete(client: httpx.Client) -> None:
    r = client.delete("/todos/2")
    assert r.status_code == 204
    assert r.content == b""
    assert "content-type" not in r.headers
    assert client.get("/todos/2").status_code == 404
    assert client.delete("/todos/2").status_code == 404
    # deleted ids are not reused
    assert client.post("/todos", json={"title": "after"}).json()["id"] == 7


def test_users_and_comments_crud(client: httpx.Client) -> None:
    user = client.post("/users", json={"username": "kurtis", "name": "Kurtis"}).json()
    assert user == {"id": 4, "username": "kurtis", "name": "Kurtis", "email": ""}
    assert client.patch("/users/4", json={"email": "k@x.io"}).json()["email"] == "k@x.io"
    assert client.post("/users", json={"name": "no username"}).status_code == 400
    comment = client.post("/comments", json={"todoId": 5, "userId": 4, "body": "hi"})
    assert comment.status_code == 201
    assert comment.json() == {"id": 4, "todoId": 5, "userId": 4, "body": "hi"}
    assert [c["id"] for c in client.get("/todos/5/comments").json()] == [4]
    assert client.put("/comments/4", json={"body": "edited"}).json()["body"] == "edited"
    assert client.delete("/comments/4").status_code == 204
    assert client.delete("/users/4").status_code == 204
    assert client.get("/users/4").status_code == 404


def test_reset_restores_seed(api: LocalServer, client: httpx.Client) -> None:
    client.delete("/todos/1")
    client.post("/todos", json={"title": "x"})
    api.db.reset()
    assert client.get("/todos").json() == list(SEED_TODOS)
    assert client.post("/todos", json={"title": "y"}).json()["id"] == 7


# -- GraphQL -------------------------------------------------------------------------

USER_QUERY = """
query GetUser($id: ID!) {
  user(id: $id) { id username todos { id title completed userId user { id } } }
}
"""


def test_graphql_query_with_variables(client: httpx.Client) -> None:
    r = gql(client, USER_QUERY, id="2")
    assert r.status_code == 200
    assert is_json(r)
    body = r.json()
    assert "errors" not in body
    user = body["data"]["user"]
    assert user["id"] == "2"
    assert user["username"] == "antonette"
    assert [t["id"] for t in user["todos"]] == ["4", "5", "6"]
    assert user["todos"][0] == {
        "id": "4",
        "title": "et porro tempora",
        "completed": True,
        "userId": 2,
        "user": {"id": "2"},
    }


def test_graphql_lists_and_missing(client: httpx.Client) -> None:
    data = gql(client, "{ users { id } todos(userId: 1) { id } todo(id: 99) { id } }").json()
    assert data == {
        "data": {
            "users": [{"id": "1"}, {"id": "2"}, {"id": "3"}],
            "todos": [{"id": "1"}, {"id": "2"}, {"id": "3"}],
            "todo": None,
        }
    }


def test_graphql_mutations_visible_through_rest(client: httpx.Client) -> None:
    mutation = """
    mutation Update($id: ID!, $title: String, $completed: Boolean) {
      updateTodo(id: $id, title: $title, completed: $completed) { id title completed }
    }
    """
    r = gql(client, mutation, id="1", title="via graphql", completed=True)
    assert r.json() == {"data": {"updateTodo": {"id": "1", "title": "via graphql", "completed": True}}}
    assert client.get("/todos/1").json()["title"] == "via graphql"
    assert client.get("/todos/1").json()["completed"] is True

    create = (
        "mutation($userId: Int!, $title: String!) { createTodo(userId: $userId, title: $title) { id userId title } }"
    )
    created = gql(client, create, userId=3, title="made by gql").json()["data"]["createTodo"]
    assert created == {"id": "7", "userId": 3, "title": "made by gql"}
    assert client.get("/todos/7").json()["title"] == "made by gql"


def test_graphql_execution_errors_are_200_with_data(client: httpx.Client) -> None:
    r = gql(client, 'mutation { updateTodo(id: "999", title: "x") { id } }')
    assert r.status_code == 200
    body = r.json()
    assert body["data"] == {"updateTodo": None}
    assert body["errors"][0]["message"] == "Todo 999 not found"
    assert body["errors"][0]["path"] == ["updateTodo"]

    rejected = gql(client, 'mutation { createTodo(userId: 1, title: "REJECT") { id } }').json()
    assert "REJECT" in rejected["errors"][0]["message"]
    assert len(client.get("/todos").json()) == len(SEED_TODOS)


def test_graphql_request_errors(client: httpx.Client) -> None:
    syntax = gql(client, "{ user(id: 1) { id ")
    assert syntax.status_code == 200
    assert "data" not in syntax.json()
    assert syntax.json()["errors"][0]["message"].startswith("Syntax Error")

    invalid = gql(client, "{ todo(id: 1) { nope } }").json()
    assert "data" not in invalid
    assert "nope" in invalid["errors"][0]["message"]

    missing_var = gql(client, USER_QUERY).json()
    assert "data" not in missing_var
    assert "$id" in missing_var["errors"][0]["message"]

    not_json = client.post("/graphql", content=b"{", headers={"content-type": "application/json"})
    assert not_json.status_code == 400
    assert is_json(not_json)
    assert not_json.json()["errors"]
    assert client.post("/graphql", json={"variables": {}}).status_code == 400
    assert client.post("/graphql", json={"query": "{ users { id } }", "variables": 3}).status_code == 400


# -- request recording ---------------------------------------------------------------


def test_requests_are_recorded(api: LocalServer, client: httpx.Client) -> None:
    assert list(api.requests) == []
    total = api.requests.total
    client.get("/todos", params={"userId": 1, "orderBy": "title"}, headers={"X-Trace": "abc"})
    client.post("/todos", json={"title": "recorded"})

    assert len(api.requests) == 2
    assert api.requests.total == total + 2
    get, post = api.requests
    assert (get.method, get.path, get.query) == ("GET", "/todos", "userId=1&orderBy=title")
    assert get.query_params == {"userId": "1", "orderBy": "title"}
    assert get.headers["x-trace"] == "abc"
    assert all(k == k.lower() for k in get.headers)
    assert get.body == b""
    assert post.method == "POST"
    assert post.headers["content-type"] == "application/json"
    assert post.json() == {"title": "recorded"}
    assert api.requests.matching("post", "/todos") == [post]

    api.clear_requests()
    assert list(api.requests) == []
    assert api.requests.total == total + 2


def test_graphql_and_error_requests_are_recorded(api: LocalServer, client: httpx.Client) -> None:
    gql(client, "{ users { id } }")
    client.get("/nowhere")
    client.post("/todos", json={"title": "REJECT"})
    assert [(r.method, r.path) for r in api.requests] == [
        ("POST", "/graphql"),
        ("GET", "/nowhere"),
        ("POST", "/todos"),
    ]
    assert api.requests[0].json()["query"] == "{ users { id } }"


# -- test-only routes (tests/_routes.py) --------------------------------------------


def test_test_routes(client: httpx.Client) -> None:
    html = client.get("/_test/html404")
    assert html.status_code == 404
    assert html.headers["content-type"].startswith("text/html")
    assert html.text.startswith("<!doctype html>")

    assert client.get("/_test/500").json() == {"message": "boom"}
    assert client.get("/_test/500").status_code == 500
    assert client.get("/_test/503").status_code == 503

    bad = client.get("/_test/invalid-json")
    assert (bad.status_code, bad.headers["content-type"], bad.text) == (
        200,
        "application/json",
        "not json",
    )

    f = client.get("/_test/file")
    assert f.headers["content-type"] == "image/png"
    assert f.headers["content-disposition"] == 'attachment; filename="pixel.png"'
    assert f.content.startswith(b"\x89PNG")

    assert client.get("/_test/text").text == "hello"
    assert client.get("/_test/text").headers["content-type"].startswith("text/plain")
    nct = client.get("/_test/no-content-type")
    assert nct.content == b"abc"
    assert "content-type" not in nct.headers
    vnd = client.get("/_test/vnd-json")
    assert vnd.headers["content-type"] == "application/vnd.api+json; charset=utf-8"
    assert vnd.json() == {"id": 1, "x": 2}

    assert client.get("/_test/slow?ms=20").json() == {"slept": 20}
    assert len(client.get("/_test/list?n=250").json()) == 250
    assert client.get("/_test/list").json()[0] == {
        "id": 1,
        "userId": 2,
        "title": "todo 1",
        "completed": False,
    }


@pytest.mark.parametrize("code", [200, 201, 204, 400, 401, 403, 404, 409, 422, 500, 502])
def test_status_route(client: httpx.Client, code: int) -> None:
    r = client.post(f"/_test/status/{code}")
    assert r.status_code == code
    if code == 204:
        assert r.content == b""
    else:
        assert r.json() == {"message": f"status {code}"}


def test_echo_route(client: httpx.Client) -> None:
    r = client.patch("/_test/echo?a=1&b=2", content=b"payload", headers={"X-One": "1"})
    body = r.json()
    assert body["method"] == "PATCH"
    assert body["path"] == "/_test/echo"
    assert body["query"] == "a=1&b=2"
    assert body["headers"]["x-one"] == "1"
    assert body["body"] == "payload"


async def test_async_client_works(api: LocalServer) -> None:
    async with httpx.AsyncClient(base_url=api.url) as c:
        r = await c.get("/todos/1")
    assert r.json()["id"] == 1


# -- LocalServer itself --------------------------------------------------------------


def test_local_server_lifecycle_and_extra_routes() -> None:
    async def hello(request: Request) -> Response:
        return JSONResponse({"hello": request.path_params["name"]})

    before = set(threading.enumerate())
    with TodoDB() as db, LocalServer(db=db, routes=[Route("/hello/{name}", hello)]) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.port > 0
        assert server.running
        assert httpx.get(f"{server.url}/hello/bob").json() == {"hello": "bob"}
        # extra routes are matched before the API's own
        assert httpx.get(f"{server.url}/todos/1").json()["id"] == 1
        assert [r.path for r in server.requests] == ["/hello/bob", "/todos/1"]
        assert server.app.state.db is db
    assert not server.running
    assert set(threading.enumerate()) <= before
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{server.port}/todos", timeout=2)


def test_local_server_with_own_db_cleans_up(tmp_path: Any) -> None:
    server = LocalServer()
    server.start()
    path = server.db.path
    server.stop()
    import os

    assert not os.path.exists(path)
    with pytest.raises(RuntimeError):
        server.start()


def test_file_db(tmp_path: Any) -> None:
    path = tmp_path / "todo.sqlite3"
    with TodoDB(path) as db:
        db.insert("todos", {"title": "persisted", "userId": 1, "completed": False})
    with TodoDB(path, seed=False) as db:
        assert db.get("todos", 7) == {
            "id": 7,
            "userId": 1,
            "title": "persisted",
            "completed": False,
        }
