"""paginate(): every page until the last, for the three styles the example API serves, async and blocking."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from restlayer import Controller, Entity, ParamError, RestEndpoint, RestLayerError, paginate, resource
from restlayer import sync as blocking
from restlayer.pagination import Page, cursor_in_body, link_header, next_url_in_body, params_from_url
from tests._present import present


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


TOTAL_TODOS = 6  # the example API's seed data (users 1 and 2 have three each)


def _page_endpoint(api: Any, path: str) -> RestEndpoint[dict[str, Any]]:
    return RestEndpoint(path=path, url_prefix=api.url, schema={"results": [Todo]})


async def test_page_number_in_the_body(api: Any) -> None:
    endpoint = _page_endpoint(api, "/pages/todos")
    async with Controller() as ctrl:
        pages = [
            p async for p in paginate(ctrl, endpoint, {"limit": 4}, next_page=cursor_in_body("next", param="page"))
        ]
        assert [len(p["results"]) for p in pages] == [4, 2]
        assert [p["page"] for p in pages] == [1, 2] and pages[-1]["next"] is None
        assert all(isinstance(t, Todo) for t in pages[1]["results"])
        assert present(ctrl.get(Todo, {"id": 6})).id == 6  # every page landed in the store
    assert len(api.requests.matching("GET", "/pages/todos")) == 2


async def test_next_url_in_the_body(api: Any) -> None:
    endpoint = _page_endpoint(api, "/pages/todos-by-url")
    async with Controller() as ctrl:
        pages = [p async for p in paginate(ctrl, endpoint, {"limit": 2}, next_page=next_url_in_body())]
    assert [t.id for page in pages for t in page["results"]] == list(range(1, TOTAL_TODOS + 1))
    assert pages[0]["next"] == f"{api.url}/pages/todos-by-url?page=2&limit=2" and pages[-1]["next"] is None


async def test_link_header(api: Any) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url)
    async with Controller() as ctrl:
        pages = [p async for p in paginate(ctrl, todos.get_list, {"userId": 2, "limit": 2}, next_page=link_header())]
    assert [[t.id for t in p] for p in pages] == [[4, 5], [6]]
    queries = [r.query for r in api.requests.matching("GET", "/todos")]
    assert queries[0] == "limit=2&userId=2" and "page=2" in queries[-1]


async def test_link_header_walks_of_one_url_at_once_read_the_same_pages(api: Any) -> None:
    """The second walk joins the first one's fetch of page 1 (no reply of its own) and still reads the header."""
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url)

    async def walk(ctrl: Controller) -> list[list[int]]:
        pages = paginate(ctrl, todos.get_list, {"userId": 2, "limit": 2}, next_page=link_header())
        return [[t.id for t in page] async for page in pages]

    async with Controller() as ctrl:
        first, second = await asyncio.gather(walk(ctrl), walk(ctrl))
    assert first == second == [[4, 5], [6]]


async def test_link_header_walks_the_pages_of_get_page_into_one_list(api: Any) -> None:
    """get_page leaves the page out of its key (every page shares the list's key): each page is still walked."""
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, pagination_field="page")
    async with Controller() as ctrl:
        pages = [p async for p in paginate(ctrl, todos.get_list.get_page, {"limit": 2}, next_page=link_header())]
        assert [[t.id for t in p] for p in pages] == [[1, 2], [1, 2, 3, 4], [1, 2, 3, 4, 5, 6]]
        assert [t.id for t in present(ctrl.get_response(todos.get_list, {"limit": 2}).data)] == [1, 2, 3, 4, 5, 6]
    assert len(api.requests.matching("GET", "/todos")) == 3


