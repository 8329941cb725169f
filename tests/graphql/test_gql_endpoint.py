"""GQLEndpoint against the example server's POST /graphql.

Request assertions read what the server received (`api.requests`), not a mock.
"""

from __future__ import annotations

import datetime
import json
import math
import socket
import urllib.parse
from typing import Any

import httpx
import pytest

from examples.todo_api import LocalServer
from restlayer.core import Controller
from restlayer.errors import (
    BodyTooLargeError,
    NetworkError,
    ParamError,
    RedirectError,
    RestLayerError,
    SchemaError,
    TransportError,
)
from restlayer.graphql import GQLEndpoint, GQLEntity, GQLNetworkError, clean_query
from restlayer.rest import RestEndpoint
from restlayer.schema import normalize
from tests.graphql.conftest import TODO_QUERY, USER_QUERY, last
from tests.graphql.schemas import Todo, User

# -- query, mutation, keys and caching ---------------------------------------------


def test_key_is_query_and_compact_variables_in_given_order() -> None:
    get_user = GQLEndpoint("http://x.test/graphql").query(lambda v: USER_QUERY, {"user": User})
    assert get_user.key({"id": "5", "a": 1}) == (
        'query getUser($id: ID!) { user(id: $id) { id name } } {"id":"5","a":1}'
    )
    assert get_user.key({"a": 1, "id": "5"}).endswith('{"a":1,"id":"5"}')
    assert get_user.key({"name": "zoë"}).endswith('{"name":"zoë"}')


@pytest.mark.parametrize(
    ("value", "named"),
    [(datetime.date(2024, 1, 2), "date"), ({1, 2}, "set"), (math.nan, "nan"), (-math.inf, "-inf")],
    ids=["date", "set", "nan", "infinity"],  # NaN was keyed (and sent by a subscription) as `NaN`: no JSON
)
async def test_variables_json_cannot_encode_are_a_param_error_naming_the_member(
    api: LocalServer, get_user: GQLEndpoint, value: object, named: str
) -> None:
    message = rf"getUser: the GraphQL variables cannot be sent as JSON: variables\['id'\]: {named} is not"
    with pytest.raises(ParamError, match=message):
        get_user.key({"id": value})
    with pytest.raises(ParamError, match=message):
        await Controller().fetch(get_user, {"id": value})
    assert len(api.requests) == 0


async def test_a_query_function_that_raises_or_gives_no_text_is_a_restlayer_error(
    api: LocalServer, gql: GQLEndpoint
) -> None:
    """Calling the endpoint raised the function's own KeyError, and a function returning None
    sent `"query": null` (keyed `"None {...}"`) for the server to refuse."""
    raising = gql.query(lambda v: f"query {v['missing']} {{ x }}")
    with pytest.raises(RestLayerError, match=r"query function raised KeyError: 'missing'") as info:
        await raising({"id": "1"})
    assert isinstance(info.value.__cause__, KeyError)
    no_text = gql.query(lambda v: None, {"user": User})  # type: ignore[arg-type,return-value]
    with pytest.raises(ParamError, match="query function returned NoneType, not the query text"):
        no_text.key({"id": "1"})
    with pytest.raises(ParamError, match="query function returned NoneType"):
        await no_text({"id": "1"})
    with pytest.raises(ParamError, match="query function returned NoneType"):
        await Controller().fetch(no_text, {"id": "1"})
    assert not no_text.test_key('None {"id":"1"}')
    assert len(api.requests) == 0


@pytest.mark.parametrize("variables", ["5", ["5"], 5], ids=["str", "list", "int"])
async def test_variables_that_are_not_an_object_are_a_param_error(
    api: LocalServer, get_user: GQLEndpoint, variables: object
) -> None:
    """They were keyed and sent, for the server to refuse ("variables must be an object") as a stored 400."""
    with pytest.raises(ParamError, match="getUser: the GraphQL variables must be a dict"):
        get_user.key(variables)
    with pytest.raises(ParamError, match="getUser: the GraphQL variables must be a dict"):
        await get_user(variables)
    ctrl = Controller()
    with pytest.raises(ParamError, match="getUser: the GraphQL variables must be a dict"):
        await ctrl.fetch(get_user, variables)
    assert ctrl.get_state()["meta"] == {}
    assert len(api.requests) == 0


def test_string_query_whitespace_collapsed() -> None:
    ep = GQLEndpoint("http://x.test/graphql").query("query   list {\n  users { id }\n}")
    assert ep.key({}) == "query list { users { id } } {}"
    assert ep.key() == ep.key(None) == ep.key({})
    assert clean_query("\t a \n\n b  ") == "a b"


