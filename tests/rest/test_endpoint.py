"""RestEndpoint without a network: URLs, keys, call shapes, request init, parsing.

Requests against a real server are in test_http.py.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from restlayer.errors import DefinitionError, NetworkError, ParamError, RestLayerError
from restlayer.rest import RestEndpoint
from restlayer.schema import Entity


class Todo(Entity):
    """Stand-in schema: parse_response only needs "a schema is set" and its name."""


def response(
    status: int = 200,
    content: bytes = b"",
    content_type: str | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """A finished httpx response as fetch_response would hand it over."""
    all_headers = dict(headers or {})
    if content_type is not None:
        all_headers["Content-Type"] = content_type
    return httpx.Response(
        status,
        content=content,
        headers=all_headers,
        request=httpx.Request("GET", "http://test.local/x"),
    )


def parse(ep: RestEndpoint, resp: httpx.Response) -> Any:
    return asyncio.run(ep.parse_response(resp))


def init_of(ep: RestEndpoint, body: Any) -> dict[str, Any]:
    return asyncio.run(ep.get_request_init(body))


# -- 1.3 url() ------------------------------------------------------------------------


class TestUrl:
    def test_param_encoding(self) -> None:
        ep = RestEndpoint(path="/users/:id")
        assert ep.url({"id": "a b"}) == "/users/a%20b"
        assert ep.url({"id": "a/b?c#d"}) == "/users/a%2Fb%3Fc%23d"
        assert ep.url({"id": "!'()*~"}) == "/users/!'()*~"
        assert ep.url({"id": 1.0}) == "/users/1.0"

    def test_none_param_is_missing(self) -> None:
        with pytest.raises(RestLayerError, match="Missing parameters: id"):
            RestEndpoint(path="/users/:id").url({"id": None})

    def test_wildcards_and_groups(self) -> None:
        assert RestEndpoint(path="/files/*path").url({"path": ["a b", "c/d"]}) == ("/files/a%20b/c%2Fd")
        assert RestEndpoint(path="/files{/*path}").url({}) == "/files"
        assert RestEndpoint(path="/users{/:id}{/:group}").url({"group": 5}) == "/users/5"

    def test_missing_params_listed_in_order(self) -> None:
        with pytest.raises(RestLayerError, match="Missing parameters: group, id"):
            RestEndpoint(path="/:group/users/:id").url({})

    def test_question_mark_in_template(self) -> None:
        assert RestEndpoint(path="/search?q=:q").url({"q": 1}) == "/search?q=1"
        assert RestEndpoint(path="/search?q=:q").url({"q": "a", "z": 1}) == "/search?q=a&z=1"
        assert RestEndpoint(path=r"/search\?q=:q").url({"q": "a b"}) == "/search?q=a%20b"

    def test_search_params(self) -> None:
        ep = RestEndpoint(path="/users/:id")
        params = {"id": 1, "b": 2, "a": "x y", "c": [1, 2], "d": True, "e": None}
        assert ep.url(params) == "/users/1?a=x+y&b=2&c=1&c=2&d=true"

    def test_only_none_search_values_add_no_question_mark(self) -> None:
        assert RestEndpoint(path="/users/:id").url({"id": 1, "e": None}) == "/users/1"

    def test_url_prefix(self) -> None:
        ep = RestEndpoint(path="/users/:id", url_prefix="https://api.example.com")
        assert ep.url({"id": 3, "x": 1}) == "https://api.example.com/users/3?x=1"

    def test_params_must_be_a_mapping(self) -> None:
        with pytest.raises(ParamError, match="must be a dict"):
            RestEndpoint(path="/users/:id").url(5)  # untyped params (no `params=`): checked at run time only

    def test_dict_param_raises_naming_it(self) -> None:
        with pytest.raises(RestLayerError, match="filter"):
            RestEndpoint(path="/users").url({"filter": {"a": 1}})

    def test_bad_template_raises_at_construction(self) -> None:
        with pytest.raises(RestLayerError, match=r"Unexpected \( at index 7"):
            RestEndpoint(path="/users/(x)")

    def test_path_is_required(self) -> None:
        with pytest.raises(ParamError, match="path"):
            RestEndpoint()

    def test_url_override(self) -> None:
        class Dynamic(RestEndpoint):
            def url(self, params: Any = None) -> str:
                return "https://dyn.example" + super().url(params)

        assert Dynamic(path="/a/:id").key({"id": 1}) == "GET https://dyn.example/a/1"


# -- 1.4 search_to_string -------------------------------------------------------------


class TestSearchToString:
    def test_encoding(self) -> None:
        assert RestEndpoint(path="/x").search_to_string({"q": "~!'()*"}) == "q=%7E%21%27%28%29*"

    def test_sorting(self) -> None:
        params = {"b": 1, "a": 2, "B": 3, "_": 4, "10": 5, "9": 6}
        assert RestEndpoint(path="/x").search_to_string(params) == "10=5&9=6&B=3&_=4&a=2&b=1"

    def test_override_encodes_nested_objects(self) -> None:
        class Nested(RestEndpoint):
            def search_to_string(self, params: Any) -> str:
                return "&".join(f"{k}[{sub}]={v}" for k, inner in params.items() for sub, v in inner.items())

        assert Nested(path="/x").url({"filter": {"a": 1}}) == "/x?filter[a]=1"

    def test_override_as_option(self) -> None:
        ep = RestEndpoint(path="/x", search_to_string=lambda params: "custom")
        assert ep.url({"a": 1}) == "/x?custom"


# -- 1.5 key / test_key ----------------------------------------------------------------


class TestKeys:
    def test_test_key(self) -> None:
        e = RestEndpoint(path="/users/:id")
        assert e.test_key("GET /users/5?x=1")
        assert e.test_key("GET /USERS/5/")
        assert not e.test_key("GET /users/5/x")
        assert not e.test_key("POST /users/5")

    def test_test_key_without_params(self) -> None:
        e = RestEndpoint(path="/todos", url_prefix="http://h")
        assert e.test_key("GET http://h/todos?userId=1")
        assert e.test_key("GET http://h/todos")
        assert not e.test_key("GET http://other/todos")

    def test_key_matches_itself(self) -> None:
        e = RestEndpoint(path="/:group/posts{/:id}", url_prefix="http://h")
        assert e.test_key(e.key({"group": "g", "x": 1}))
        assert e.test_key(e.key({"group": "g", "id": 2}))

    def test_method_verbatim(self) -> None:
        assert RestEndpoint(path="/a", method="post").key({}) == "post /a"


# -- 2.1 call shapes / 2.2 side_effect --------------------------------------------------


class TestCallShape:
    def test_body_endpoint_keys(self) -> None:
        ep = RestEndpoint(path="/todos", method="POST")
        assert ep.key({"title": "x"}) == "POST /todos"
        assert ep.key({"userId": 1}, {"title": "x"}) == "POST /todos?userId=1"

    def test_body_none_means_no_body_argument(self) -> None:
        assert RestEndpoint(path="/todos/:id", method="POST", body=None).key({"id": 5}) == ("POST /todos/5")

    def test_side_effect_defaults(self) -> None:
        assert RestEndpoint(path="/x").side_effect is None
        assert RestEndpoint(path="/x", method="GET").side_effect is None
        assert RestEndpoint(path="/x", method="POST").side_effect is True
        assert RestEndpoint(path="/x", method="DELETE").side_effect is True
        assert RestEndpoint(path="/x", method="POST", side_effect=None).side_effect is None
        assert RestEndpoint(path="/x", side_effect=True).method == "POST"
        assert RestEndpoint(path="/x").method == "GET"

    def test_extend_method_recomputes(self) -> None:
        ep = RestEndpoint(path="/a/:id").extend(method="POST")
        assert ep.key({"id": 9}, {}) == "POST /a/9"
        assert ep.side_effect is True
        with pytest.raises(RestLayerError, match="Missing parameters: id"):
            ep.key({"id": 9})

    def test_extend_keeps_explicit_side_effect(self) -> None:
        ep = RestEndpoint(path="/a", method="POST", side_effect=None)
        assert ep.extend(name="n").side_effect is None
        assert ep.extend(method="PUT").side_effect is True
        assert RestEndpoint(path="/a", side_effect=True).extend(name="n").method == "POST"

    def test_extend_leaves_original_unchanged(self) -> None:
        base = RestEndpoint(path="/a", data_expiry_length=5)
        other = base.extend(data_expiry_length=10, url_prefix="http://h")
        assert (base.data_expiry_length, base.url_prefix, base.name) == (5, "", "/a")
        assert (other.data_expiry_length, other.url_prefix, other.name) == (10, "http://h", "http://h/a")
        assert type(other) is RestEndpoint

    def test_bind(self) -> None:
        get = RestEndpoint(path="/todos/:id")
        assert get.bind(id=1) == ({"id": 1},)
        assert get.bind({"id": 1}, x=2) == ({"id": 1, "x": 2},)
        assert get.bind({"id": 1}) == ({"id": 1},)
        upd = RestEndpoint(path="/todos/:id", method="PUT")
        assert upd.bind({"title": "y"}, id=1) == ({"id": 1}, {"title": "y"})
        assert upd.bind({"id": 1}, {"title": "y"}, x=1) == ({"id": 1, "x": 1}, {"title": "y"})
        assert upd.bind(None, id=1) == ({"id": 1}, None)
        assert upd.key(*upd.bind({"title": "y"}, id=1)) == "PUT /todos/1"

    def test_key_with_none_params(self) -> None:
        assert RestEndpoint(path="/todos").key(None) == "GET /todos"
        assert RestEndpoint(path="/todos", method="POST").key(None, {"a": 1}) == "POST /todos"

    def test_unknown_option_rejected(self) -> None:
        with pytest.raises(ParamError, match="unknown option 'urlprefix'"):
            RestEndpoint(path="/a", urlprefix="x")

    def test_bad_content_rejected(self) -> None:
        with pytest.raises(ParamError, match="content"):
            RestEndpoint(path="/a", content="xml")


class TestOptionChecks:
    """Option values of the wrong type or range are refused where the endpoint is defined, init and extend alike."""

    @pytest.mark.parametrize("frequency", [0, -1, float("nan"), float("inf"), timedelta(0)])
    def test_poll_frequency_must_be_positive_and_finite(self, frequency: object) -> None:
        with pytest.raises(ParamError, match=r"^/a: poll_frequency must be a positive, finite number"):
            RestEndpoint(path="/a", poll_frequency=frequency)
        with pytest.raises(ParamError, match="poll_frequency"):
            RestEndpoint(path="/a").extend(poll_frequency=frequency)

    def test_good_poll_frequency_kept(self) -> None:
        assert RestEndpoint(path="/a", poll_frequency=1500.5).poll_frequency == 1500.5
        assert RestEndpoint(path="/a", poll_frequency=timedelta(seconds=2)).poll_frequency == 2000
        assert RestEndpoint(path="/a", poll_frequency=500).extend(poll_frequency=None).poll_frequency is None

    @pytest.mark.parametrize("option", ["data_expiry_length", "error_expiry_length"])
    @pytest.mark.parametrize("value", [-1, float("nan"), timedelta(seconds=-1)])
    def test_expiry_lengths_not_negative_or_nan(self, option: str, value: object) -> None:
        bad: dict[str, Any] = {option: value}
        with pytest.raises(ParamError, match=rf"^/a: {option} must be >= 0"):
            RestEndpoint(path="/a", **bad)
        with pytest.raises(ParamError, match=option):
            RestEndpoint(path="/a").extend(**bad)
        zero: dict[str, Any] = {option: 0}
        assert getattr(RestEndpoint(path="/a", **zero), option) == 0

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ({"max_body_size": "10"}, "max_body_size must be a positive number or None, not '10'"),
            ({"max_body_size": float("nan")}, "max_body_size must be a positive number"),
            ({"max_body_size": -1}, "max_body_size must be a positive number"),
            ({"total_timeout": "5"}, "total_timeout must be a positive number or None, not '5'"),
            ({"total_timeout": float("nan")}, "total_timeout must be a positive number"),
            ({"total_timeout": 0}, "total_timeout must be a positive number"),
            ({"total_timeout": 10**400}, "total_timeout must be a positive number of seconds a float can hold"),
            ({"method": 5}, "method must be an HTTP method name"),
            ({"method": None}, "method must be an HTTP method name"),
            ({"method": ""}, "method must be an HTTP method name"),
            ({"method": "GE T"}, "method must be an HTTP method name"),
            ({"request_init": 5}, "request_init must be a mapping"),
            ({"request_init": {"bogus": 1}}, "request_init has unknown option.s. bogus"),
            ({"request_init": {"timeout": "x"}}, "request_init timeout must be a positive number"),
            ({"request_init": {"follow_redirects": "no"}}, "follow_redirects must be True or False, not 'no'"),
            ({"request_init": {"follow_redirects": 0}}, "follow_redirects must be True or False, not 0"),
            ({"client": 5}, "client must be an httpx.AsyncClient or None, not 5"),
            ({"process": 5}, "process must be callable, not 5"),
            ({"get_headers": "x"}, "get_headers must be callable"),
            ({"error_policy": 5}, "error_policy must be callable or None, not 5"),
            ({"update": 5}, "update must be callable or None"),
            ({"url_prefix": 5}, "url_prefix must be a str"),
            ({"name": 5}, "name must be a str, not 5"),
            ({"invalid_if_stale": "no"}, "invalid_if_stale must be True or False, not 'no'"),
            ({"invalid_if_stale": None}, "invalid_if_stale must be True or False"),
            ({"side_effect": "no"}, "side_effect must be True, False or None, not 'no'"),
        ],
    )
    def test_bad_option_values_refused(self, options: dict[str, Any], message: str) -> None:
        with pytest.raises(ParamError, match=message):
            RestEndpoint(path="/a", **options)
        with pytest.raises(ParamError, match=message):
            RestEndpoint(path="/a").extend(**options)

    def test_message_names_the_endpoint(self) -> None:
        with pytest.raises(ParamError, match=r"^todo: total_timeout must be"):
            RestEndpoint(path="/a", name="todo", total_timeout=-1)

    @pytest.mark.parametrize(
        "option",
        ["process", "url", "key", "test_key", "search_to_string", "error_policy", "update", "get_optimistic_response"],
    )
    def test_async_function_for_a_synchronous_hook_is_refused(self, option: str) -> None:
        """Hooks called without `await`: an async one would hand a coroutine on (stored, sent, used as a key)."""

        async def hook(*args: object) -> object:
            return args[0] if args else None

        options: dict[str, Any] = {option: hook}
        with pytest.raises(ParamError, match=rf"{option} is called without await, so it cannot be an async function"):
            RestEndpoint(path="/a/:id", **options)
        with pytest.raises(ParamError, match=option):
            RestEndpoint(path="/a/:id").extend(**options)

    def test_async_process_method_of_a_subclass_is_refused(self) -> None:
        class Async(RestEndpoint):
            async def process(self, value: object, *args: object) -> object:
                return value

        with pytest.raises(ParamError, match="process is called without await"):
            Async(path="/a/:id", schema=Todo)

    def test_good_option_values_accepted(self) -> None:
        ep = RestEndpoint(
            path="/a",
            method="post",
            max_body_size=1.5,
            total_timeout=0.5,
            request_init={"timeout": httpx.Timeout(3), "headers": {"X": "1"}, "follow_redirects": False},
            client=None,
            error_policy=None,
            process=lambda value, *args: value,
        )
        assert (ep.method, ep.max_body_size, ep.total_timeout) == ("post", 1.5, 0.5)
        assert RestEndpoint(path="/a", max_body_size=None, total_timeout=None).max_body_size is None


class TestSubclassOptions:
    def test_class_attributes_are_options(self) -> None:
        class Api(RestEndpoint):
            url_prefix = "https://api.example.com"
            method = "POST"
            data_expiry_length = 1000

        ep = Api(path="/todos")
        assert ep.key({}, {"a": 1}) == "POST https://api.example.com/todos"
        assert ep.side_effect is True
        assert ep.data_expiry_length == 1000
        assert ep.name == "https://api.example.com/todos"
        assert type(ep.extend(path="/users")) is Api
        assert ep.extend(path="/users").url_prefix == "https://api.example.com"

    def test_subclass_side_effect_attribute(self) -> None:
        class Fx(RestEndpoint):
            side_effect = True

        assert Fx(path="/a").method == "POST"
        assert Fx(path="/a", method="GET").side_effect is None

    def test_subclass_extra_attribute_as_option(self) -> None:
        class WithToken(RestEndpoint):
            token: str = ""

        ep = WithToken(path="/a", token="t").extend(path="/b")
        assert ep.token == "t"

    def test_lifecycle_options(self) -> None:
        def opt(snapshot: Any, *args: Any) -> Any:
            return {}

        def upd(result: Any, *args: Any) -> dict[str, Any]:
            return {}

        ep = RestEndpoint(
            path="/a",
            data_expiry_length=1,
            error_expiry_length=2,
            invalid_if_stale=True,
            poll_frequency=3,
            get_optimistic_response=opt,
            update=upd,
            name="N",
        )
        assert (ep.data_expiry_length, ep.error_expiry_length, ep.invalid_if_stale) == (1, 2, True)
        assert (ep.poll_frequency, ep.get_optimistic_response, ep.update, ep.name) == (
            3,
            opt,
            upd,
            "N",
        )
        plain = RestEndpoint(path="/a")
        assert plain.data_expiry_length is None and plain.invalid_if_stale is False
        assert plain.poll_frequency is None and plain.get_optimistic_response is None

    def test_error_policy(self) -> None:
        ep = RestEndpoint(path="/a")
        assert ep.error_policy(NetworkError("x", status=500)) == "soft"
        assert ep.error_policy(NetworkError("x", status=503)) == "soft"
        assert ep.error_policy(NetworkError("x", status=404)) is None
        assert ep.error_policy(ValueError("x")) is None
        custom = RestEndpoint(path="/a", error_policy=lambda error: "soft")
        assert custom.error_policy(NetworkError("x", status=404)) == "soft"

    def test_process_option_and_subclass(self) -> None:
        ep = RestEndpoint(path="/a", process=lambda value, *args: (value, args))
        assert ep.process(1, {"a": 1}) == (1, ({"a": 1},))

        class Doubling(RestEndpoint):
            def process(self, value: Any, *args: Any) -> Any:
                return value * 2

        assert Doubling(path="/a").process(2) == 4


# -- 2.3 request init ----------------------------------------------------------------


class TestRequestInit:
    def test_get_has_json_content_type_and_no_body(self) -> None:
        init = init_of(RestEndpoint(path="/a"), None)
        assert init["method"] == "GET"
        assert init["headers"] == {"Content-Type": "application/json"}
        assert "content" not in init

    def test_dict_body_is_compact_json(self) -> None:
        init = init_of(RestEndpoint(path="/a", method="POST"), {"x": 1, "t": "é"})
        assert init["content"] == '{"x":1,"t":"é"}'.encode()
        assert init["headers"] == {"Content-Type": "application/json"}

    def test_list_body_is_json(self) -> None:
        init = init_of(RestEndpoint(path="/a", method="POST"), [1, {"a": None}])
        assert init["content"] == b'[1,{"a":null}]'

    def test_raw_bodies_get_no_content_type(self) -> None:
        ep = RestEndpoint(path="/a", method="POST")
        for body in ("raw string", b"bytes", bytearray(b"ba")):
            init = init_of(ep, body)
            assert init["headers"] == {}
            assert init["content"] in ("raw string", b"bytes", b"ba")

    def test_user_headers_win(self) -> None:
        ep = RestEndpoint(
            path="/a",
            method="POST",
            request_init={"headers": {"Content-Type": "text/plain", "X-A": "1"}},
        )
        assert init_of(ep, {"a": 1})["headers"] == {"Content-Type": "text/plain", "X-A": "1"}
        lower = RestEndpoint(path="/a", request_init={"headers": {"content-type": "text/csv"}})
        assert init_of(lower, None)["headers"] == {"content-type": "text/csv"}

    def test_request_init_headers_as_pairs_or_a_bad_type(self) -> None:
        """Headers given as (name, value) pairs work; a number is a ParamError naming the option, not a TypeError."""
        pairs = RestEndpoint(path="/a", request_init={"headers": [("X-A", "1")]})
        assert init_of(pairs, None)["headers"] == {"Content-Type": "application/json", "X-A": "1"}
        with pytest.raises(ParamError, match="request_init headers must be a mapping or"):
            init_of(RestEndpoint(path="/a", request_init={"headers": 5}), None)

    def test_request_init_items_kept_method_wins(self) -> None:
        ep = RestEndpoint(path="/a", method="PUT", request_init={"method": "GET", "timeout": 2})
        init = init_of(ep, {"a": 1})
        assert init["method"] == "PUT" and init["timeout"] == 2

    def test_forms_get_no_json_content_type(self) -> None:
        ep = RestEndpoint(path="/a", method="POST", request_init={"data": {"a": "1"}})
        init = init_of(ep, None)
        assert init["headers"] == {} and init["data"] == {"a": "1"}

    def test_file_like_body_is_streamed(self) -> None:
        ep = RestEndpoint(path="/a", method="POST")
        init = init_of(ep, io.BytesIO(b"abc"))
        assert init["headers"] == {}

        async def collect() -> bytes:
            return b"".join([chunk async for chunk in init["content"]])

        assert asyncio.run(collect()) == b"abc"

    def test_async_iterable_body_passed_through(self) -> None:
        async def gen() -> AsyncIterator[bytes]:
            yield b"a"

        body = gen()
        assert init_of(RestEndpoint(path="/a", method="POST"), body)["content"] is body

    def test_unsupported_body(self) -> None:
        with pytest.raises(ParamError, match="Unsupported request body"):
            init_of(RestEndpoint(path="/a", method="POST"), 12)

    def test_get_headers_sync_and_async(self) -> None:
        class Sync(RestEndpoint):
            def get_headers(self, headers: dict[str, str]) -> dict[str, str]:
                return {**headers, "X-Sync": "1"}

        class Async(RestEndpoint):
            async def get_headers(self, headers: dict[str, str]) -> dict[str, str]:
                await asyncio.sleep(0)
                return {**headers, "Authorization": "Bearer t"}

        assert init_of(Sync(path="/a"), None)["headers"]["X-Sync"] == "1"
        assert init_of(Async(path="/a"), None)["headers"] == {
            "Content-Type": "application/json",
            "Authorization": "Bearer t",
        }

    def test_get_headers_cannot_corrupt_defaults(self) -> None:
        class Mutating(RestEndpoint):
            def get_headers(self, headers: dict[str, str]) -> dict[str, str]:
                headers["X-N"] = headers.get("X-N", "") + "x"
                return headers

        ep = Mutating(path="/a")
        init_of(ep, None)
        assert init_of(ep, None)["headers"]["X-N"] == "x"

    def test_names(self) -> None:
        assert RestEndpoint(path="/a", url_prefix="http://h").name == "http://h/a"
        assert RestEndpoint(path="/a", name="custom").extend(path="/b").name == "custom"


# -- 3.1 parse_response ----------------------------------------------------------------


class TestParseResponse:
    def test_204_is_none_even_with_schema(self) -> None:
        ep = RestEndpoint(path="/a", schema=Todo)
        assert parse(ep, response(204)) is None
        assert parse(RestEndpoint(path="/a", content="text"), response(204)) is None

    def test_json_detection(self) -> None:
        ep = RestEndpoint(path="/a")
        vnd = response(content=b'{"id":1,"x":2}', content_type="application/vnd.api+json; charset=utf-8")
        assert parse(ep, vnd) == {"id": 1, "x": 2}
        assert parse(ep, response(content=b"abc")) == "abc"

    def test_no_schema_text_and_binary(self) -> None:
        ep = RestEndpoint(path="/a")
        assert parse(ep, response(content=b"hi", content_type="text/plain")) == "hi"
        assert parse(ep, response(content=b"<x/>", content_type="application/xml")) == "<x/>"
        assert parse(ep, response(content=b"\x89PNG", content_type="image/png")) == b"\x89PNG"

    def test_schema_with_html_is_404_quoting_body(self) -> None:
        ep = RestEndpoint(path="/a", schema=Todo)
        html = "<!doctype html><p>hi" + "x" * 400
        with pytest.raises(NetworkError) as info:
            parse(ep, response(content=html.encode(), content_type="text/html"))
        assert info.value.status == 404
        assert "Unexpected html response for schema Todo" in str(info.value)
        assert html[:300] in str(info.value) and html[:301] not in str(info.value)

    def test_schema_with_doctype_without_content_type(self) -> None:
        with pytest.raises(NetworkError, match="html") as info:
            parse(RestEndpoint(path="/a", schema=Todo), response(content=b"<!doctype html><p>"))
        assert info.value.status == 404

    def test_schema_with_text_json_is_404(self) -> None:
        ep = RestEndpoint(path="/a", schema=Todo)
        with pytest.raises(NetworkError, match='does not include "json"') as info:
            parse(ep, response(content=b'{"id": 10}', content_type="text/plain"))
        assert info.value.status == 404

    def test_schema_without_content_type_is_404(self) -> None:
        with pytest.raises(NetworkError, match="Unexpected text response") as info:
            parse(RestEndpoint(path="/a", schema=Todo), response(content=b"abc"))
        assert info.value.status == 404

    def test_schema_with_binary_is_400(self) -> None:
        ep = RestEndpoint(path="/a", schema=Todo)
        with pytest.raises(NetworkError, match='binary content-type "image/png" for schema Todo') as info:
            parse(ep, response(content=b"\x89PNG", content_type="image/png"))
        assert info.value.status == 400
        assert info.value.response is not None

    def test_process_override_allows_text_with_schema(self) -> None:
        ep = RestEndpoint(path="/a", schema=Todo, process=lambda v, *a: v)
        assert parse(ep, response(content=b"abc", content_type="text/plain")) == "abc"

        class P(RestEndpoint):
            def process(self, value: Any, *args: Any) -> Any:
                return value

        assert parse(P(path="/a", schema=Todo), response(content=b"\x00", content_type="image/png")) == b"\x00"

    def test_bad_json_is_400(self) -> None:
        with pytest.raises(NetworkError) as info:
            parse(RestEndpoint(path="/a"), response(content=b"not json", content_type="application/json"))
        assert info.value.status == 400

    def test_content_modes(self) -> None:
        r = response(content=b'{"a":1}', content_type="text/plain")
        assert parse(RestEndpoint(path="/a", content="json"), r) == {"a": 1}
        assert parse(RestEndpoint(path="/a", content="text"), r) == '{"a":1}'
        assert parse(RestEndpoint(path="/a", content="blob"), r) == b'{"a":1}'
        assert parse(RestEndpoint(path="/a", content="arrayBuffer"), r) == b'{"a":1}'
        assert parse(RestEndpoint(path="/a", content="json", schema=Todo), r) == {"a": 1}

    def test_content_incompatible_with_schema(self) -> None:
        for mode in ("text", "blob", "arrayBuffer"):
            ep = RestEndpoint(path="/a", content=mode, schema=Todo)
            with pytest.raises(NetworkError, match=f"content '{mode}' is incompatible with schema") as info:
                parse(ep, response(content=b"x", content_type="text/plain"))
            assert info.value.status == 400

    def test_string_schema_counts_as_no_schema(self) -> None:
        ep = RestEndpoint(path="/a", schema="Todo")
        assert parse(ep, response(content=b"abc", content_type="text/plain")) == "abc"

    @pytest.mark.parametrize("value", [5, 1.5, True, object()])
    def test_a_plain_value_as_schema_is_refused_where_defined(self, value: object) -> None:
        with pytest.raises(DefinitionError, match="schema"):
            RestEndpoint(path="/a", schema=value)  # type: ignore[call-overload]
        with pytest.raises(DefinitionError, match="schema"):
            RestEndpoint(path="/a").extend(schema=value)


class _RaisingHooks(RestEndpoint):
    """`key` and `search_to_string` overridden in a subclass, raising when the `hook` param names them."""

    def key(self, *args: object) -> str:
        if args and isinstance(args[0], dict) and args[0].get("hook") == "key":
            raise ValueError("key bug")
        return super().key(*args)

    def search_to_string(self, params: Any) -> str:
        if params.get("hook") == "search_to_string":
            raise ValueError("search_to_string bug")
        return super().search_to_string(params)


def _raise_for(hook: str) -> Any:
    def broken(*args: object) -> str:
        raise ValueError(f"{hook} bug")

    return broken


@pytest.mark.parametrize("hook", ["key", "url", "search_to_string"])
async def test_a_key_or_url_hook_that_raises_gives_a_restlayer_error_naming_the_endpoint(hook: str, api: Any) -> None:
    """A user's `key`/`url`/`search_to_string` (option or subclass method) that raises: callers get a
    RestLayerError naming the endpoint, with the original as its cause (like `process`, `get_headers`)."""
    from restlayer.core import Controller

    endpoints = [RestEndpoint(path="/todos/:id", url_prefix=api.url, name="todo", **{hook: _raise_for(hook)})]
    if hook != "url":
        endpoints.append(_RaisingHooks(path="/todos/:id", url_prefix=api.url, name="todo"))
    ctrl = Controller()
    try:
        for ep in endpoints:
            params = {"id": 1, "hook": hook}
            with pytest.raises(RestLayerError, match=f"todo: {hook}.* raised ValueError: {hook} bug") as info:
                await asyncio.wait_for(ctrl.fetch(ep, params), 10)
            assert type(info.value.__cause__) is ValueError
            with pytest.raises(RestLayerError) as info:
                ctrl.dle(ep, params)
            assert type(info.value.__cause__) is ValueError
            if hook != "key":  # sending needs only the URL
                with pytest.raises(RestLayerError) as info:
                    await asyncio.wait_for(ep(params), 10)
                assert type(info.value.__cause__) is ValueError
    finally:
        ctrl.close()


@pytest.mark.parametrize("hook", ["key", "url", "search_to_string"])
@pytest.mark.parametrize("returned", [None, 5, b"GET /todos"])
async def test_a_key_or_url_hook_returning_no_str_is_a_param_error_and_stores_nothing(
    hook: str, returned: object, api: Any
) -> None:
    """A forgotten `return` (None) or a number as the key was stored as the key (every `test_key` then
    failed on it); as a URL or search string it was sent garbled. A ParamError naming the hook now."""
    from restlayer.core import Controller

    hooks: dict[str, Any] = {hook: lambda *args: returned}
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, name="echo", **hooks)
    ctrl = Controller()
    try:
        with pytest.raises(ParamError, match=f"echo: {hook}\\(\\) returned {type(returned).__name__}, not a str"):
            await asyncio.wait_for(ctrl.fetch(ep, {"q": 1}), 10)
        assert dict(ctrl.get_state()["endpoints"]) == {} and len(api.requests) == 0
    finally:
        ctrl.close()


def test_an_endpoint_with_guarded_hooks_still_pickles_and_stays_guarded() -> None:
    """The guard around a subclass's own `key` (or `search_to_string`) is not pickled: the copy is
    built from its class and options, and guarded again."""
    import pickle

    ep = _RaisingHooks(path="/todos/:id", name="todo")
    copy = pickle.loads(pickle.dumps(ep))
    assert copy.key({"id": 1}) == ep.key({"id": 1}) == "GET /todos/1"
    with pytest.raises(RestLayerError, match=r"todo: key\(\) raised ValueError") as info:
        copy.key({"id": 1, "hook": "key"})
    assert type(info.value.__cause__) is ValueError