async def test_pages_fetched_at_once_are_each_requested_and_returned(api: Any) -> None:
    """Every page shares the list's key; concurrent fetches of two pages must not share one request
    (the caller asking for page 3 would get page 2), nor a page share the list's own refresh."""
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, pagination_field="page")
    async with Controller() as ctrl:
        await ctrl.fetch(todos.get_list, {"limit": 2})
        refresh = ctrl.fetch(todos.get_list, {"limit": 2})
        page2 = ctrl.fetch(todos.get_list.get_page, {"limit": 2, "page": 2})
        page3 = ctrl.fetch(todos.get_list.get_page, {"limit": 2, "page": 3})
        again = ctrl.fetch(todos.get_list.get_page, {"limit": 2, "page": 3})
        await asyncio.wait_for(asyncio.gather(refresh, page2, page3, again), 10)
    queries = sorted(r.query for r in api.requests.matching("GET", "/todos"))
    assert queries == ["limit=2", "limit=2", "limit=2&page=2", "limit=2&page=3"]  # equal pages still share


async def test_link_header_with_a_repeated_search_param(api: Any) -> None:
    """A list param goes out as a repeated key (`userId=1&userId=2`); the next link repeats it, and is followed."""
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url)
    async with Controller() as ctrl:
        params = {"userId": [1, 2], "limit": 2}
        pages = [p async for p in paginate(ctrl, todos.get_list, params, next_page=link_header())]
    assert len(pages) > 1
    queries = [r.query for r in api.requests.matching("GET", "/todos")]
    assert queries[0] == "limit=2&userId=1&userId=2"
    assert queries[1] == "limit=2&page=2&userId=1&userId=2"
    assert params_from_url(todos.get_list, {}, f"{api.url}/todos?a=1&a=2&b=3") == {"a": ["1", "2"], "b": "3"}


def test_blocking_form(api: Any) -> None:
    endpoint = _page_endpoint(api, "/pages/todos")
    with blocking.Controller() as ctrl:
        pages = list(blocking.paginate(ctrl, endpoint, {"limit": 2}, next_page=cursor_in_body(param="page")))
    assert [len(p["results"]) for p in pages] == [2, 2, 2]


def test_blocking_form_stops_cleanly_when_the_caller_breaks(api: Any) -> None:
    endpoint = _page_endpoint(api, "/pages/todos")
    with blocking.Controller() as ctrl:
        for page in blocking.paginate(ctrl, endpoint, {"limit": 1}, next_page=cursor_in_body(param="page")):
            assert page["page"] == 1
            break
    assert len(api.requests.matching("GET", "/pages/todos")) == 1


async def test_a_server_repeating_a_cursor_ends_with_an_error(api: Any) -> None:
    endpoint = RestEndpoint(path="/pages/todos", url_prefix=api.url)
    stuck = cursor_in_body("page", param="page")  # the current page number: never advances
    async with Controller() as ctrl:
        with pytest.raises(RestLayerError, match="twice"):
            async for _ in paginate(ctrl, endpoint, {"page": 2}, next_page=stuck):
                pass


async def test_a_graphql_query_walks_pages_named_by_its_variables(api: Any) -> None:
    """A GraphQL page lives in the variables (the request body), not the URL, which is the same for every
    page: the walk took page 2 for page 1 sent again and stopped with "the server sent page ... twice"."""
    from restlayer.graphql import GQLEndpoint, GQLEntity

    class Member(GQLEntity):
        name: str = ""

    get_user = GQLEndpoint(f"{api.url}/graphql").query(
        "query getUser($id: ID!) { user(id: $id) { id name } }", {"user": Member}
    )

    def following(page: Page[dict[str, Any]]) -> dict[str, object] | None:
        number = int(page.params["id"])
        return {"id": str(number + 1)} if number < 3 else None

    def stuck(page: Page[dict[str, Any]]) -> dict[str, object] | None:
        return {"id": page.params["id"]}

    async with Controller() as ctrl:
        pages = [page async for page in paginate(ctrl, get_user, {"id": "1"}, next_page=following)]
        assert [page["user"].name for page in pages] == ["Leanne Graham", "Ervin Howell", "Clementine Bauch"]
        with pytest.raises(RestLayerError, match="twice"):  # a repeated page is still told
            async for _ in paginate(ctrl, get_user, {"id": "1"}, next_page=stuck):
                pass
    assert [r.json()["variables"] for r in api.requests.matching("POST", "/graphql")][:3] == [
        {"id": "1"},
        {"id": "2"},
        {"id": "3"},
    ]