async def test_cleaning_a_string_query_keeps_its_string_literals_and_drops_its_comments(
    api: LocalServer, gql: GQLEndpoint
) -> None:
    """Whitespace runs were collapsed inside string literals too (the title "two  spaces" was stored as
    "two spaces", a block string lost its lines), and a `#` comment swallowed the rest of the query once
    its line break was gone (a syntax error from the server)."""
    rename = gql.mutation(
        'mutation {\n  updateTodo(id: 1, title: "two  spaces # kept") { id title }\n}', {"updateTodo": Todo}
    )
    assert (await rename())["updateTodo"]["title"] == "two  spaces # kept"
    assert api.db.get("todos", 1)["title"] == "two  spaces # kept"  # type: ignore[index]
    block = gql.mutation('mutation { updateTodo(id: 2, title: """line one\n  line two""") { id } }')
    await block()
    assert api.db.get("todos", 2)["title"] == "line one\nline two"  # type: ignore[index]
    commented = gql.query("query {\n  # the first todo\n  todo(id: 1) { id title } # its title\n}", {"todo": Todo})
    assert commented.key({}) == "query { todo(id: 1) { id title } } {}"
    assert (await commented())["todo"]["title"] == "two  spaces # kept"
    assert clean_query('a  "b \\"  c"   """d\n \\"""  e"""  # f\n  g') == 'a "b \\"  c" """d\n \\"""  e""" g'


def test_function_query_used_verbatim() -> None:
    text = "query  q {\n  users { id }\n}"
    ep = GQLEndpoint("http://x.test/graphql").query(lambda v: text)
    assert ep.key({}) == text + " {}"
    assert ep.get_query({"x": 1}) == text


async def test_call_posts_query_and_variables(api: LocalServer, get_user: GQLEndpoint) -> None:
    data = await get_user({"id": "2"})
    assert data == {"user": {"id": "2", "name": "Ervin Howell"}}
    req = last(api)
    assert (req.method, req.path, req.query) == ("POST", "/graphql", "")
    assert req.headers["content-type"] == "application/json"
    assert req.json() == {"query": USER_QUERY, "variables": {"id": "2"}}
    assert req.body == json.dumps(req.json(), separators=(",", ":")).encode()
    assert list(req.json()) == ["query", "variables"]


async def test_call_without_variables_sends_empty_object(api: LocalServer, gql: GQLEndpoint) -> None:
    users = gql.query("query { users { id } }")
    assert await users() == {"users": [{"id": "1"}, {"id": "2"}, {"id": "3"}]}
    assert last(api).json() == {"query": "query { users { id } }", "variables": {}}
    await users(None)
    assert last(api).json()["variables"] == {}


async def test_keyword_variables_are_bound(api: LocalServer, get_user: GQLEndpoint) -> None:
    assert get_user.bind(id="3") == ({"id": "3"},)
    assert get_user.bind({"id": "1"}, id="3") == ({"id": "3"},)
    assert get_user.bind({"a": 1}) == ({"a": 1},)
    assert get_user.key(*get_user.bind(id="3")) == get_user.key({"id": "3"})
    assert (await get_user(id="3"))["user"]["name"] == "Clementine Bauch"
    assert last(api).json()["variables"] == {"id": "3"}


async def test_reply_normalizes_into_entities(get_user: GQLEndpoint) -> None:
    data = await get_user({"id": "1"})
    result = normalize(get_user.schema, data, ({"id": "1"},))
    assert result.result == {"user": "1"}
    assert result.entities == {"User": {"1": {"id": "1", "name": "Leanne Graham"}}}


def test_side_effect_and_test_key() -> None:
    gql = GQLEndpoint("http://x.test/graphql")
    get_user = gql.query(lambda v: USER_QUERY, {"user": User})
    assert get_user.side_effect is None
    assert gql.mutation("mutation { x }").side_effect is True
    assert gql.mutation("mutation { x }").query("query { y }").side_effect is None
    assert get_user.test_key(get_user.key({"id": "5"}))
    assert get_user.test_key(get_user.key({"id": "xxx?*"}))
    assert not get_user.test_key("query other { x } {}")
    assert not get_user.test_key("GET http://x.test/graphql")
    assert get_user.method == "POST"


def _replying(status: int, body: Any, *, raw: bytes | None = None) -> httpx.AsyncClient:
    """A client whose every request gets this reply (for exact bodies the server never sends)."""

    def handler(request: httpx.Request) -> httpx.Response:
        if raw is not None:
            return httpx.Response(status, content=raw)
        return httpx.Response(status, json=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_errors_member_raises_with_the_list() -> None:
    errors = [{"message": "bad thing", "locations": [{"line": 1, "column": 2}], "path": ["user"]}]
    async with _replying(200, {"data": None, "errors": errors}) as client:
        ep = GQLEndpoint("http://x.test/graphql", client=client).query(USER_QUERY)
        with pytest.raises(GQLNetworkError, match="bad thing") as info:
            await ep({"id": "5"})
    error = info.value
    assert error.status == 400
    assert "bad thing" in str(error)
    assert error.errors == errors
    assert error.data is None
    assert isinstance(error, NetworkError) and isinstance(error, RestLayerError)
    assert ep.error_policy(error) is None


@pytest.mark.parametrize(
    ("errors", "says"),
    [
        ("[null]", "GraphQL request failed: null"),
        ('[{"extensions": {"code": "DOWN"}}]', 'GraphQL request failed: {"extensions": {"code": "DOWN"}}'),
        ('[{"message": null, "path": ["user"]}]', 'GraphQL request failed: {"message": null, "path": ["user"]}'),
    ],
    ids=["null", "no-message", "null-message"],
)
async def test_an_error_without_a_message_is_quoted_as_json(api: LocalServer, errors: str, says: str) -> None:
    """The message was `None`, or Python's repr of the error (`{'extensions': ...}`), not what the server sent."""
    body = urllib.parse.quote(f'{{"data": null, "errors": {errors}}}')
    ep = GQLEndpoint(f"{api.url}/_test/reply?body={body}").query("query { user { id } }")
    with pytest.raises(GQLNetworkError) as info:
        await ep()
    assert str(info.value) == says
    assert info.value.errors == json.loads(errors)


async def test_http_500_json_body_is_a_400_gql_error(api: LocalServer) -> None:
    ep = GQLEndpoint(f"{api.url}/_test/500").query("query { x }")
    with pytest.raises(GQLNetworkError) as info:
        await ep()
    assert info.value.status == 400
    assert info.value.errors == [{"message": "boom"}]
    assert str(info.value) == "boom"
    assert ep.error_policy(info.value) is None
    assert info.value.response is not None and info.value.response.status_code == 500
    assert last(api).method == "POST"


async def test_errors_win_over_http_status() -> None:
    errors = [{"message": "Generic failure"}]
    async with _replying(400, {"errors": errors}) as client:
        ep = GQLEndpoint("http://x.test/graphql", client=client).query("query { x }")
        with pytest.raises(GQLNetworkError) as info:
            await ep()
    assert info.value.errors == errors


async def test_non_2xx_without_errors_wraps_the_body(api: LocalServer) -> None:
    ep = GQLEndpoint(f"{api.url}/_test/status/401").query("query { x }")
    with pytest.raises(GQLNetworkError, match="status 401") as info:
        await ep()
    assert info.value.status == 400
    assert info.value.errors == [{"message": "status 401"}]


@pytest.mark.parametrize("route", ["/_test/invalid-json", "/_test/status/204"])
async def test_non_json_body_is_status_400(api: LocalServer, route: str) -> None:
    ep = GQLEndpoint(f"{api.url}{route}").query("query { x }")
    with pytest.raises(NetworkError) as info:
        await ep()
    assert info.value.status == 400
    assert not isinstance(info.value, GQLNetworkError)
    assert ep.error_policy(info.value) is None


async def test_a_reply_nested_too_deeply_to_decode_is_status_400(api: LocalServer) -> None:
    ep = GQLEndpoint(f"{api.url}/_test/deep-json?depth=100000").query("query { x }")
    with pytest.raises(NetworkError, match="is not JSON") as info:
        await Controller().fetch(ep)
    assert info.value.status == 400


async def test_a_refused_redirect_is_a_redirect_error(api: LocalServer) -> None:
    """A 302 answer to the POST is not followed; the error says so (the redirect has no GraphQL body)."""
    ep = GQLEndpoint(f"{api.url}/_test/redirect?code=302&to={api.url}/graphql").query("query { users { id } }")
    with pytest.raises(RedirectError) as info:
        await Controller().fetch(ep)
    assert info.value.status == 302
    assert not api.requests.matching("POST", "/graphql")


async def test_a_reply_over_max_body_size_is_a_body_too_large_error(api: LocalServer) -> None:
    ep = GQLEndpoint(f"{api.url}/graphql", max_body_size=20).query("query { users { id name } }")
    with pytest.raises(BodyTooLargeError, match="max_body_size=20") as info:
        await Controller().fetch(ep)
    assert info.value.status == 400


@pytest.mark.parametrize("content", ["stream", "text", "blob", "arrayBuffer"])
async def test_a_content_mode_other_than_json_is_refused_when_defined(api: LocalServer, content: str) -> None:
    """A GraphQL reply is JSON whatever `content` says: "stream" left the reply unread (httpx's
    ResponseNotRead, connection held) and the others were silently ignored."""
    gql = GQLEndpoint(f"{api.url}/graphql")
    with pytest.raises(ParamError, match=f"content={content!r}"):
        gql.query(USER_QUERY, {"user": User}, content=content)
    with pytest.raises(ParamError, match=f"content={content!r}"):
        GQLEndpoint(f"{api.url}/graphql", content=content)
    assert await gql.query(USER_QUERY, content="json")({"id": "1"}) == {"user": {"id": "1", "name": "Leanne Graham"}}
    assert len(api.requests) == 1


async def test_a_path_is_refused_when_defined_as_every_operation_posts_to_the_url(api: LocalServer) -> None:
    """`path=` was silently ignored: the request went to the url alone, not where the caller asked."""
    with pytest.raises(ParamError, match="GQLEndpoint sends every operation to its url: path='/graphql'"):
        GQLEndpoint(api.url, path="/graphql")
    gql = GQLEndpoint(f"{api.url}/graphql")
    with pytest.raises(ParamError, match="path='/v2'"):
        gql.query(USER_QUERY, {"user": User}, path="/v2")

    class Routed(GQLEndpoint[Any]):
        path = "/graphql"

    with pytest.raises(ParamError, match="path='/graphql'"):
        Routed(api.url)
    assert await gql.query(USER_QUERY)({"id": "1"}) == {"user": {"id": "1", "name": "Leanne Graham"}}
    assert [r.path for r in api.requests] == ["/graphql"]


async def test_an_error_reply_over_max_body_size_is_a_body_too_large_error(api: LocalServer) -> None:
    """The error reply was cut at max_body_size and then parsed: "not JSON: Unterminated string", a wrong reason."""
    ep = GQLEndpoint(f"{api.url}/_test/500", max_body_size=10).query("query { x }")
    with pytest.raises(BodyTooLargeError, match=r"status 500.*max_body_size=10") as info:
        await Controller().fetch(ep)
    assert info.value.status == 400
    assert info.value.response is not None and info.value.response.status_code == 500
    whole = GQLEndpoint(f"{api.url}/_test/500", max_body_size=19).query("query { x }")  # {"message":"boom"}
    with pytest.raises(GQLNetworkError, match="boom"):
        await whole()


async def test_an_error_reply_whose_body_cannot_be_decoded_is_a_transport_error(api: LocalServer) -> None:
    """GraphQL needs the error body to read its errors: one that cannot be decoded stays a transport failure."""
    ep = GQLEndpoint(f"{api.url}/_test/bad-gzip?status=404").query("query { x }")
    with pytest.raises(TransportError, match="decompressing") as info:
        await ep()
    assert info.value.status == 500


async def test_html_from_a_proxy_is_status_400() -> None:
    async with _replying(502, None, raw=b"<html>Bad Gateway</html>") as client:
        ep = GQLEndpoint("http://x.test/graphql", client=client).query("query { x }")
        with pytest.raises(NetworkError, match="not JSON") as info:
            await ep()
    assert info.value.status == 400
    assert info.value.response is not None and info.value.response.status_code == 502


async def test_connection_failure_is_status_500_soft() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ep = GQLEndpoint(f"http://127.0.0.1:{port}/graphql").query("query { x }")
    with pytest.raises(NetworkError) as info:
        await ep()
    assert info.value.status == 500
    assert info.value.response is None
    assert ep.error_policy(info.value) == "soft"


async def test_timeout_from_request_init_is_status_500(api: LocalServer) -> None:
    ep = GQLEndpoint(f"{api.url}/_test/slow?ms=500", request_init={"timeout": 0.05}).query("query { x }")
    with pytest.raises(NetworkError) as info:
        await ep()
    assert info.value.status == 500
    assert ep.error_policy(info.value) == "soft"


async def test_soft_error_policy_for_5xx_gql_status() -> None:
    ep = GQLEndpoint("http://x.test/graphql").query("query { x }")
    assert ep.error_policy(GQLNetworkError([{"message": "x"}], status=503)) == "soft"
    assert ep.error_policy(GQLNetworkError([{"message": "x"}])) is None


# -- real GraphQL errors from the example server -----------------------------------------


async def test_execution_error_from_server(api: LocalServer, get_user: GQLEndpoint) -> None:
    with pytest.raises(GQLNetworkError, match="Invalid id") as info:
        await get_user({"id": "nope"})
    assert info.value.status == 400
    assert info.value.errors[0]["path"] == ["user"]
    assert info.value.data == {"user": None}


async def test_validation_error_has_no_data(gql: GQLEndpoint) -> None:
    ep = gql.query("query { user(id: 1) { nosuchfield } }")
    with pytest.raises(GQLNetworkError, match="nosuchfield") as info:
        await ep()
    assert info.value.data is None
    assert len(info.value.errors) == 1


async def test_partial_data_is_kept_on_the_error(gql: GQLEndpoint) -> None:
    ep = gql.query('query two { a: user(id: "1") { id name } b: user(id: "zzz") { id } }')
    with pytest.raises(GQLNetworkError) as info:
        await ep()
    assert info.value.data == {"a": {"id": "1", "name": "Leanne Graham"}, "b": None}
    assert [e["path"] for e in info.value.errors] == [["b"]]
    assert str(info.value) == "Invalid id: 'zzz'"


async def test_rejected_mutation(api: LocalServer, gql: GQLEndpoint) -> None:
    ep = gql.mutation(
        "mutation r($id: ID!, $title: String) { updateTodo(id: $id, title: $title) { id title } }",
        {"updateTodo": Todo},
    )
    with pytest.raises(GQLNetworkError, match="rejected") as info:
        await ep({"id": "1", "title": "REJECT"})
    assert info.value.data == {"updateTodo": None}
    assert api.db.get("todos", 1)["title"] == "delectus aut autem"  # type: ignore[index]


async def test_schema_mismatch_list_for_entity_is_400(gql: GQLEndpoint) -> None:
    ep = gql.query("query { todo: todos { id title } }", {"todo": Todo})
    data = await ep()
    assert isinstance(data["todo"], list)
    with pytest.raises(RestLayerError) as info:
        normalize(ep.schema, data, ())
    assert info.value.status == 400
    assert isinstance(info.value, SchemaError)


# -- queries with variables, mutations ------------------------------------------------------


async def test_query_with_variables(api: LocalServer, gql: GQLEndpoint) -> None:
    ep = gql.query(
        "query byUser($userId: Int) { todos(userId: $userId) { id title user { id } } }",
        {"todos": [Todo]},
    )
    data = await ep({"userId": 2})
    assert [t["id"] for t in data["todos"]] == ["4", "5", "6"]
    assert last(api).json()["variables"] == {"userId": 2}
    result = normalize(ep.schema, data, ({"userId": 2},))
    assert result.result == {"todos": ["4", "5", "6"]}
    assert result.entities["Todo"]["4"] == {"id": 4, "title": "et porro tempora", "userId": 2}


async def test_mutation_changes_server_data(api: LocalServer, update_todo: GQLEndpoint, get_todo: GQLEndpoint) -> None:
    data = await update_todo({"id": "2", "title": "via graphql", "completed": True})
    assert data == {"updateTodo": {"id": "2", "title": "via graphql", "completed": True, "user": {"id": "1"}}}
    assert api.db.get("todos", 2)["title"] == "via graphql"  # type: ignore[index]
    rest = RestEndpoint(path="/todos/:id", url_prefix=api.url)
    assert (await rest({"id": 2}))["title"] == "via graphql"
    assert (await get_todo({"id": "2"}))["todo"]["completed"] is True


# -- options: headers, client, process, extend, names ----------------------------------------


class AuthGQL(GQLEndpoint):
    """A GraphQL endpoint adding a bearer token."""

    token = "s3cret"

    def get_headers(self, headers: dict[str, str]) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {self.token}"}


class AsyncAuthGQL(GQLEndpoint):
    async def get_headers(self, headers: dict[str, str]) -> dict[str, str]:
        return {**headers, "X-Token": "async"}


async def test_custom_auth_header_via_get_headers(api: LocalServer) -> None:
    ep = AuthGQL(f"{api.url}/graphql").query(USER_QUERY, {"user": User})
    assert isinstance(ep, AuthGQL)
    assert (await ep({"id": "1"}))["user"]["id"] == "1"
    req = last(api)
    assert req.headers["authorization"] == "Bearer s3cret"
    assert req.headers["content-type"] == "application/json"
    ep2 = AsyncAuthGQL(f"{api.url}/graphql").query(USER_QUERY)
    await ep2({"id": "1"})
    assert last(api).headers["x-token"] == "async"


async def test_get_headers_as_option_and_request_init_headers(api: LocalServer) -> None:
    ep = GQLEndpoint(
        f"{api.url}/graphql",
        request_init={"headers": {"X-Static": "1"}},
        get_headers=lambda headers: {**headers, "X-Dyn": "2"},
    ).query(USER_QUERY)
    await ep({"id": "1"})
    req = last(api)
    assert (req.headers["x-static"], req.headers["x-dyn"]) == ("1", "2")
    assert req.headers["content-type"] == "application/json"


async def test_own_client(api: LocalServer) -> None:
    async with httpx.AsyncClient(headers={"X-Client": "mine"}) as client:
        ep = GQLEndpoint(f"{api.url}/graphql", client=client).query(USER_QUERY)
        await ep({"id": "1"})
    assert last(api).headers["x-client"] == "mine"


async def test_process_receives_the_variables(gql: GQLEndpoint) -> None:
    ep = gql.query(USER_QUERY, process=lambda value, variables: (value["user"]["name"], variables))
    assert await ep({"id": "2"}) == ("Ervin Howell", {"id": "2"})


def test_extend_keeps_the_operation_and_options() -> None:
    gql = GQLEndpoint("http://x.test/graphql", data_expiry_length=10)
    get_user = gql.query(USER_QUERY, {"user": User})
    longer = get_user.extend(data_expiry_length=60_000, error_expiry_length=5)
    assert isinstance(longer, GQLEndpoint)
    assert longer.key({"id": "1"}) == get_user.key({"id": "1"})
    assert (longer.data_expiry_length, longer.error_expiry_length) == (60_000, 5)
    assert get_user.data_expiry_length == 10
    assert longer.schema == {"user": User} and longer.side_effect is None
    moved = get_user.extend(url="http://y.test/gql")
    assert moved.url() == "http://y.test/gql" and get_user.url() == "http://x.test/graphql"
    assert gql.query(USER_QUERY, name="custom").name == "custom"
    assert gql.mutation(USER_QUERY, get_optimistic_response=None).side_effect is True


def test_names_and_repr() -> None:
    gql = GQLEndpoint("http://x.test/graphql")
    assert gql.name == "http://x.test/graphql"
    assert gql.query(USER_QUERY).name == "getUser"
    assert gql.query(TODO_QUERY).name == "getTodo"
    assert gql.query("{ users { id } }").name == "{ users { id } }"
    assert gql.query(lambda v: f"query {v['x']}").name == "http://x.test/graphql"
    assert "mutation" in repr(gql.mutation("mutation m { x }"))


@pytest.mark.parametrize("method", ["post", "Post", "POST"])
def test_post_is_accepted_in_any_case_as_rest_endpoint_takes_it(method: str) -> None:
    """`method="post"` was refused ("sends POST requests only") although RestEndpoint takes lower-case methods."""
    gql = GQLEndpoint("http://x.test/graphql", method=method)
    assert gql.method == "POST"
    assert gql.extend(name="other").method == "POST"
    with pytest.raises(RestLayerError, match="POST requests only"):
        GQLEndpoint("http://x.test/graphql", method=5)


def test_base_endpoint_has_no_query_and_url_is_required() -> None:
    gql = GQLEndpoint("http://x.test/graphql")
    with pytest.raises(RestLayerError, match="You must include a query"):
        gql.key({})
    with pytest.raises(RestLayerError, match="url"):
        GQLEndpoint()
    with pytest.raises(RestLayerError, match="POST"):
        GQLEndpoint("http://x.test/graphql", method="GET")
    with pytest.raises(RestLayerError, match="str or a function"):
        gql.query(5)  # type: ignore[call-overload]


def test_gql_entity_is_keyed_by_string_id() -> None:
    class Thing(GQLEntity):
        label: str = ""

    assert Thing().id == ""
    result = normalize(Thing, {"id": "abc", "label": "x"})
    assert result.result == "abc"
    with pytest.raises(RestLayerError) as info:
        normalize(Thing, {"label": "no id"})
    assert info.value.status == 400