async def test_max_pages_bounds_the_walk(api: Any) -> None:
    endpoint = RestEndpoint(path="/pages/todos", url_prefix=api.url)
    async with Controller() as ctrl:
        with pytest.raises(RestLayerError, match="max_pages=3"):
            async for _ in paginate(ctrl, endpoint, {"limit": 1}, next_page=cursor_in_body(param="page"), max_pages=3):
                pass


@pytest.mark.parametrize("max_pages", [0, -1, True, None, "3", 2.5])
async def test_a_max_pages_that_is_no_positive_int_is_a_param_error_before_any_request(
    api: Any, max_pages: Any
) -> None:
    """`None`, `"3"` and `2.5` raised a bare TypeError; 0, -1 and True ended the walk before its first page
    claiming there were "more than max_pages" pages."""
    endpoint = RestEndpoint(path="/pages/todos", url_prefix=api.url)
    async with Controller() as ctrl:
        with pytest.raises(ParamError, match=r"max_pages must be an int of at least 1"):
            async for _ in paginate(ctrl, endpoint, {}, next_page=cursor_in_body(param="page"), max_pages=max_pages):
                pass
    assert api.requests.matching("GET", "/pages/todos") == []


async def test_a_failing_next_page_reader_is_a_restlayer_error_naming_it(api: Any) -> None:
    endpoint = RestEndpoint(path="/pages/todos", url_prefix=api.url)
    plain_list = RestEndpoint(path="/todos", url_prefix=api.url)

    def broken(page: Page[object]) -> None:
        raise KeyError("cursor")

    async with Controller() as ctrl:
        with pytest.raises(RestLayerError, match=r"next_page .*broken raised KeyError") as raised:
            async for _ in paginate(ctrl, endpoint, {"limit": 2}, next_page=broken):
                pass
        assert isinstance(raised.value.__cause__, KeyError)
        with pytest.raises(RestLayerError, match="list, which has no field 'next'"):  # never silently one page
            async for _ in paginate(ctrl, plain_list, {}, next_page=cursor_in_body("next")):
                pass
        not_a_reader: Any = "next"
        with pytest.raises(ParamError, match="next_page must be a function"):
            async for _ in paginate(ctrl, endpoint, {}, next_page=not_a_reader):
                pass


def test_params_from_url_keeps_path_params_and_refuses_foreign_urls() -> None:
    endpoint = RestEndpoint(path="/users/:id/todos", url_prefix="http://127.0.0.1:9")
    params = {"id": 7, "page": 1}
    assert params_from_url(endpoint, params, "/users/7/todos?page=2") == {"id": 7, "page": "2"}
    assert params_from_url(endpoint, params, "http://127.0.0.1:9/users/7/todos?page=3&limit=5") == {
        "id": 7,
        "page": "3",
        "limit": "5",
    }
    with pytest.raises(ParamError, match="not a URL this endpoint requests"):
        params_from_url(endpoint, params, "http://elsewhere.test/users/7/todos?page=2")
    last = Page({"next": None}, params, None, endpoint)
    assert next_url_in_body()(last) is None and cursor_in_body()(last) is None


def test_readers_take_members_of_objects_and_need_the_reply_for_headers() -> None:
    endpoint = RestEndpoint(path="/todos", url_prefix="http://127.0.0.1:9")

    class Body:
        next = "c2"

    assert cursor_in_body()(Page(Body(), {"limit": 2}, None, endpoint)) == {"limit": 2, "cursor": "c2"}
    with pytest.raises(RestLayerError, match="no HTTP reply to read its Link header"):
        link_header()(Page([], {}, None, endpoint))
