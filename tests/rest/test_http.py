"""RestEndpoint and resource() against the real example server (fixture `api`).

Each test asserts what the server received (method, path, query, headers, body),
not only what the call returned.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from examples.todo_api import LocalServer
from examples.todo_api.extras import PIXEL_PNG
from restlayer.core import Controller
from restlayer.errors import NetworkError, ParamError, RestLayerError, StatusError, TransportError
from restlayer.rest import RestEndpoint, aclose, client_session, get_client, resource
from restlayer.rest.endpoint import ByteStream
from restlayer.schema import Entity


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


@pytest.fixture(autouse=True)
async def _close_shared_client() -> AsyncIterator[None]:
    """Each test runs in its own loop: close that loop's shared client afterwards."""
    yield
    await aclose()


@pytest.fixture
def todos(api: LocalServer) -> Any:
    return resource(path="/todos/:id", schema=Todo, url_prefix=api.url, pagination_field="page")


def last(api: LocalServer) -> Any:
    assert api.requests, "the server received no request"
    return api.requests[-1]


# -- plain endpoints ------------------------------------------------------------------


async def test_get_by_dict_and_keywords(api: LocalServer) -> None:
    ep = RestEndpoint(path="/todos/:id", url_prefix=api.url)
    assert (await ep({"id": 1}))["title"] == "delectus aut autem"
    assert await ep(id=1) == await ep({"id": 1})
    req = last(api)
    assert (req.method, req.path, req.query, req.body) == ("GET", "/todos/1", "", b"")
    assert req.headers["content-type"] == "application/json"


async def test_search_params_sent_sorted_with_repeats(api: LocalServer) -> None:
    ep = RestEndpoint(path="/todos", url_prefix=api.url)
    result = await ep({"userId": 1, "limit": 2, "expand": ["user", "comments"], "x": None})
    assert [t["id"] for t in result] == [1, 2]
    assert result[0]["user"]["id"] == 1
    assert last(api).query == "expand=user&expand=comments&limit=2&userId=1"


async def test_post_params_and_body(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST")
    echoed = await ep({"q": 1}, {"x": 1, "t": "é"})
    req = last(api)
    assert (req.method, req.path, req.query) == ("POST", "/_test/echo", "q=1")
    assert req.body == '{"x":1,"t":"é"}'.encode()
    assert req.headers["content-type"] == "application/json"
    assert echoed["body"] == '{"x":1,"t":"é"}'


async def test_body_with_keyword_params(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/echo/:id", url_prefix=api.url, method="PUT")
    await ep({"title": "y"}, id=3)
    req = last(api)
    assert (req.method, req.path, req.json()) == ("PUT", "/_test/echo/3", {"title": "y"})


async def test_raw_string_body_has_no_json_content_type(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST")
    await ep("raw string")
    req = last(api)
    assert req.body == b"raw string"
    assert "application/json" not in req.headers.get("content-type", "")


async def test_explicit_headers_replace_default(api: LocalServer) -> None:
    ep = RestEndpoint(
        path="/_test/echo",
        url_prefix=api.url,
        method="POST",
        request_init={"headers": {"Content-Type": "text/plain", "X-A": "1"}},
    )
    await ep({"a": 1})
    req = last(api)
    assert req.headers["content-type"] == "text/plain" and req.headers["x-a"] == "1"
    assert req.json() == {"a": 1}


async def test_bytes_file_and_async_iterable_bodies(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST")
    await ep(b"\x00\x01")
    assert last(api).body == b"\x00\x01"
    await ep(io.BytesIO(b"from a file" * 10000))
    assert last(api).body == b"from a file" * 10000

    async def chunks() -> AsyncIterator[bytes]:
        for part in (b"a", b"b", b"c"):
            yield part

    await ep(chunks())
    assert last(api).body == b"abc"


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
async def test_json_body_with_nan_or_infinity_is_refused_not_sent(api: LocalServer, number: float) -> None:
    """NaN and infinities have no JSON form: sending them as `NaN`/`Infinity` would be invalid JSON."""
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST")
    with pytest.raises(ParamError, match=r"body\['scores'\]\[1\]: .* is not valid JSON"):
        await ep({"title": "x", "scores": [1.5, number]})
    assert api.requests.matching("POST", "/_test/echo") == []


async def test_a_text_body_utf_8_cannot_encode_is_refused_not_sent(api: LocalServer) -> None:
    """A lone surrogate (text decoded with `surrogateescape`, a bad `\\ud800` escape) raised httpx's bare
    UnicodeEncodeError; a JSON body holding one was already a ParamError."""
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST")
    with pytest.raises(ParamError, match=r"/_test/echo: the request body is text UTF-8 cannot encode") as info:
        await ep("caf\udce9")
    assert isinstance(info.value.__cause__, UnicodeEncodeError)
    assert api.requests.matching("POST", "/_test/echo") == []


class _FailingFile:
    """A file whose read() fails (a disk gone, a closed pipe)."""

    def read(self, size: int = -1) -> bytes:
        raise OSError("disk gone")


async def _chunks(*chunks: object) -> AsyncIterator[object]:
    for chunk in chunks:
        yield chunk


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        (lambda: io.StringIO("caf\udce9"), ParamError, "UTF-8 cannot encode"),
        (lambda: _chunks(b"a", 5), ParamError, "int"),
        (lambda: _chunks(b"a", "b"), ParamError, "str"),
        (lambda: _FailingFile(), RestLayerError, "OSError: disk gone"),
    ],
    ids=["file-with-lone-surrogate", "async-iterable-of-int", "async-iterable-of-str", "read-raises"],
)
async def test_a_body_that_fails_while_sent_is_a_restlayer_error_on_a_direct_call(
    api: LocalServer, body: Any, error: type[RestLayerError], message: str
) -> None:
    """Through a Controller such a failure was wrapped; a direct `await ep(...)` raised it bare."""
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST")
    with pytest.raises(error, match=rf"/_test/echo: .*{message}"):
        await ep(body())
    assert (await ep(b"after"))["body"] == "after"  # the shared client still works


@pytest.mark.parametrize(
    "init",
    [{"files": {"f": 5}}],
    ids=["file-of-int"],
)
async def test_request_init_httpx_fails_on_only_while_sending_is_a_param_error(
    api: LocalServer, init: dict[str, object]
) -> None:
    """A direct call raised httpx's (or httpcore's) bare AttributeError."""
    with pytest.raises(ParamError, match=r"/_test/echo: "):
        await RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST", request_init=init)()
    assert api.requests.matching("POST", "/_test/echo") == []


@pytest.mark.parametrize(
    "extensions",
    [{"timeout": "x"}, {"timeout": {"read": -1}}, {"timeout": {"reed": 1.0}}, 5],
    ids=["timeout-text", "timeout-negative", "timeout-unknown-part", "not-a-mapping"],
)
async def test_request_init_extensions_httpcore_cannot_use_are_refused_when_defined(
    api: LocalServer, extensions: object
) -> None:
    """A direct call raised httpcore's bare AttributeError (`'str' object has no attribute 'get'`)."""
    with pytest.raises(ParamError, match=r"/_test/echo: request_init extensions"):
        RestEndpoint(path="/_test/echo", url_prefix=api.url, request_init={"extensions": extensions})
    fine = RestEndpoint(path="/_test/echo", url_prefix=api.url, request_init={"extensions": {"timeout": {"read": 5}}})
    assert (await fine())["path"] == "/_test/echo"


async def test_urlencoded_and_multipart_forms(api: LocalServer) -> None:
    form = RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST", request_init={"data": {"a": "1 2"}})
    await form()
    req = last(api)
    assert req.headers["content-type"] == "application/x-www-form-urlencoded"
    assert req.body == b"a=1+2"
    upload = form.extend(request_init={"files": {"f": ("x.txt", b"content", "text/plain")}})
    await upload()
    req = last(api)
    assert req.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert b'filename="x.txt"' in req.body and b"content" in req.body


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"b": 1}, r"data\['a'\]: dict"),
        ([1, {"b": 1}], r"data\['a'\]\[1\]: dict"),
        (b"x".decode, r"data\['a'\]: builtin_function_or_method"),
        (b"raw", r"data\['a'\]: bytes"),
    ],
    ids=["dict", "dict-in-list", "function", "bytes-urlencoded"],
)
async def test_a_form_value_that_is_no_text_or_number_is_refused_not_sent_as_its_repr(
    api: LocalServer, value: object, where: str
) -> None:
    """httpx writes such a value as Python's str(): the server received `a=%7B%27b%27%3A+1%7D` ("{'b': 1}"),
    and for bytes in a urlencoded form `b'raw'` (a multipart form sends them as they are)."""
    with pytest.raises(ParamError, match=rf"/_test/echo: request_init {where} cannot be sent in a form"):
        RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST", request_init={"data": {"a": value}})
    assert api.requests.matching("POST", "/_test/echo") == []
    fine = {"a": [1, "x", 2.5], "b": None, "c": True}
    await RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST", request_init={"data": fine})()
    assert last(api).body == b"a=1&a=x&a=2.5&b=&c=true"
    upload = {"data": {"d": b"raw"}, "files": {"f": ("x.txt", b"content")}}
    await RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST", request_init=upload)()
    assert b'name="d"\r\n\r\nraw\r\n' in last(api).body


async def test_a_body_with_a_form_in_request_init_is_refused_not_sent_without_the_form(api: LocalServer) -> None:
    """httpx sends `content` instead of `data`/`files`: the upload would go out as bare JSON without its file."""
    upload = RestEndpoint(
        path="/_test/echo", url_prefix=api.url, method="POST", request_init={"files": {"f": ("x.txt", b"content")}}
    )
    with pytest.raises(ParamError, match=r"request_init sends a form .* dropping the form"):
        await upload({"title": "x"})
    assert api.requests.matching("POST", "/_test/echo") == []
    await upload.extend(body=None)({"q": 1})
    assert b'filename="x.txt"' in last(api).body and last(api).query == "q=1"


@pytest.mark.parametrize(
    "init",
    [
        {"json": {"a": 1}, "content": b"zz"},
        {"data": {"a": "1"}, "content": b"zz"},
        {"files": {"f": b"x"}, "content": b"zz"},
        {"json": {"a": 1}, "data": {"b": "2"}},
        {"json": {"a": 1}, "files": {"f": b"x"}},
    ],
    ids=["json-content", "data-content", "files-content", "json-data", "json-files"],
)
async def test_request_init_with_two_bodies_is_refused_when_defined(api: LocalServer, init: dict[str, object]) -> None:
    """httpx sends one of them (`content` before a form, a form before `json`) and drops the other silently."""
    with pytest.raises(ParamError, match=r"/_test/echo: request_init sends more than one body"):
        RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST", request_init=init)
    both = {"data": {"a": "1"}, "files": {"f": ("x.txt", b"x")}}  # one multipart form: fine
    await RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST", request_init=both)()
    assert b'name="a"' in last(api).body and b'filename="x.txt"' in last(api).body


async def test_a_body_with_json_in_request_init_is_refused_not_sent_without_it(api: LocalServer) -> None:
    """httpx sends `content` instead of `json`: the JSON body request_init names would be dropped silently."""
    fixed = RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST", request_init={"json": {"a": 1}})
    with pytest.raises(ParamError, match=r"request_init sends a JSON body \(json=\).* dropping the JSON body"):
        await fixed({"title": "x"})
    assert api.requests.matching("POST", "/_test/echo") == []


async def test_a_body_with_content_in_request_init_is_refused_not_sent_in_its_place(api: LocalServer) -> None:
    """httpx takes the call's encoded body as `content`, replacing the bytes request_init names: one of the two
    bodies would be dropped silently, as with `json=` or a form."""
    fixed = RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST", request_init={"content": b"fixed"})
    with pytest.raises(ParamError, match=r"request_init sends a body \(content=\).* dropping the body"):
        await fixed({"title": "x"})
    assert api.requests.matching("POST", "/_test/echo") == []
    await fixed.extend(body=None)({"q": 1})
    assert last(api).body == b"fixed" and last(api).query == "q=1"
    await fixed.extend(request_init={"content": None})({"title": "x"})  # None: no body of its own
    assert last(api).body == b'{"title":"x"}'


async def test_async_get_headers_adds_auth(api: LocalServer) -> None:
    class Authed(RestEndpoint):
        async def get_headers(self, headers: dict[str, str]) -> dict[str, str]:
            await asyncio.sleep(0)
            return {**headers, "Authorization": "Bearer secret"}

    await Authed(path="/todos/:id", url_prefix=api.url)({"id": 2})
    assert last(api).headers["authorization"] == "Bearer secret"


async def test_get_headers_returning_none_is_a_param_error_not_a_request_without_headers(api: LocalServer) -> None:
    """A `get_headers` that forgets `return headers` must not send the request without its headers (credentials)."""

    class Forgetful(RestEndpoint):
        def get_headers(self, headers: dict[str, str]) -> Any:
            headers["Authorization"] = "Bearer secret"  # no return

    with pytest.raises(ParamError, match=r"get_headers returned None"):
        await Forgetful(path="/_test/echo", url_prefix=api.url)()
    assert api.requests.matching("GET", "/_test/echo") == []


async def test_get_request_init_returning_none_is_a_param_error(api: LocalServer) -> None:
    class Forgetful(RestEndpoint):
        async def get_request_init(self, body: Any) -> Any:
            await super().get_request_init(body)  # no return

    with pytest.raises(ParamError, match=r"get_request_init returned None"):
        await Forgetful(path="/_test/echo", url_prefix=api.url)()
    assert api.requests.matching("GET", "/_test/echo") == []


async def test_get_request_init_with_an_option_httpx_does_not_take_is_a_param_error(api: LocalServer) -> None:
    """httpx's own TypeError reached the caller before."""

    class Misspelt(RestEndpoint):
        async def get_request_init(self, body: Any) -> dict[str, Any]:
            init = await super().get_request_init(body)
            init["header"] = {"X-Key": "k"}  # `headers` meant
            return init

    with pytest.raises(ParamError, match=r"request options were refused by httpx.*header"):
        await Misspelt(path="/_test/echo", url_prefix=api.url)()
    assert api.requests.matching("GET", "/_test/echo") == []


@pytest.mark.parametrize(
    ("option", "value"),
    [("params", 5), ("files", "x.txt"), ("cookies", 5), ("auth", 5), ("auth", ("user",)), ("auth", ("user", 5))],
    ids=["params", "files", "cookies", "auth", "auth-1-tuple", "auth-int-password"],
)
async def test_request_options_httpx_cannot_use_are_a_param_error(api: LocalServer, option: str, value: object) -> None:
    """httpx's bare AttributeError, ValueError or TypeError reached the caller (for auth, only once sending)."""

    class Odd(RestEndpoint):
        async def get_request_init(self, body: Any) -> dict[str, Any]:
            return {**await super().get_request_init(body), option: value}

    with pytest.raises(ParamError, match=rf"/_test/echo: .*{option}"):
        await Odd(path="/_test/echo", url_prefix=api.url, method="POST", body=None)()
    with pytest.raises(ParamError, match=rf"/_test/echo: .*{option}"):
        await RestEndpoint(path="/_test/echo", url_prefix=api.url, method="POST", request_init={option: value})()
    assert api.requests.matching("POST", "/_test/echo") == []


@pytest.mark.parametrize(
    "timeout",
    [(-1, -1, -1, -1), httpx.Timeout(-1.0), httpx.Timeout(5.0, connect=float("nan")), ("5", 1), (1,)],
    ids=["negative-tuple", "negative-timeout", "nan-part", "text-part", "short-tuple"],
)
async def test_a_request_init_timeout_httpx_cannot_use_is_refused_when_defined(
    api: LocalServer, timeout: object
) -> None:
    """Only a plain number was checked: a negative tuple or httpx.Timeout failed each call as a ConnectTimeout
    (status 500, a "soft" outage keeping stale data), the others with httpx's bare TypeError, IndexError or
    ValueError."""
    with pytest.raises(ParamError, match="request_init timeout must be a positive number"):
        RestEndpoint(path="/_test/echo", url_prefix=api.url, request_init={"timeout": timeout})
    assert api.requests == []
    fine = RestEndpoint(path="/_test/echo", url_prefix=api.url, request_init={"timeout": (5, None, 5.0, 5)})
    assert (await fine())["path"] == "/_test/echo"


async def test_overridden_get_request_init(api: LocalServer) -> None:
    class Tagged(RestEndpoint):
        async def get_request_init(self, body: Any) -> dict[str, Any]:
            init = await super().get_request_init(body)
            init["params"] = {"tag": "t"}
            return init

    await Tagged(path="/_test/echo", url_prefix=api.url)()
    assert last(api).query == "tag=t"


async def test_request_init_params_are_added_to_the_calls_search_params(api: LocalServer) -> None:
    """httpx replaces a URL's query with `params=`: the call's own search params must survive (the key names them)."""
    ep = RestEndpoint(path="/_test/echo/:id", url_prefix=api.url, request_init={"params": {"api_key": "k", "q": "d"}})
    await ep({"id": 1, "q": "a b", "tag": ["x", "y"]})
    assert last(api).path == "/_test/echo/1"
    assert sorted(last(api).query.split("&")) == ["api_key=k", "q=a+b", "tag=x", "tag=y"]


async def test_client_params_are_added_to_the_calls_search_params(api: LocalServer) -> None:
    async with httpx.AsyncClient(params={"api_key": "k"}) as client:
        ctrl = Controller()
        try:
            todos = await ctrl.fetch(RestEndpoint(path="/todos", url_prefix=api.url, client=client), userId=2)
        finally:
            ctrl.close()
    assert last(api).query_params == {"api_key": "k", "userId": "2"}
    assert {todo["userId"] for todo in todos} == {2}


async def test_custom_client(api: LocalServer) -> None:
    async with httpx.AsyncClient(base_url=api.url, headers={"X-Client": "mine"}) as client:
        ep = RestEndpoint(path="/todos/:id", client=client)
        assert (await ep({"id": 3}))["id"] == 3
    req = last(api)
    assert req.headers["x-client"] == "mine" and req.path == "/todos/3"


async def test_process_gets_call_arguments(api: LocalServer) -> None:
    ep = RestEndpoint(path="/todos/:id", url_prefix=api.url, process=lambda value, *args: (value["id"], args))
    assert await ep({"id": 4}) == (4, ({"id": 4},))
    assert await ep(id=4) == (4, ({"id": 4},))


async def test_request_init_changed_in_place_is_what_the_next_request_sends(api: LocalServer) -> None:
    """A token swapped inside `request_init` (or an option set on it) goes out with the next request,
    never the value the first request was built with."""
    init: dict[str, Any] = {"headers": {"Authorization": "Bearer A"}}
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, request_init=init)
    await Controller().fetch(ep)
    assert last(api).headers["authorization"] == "Bearer A"
    init["headers"]["Authorization"] = "Bearer B"
    await Controller().fetch(ep)
    assert last(api).headers["authorization"] == "Bearer B"
    init["headers"] = [("Authorization", "Bearer C")]
    await ep()
    assert last(api).headers["authorization"] == "Bearer C"
    init["headers"][0] = ("Authorization", "Bearer D")
    init["params"] = {"tenant": "t2"}
    await ep()
    assert (last(api).headers["authorization"], last(api).query) == ("Bearer D", "tenant=t2")


# -- responses and errors --------------------------------------------------------------


async def test_html_404_page(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/html404", url_prefix=api.url, schema=Todo)
    with pytest.raises(NetworkError) as info:
        await ep()
    err = info.value
    assert err.status == 404 and isinstance(err.response, httpx.Response)
    assert str(err) == f"GET {api.url}/_test/html404 -> 404 Not Found: 404 Not Found Not Found"
    assert "<!doctype html>" in err.response.text
    assert ep.error_policy(err) is None


async def test_an_html_error_page_is_quoted_as_the_words_it_shows(api: LocalServer) -> None:
    """Styles, scripts and comments are not text; entities are decoded (`&amp;` reads `&`)."""
    ep = RestEndpoint(path="/_test/html502", url_prefix=api.url)
    with pytest.raises(NetworkError) as info:
        await ep()
    assert str(info.value) == (
        f"GET {api.url}/_test/html502 -> 502 Bad Gateway: 502 Bad Gateway Bad Gateway Tom & Jerry's <api> is down"
    )


@pytest.mark.parametrize(("path", "status"), [("/_test/500", 500), ("/_test/503", 503)])
async def test_server_errors_are_soft(api: LocalServer, path: str, status: int) -> None:
    ep = RestEndpoint(path=path, url_prefix=api.url)
    with pytest.raises(NetworkError) as info:
        await ep()
    assert info.value.status == status
    assert info.value.response is not None and info.value.response.json()["message"]
    assert ep.error_policy(info.value) == "soft"


async def test_status_route_reason_and_204(api: LocalServer) -> None:
    with pytest.raises(NetworkError, match=r"^GET http://.*/_test/status/418 -> 418 I'm a Teapot: status 418$") as info:
        await RestEndpoint(path="/_test/status/:code", url_prefix=api.url)({"code": 418})
    assert info.value.status == 418
    ep = RestEndpoint(path="/_test/status/:code", url_prefix=api.url, schema=Todo)
    assert await ep({"code": 204}) is None


async def test_an_error_reply_whose_body_cannot_be_decoded_keeps_its_status(api: LocalServer) -> None:
    """Only the body of the 404 failed (it claims gzip); it was reported as a transport failure of status 500,
    so the default policy took a missing resource for a server outage ("soft", stale data kept)."""
    ep = RestEndpoint(path="/_test/bad-gzip", url_prefix=api.url)
    with pytest.raises(StatusError) as info:
        await ep({"status": 404})
    assert info.value.status == 404 and ep.error_policy(info.value) is None
    assert info.value.response is not None and info.value.response.status_code == 404
    with pytest.raises(TransportError) as failed:  # a 2xx reply's body is the data: that stays a transport failure
        await ep({"status": 200})
    assert failed.value.status == 500


async def test_invalid_json_is_400(api: LocalServer) -> None:
    with pytest.raises(NetworkError) as info:
        await RestEndpoint(path="/_test/invalid-json", url_prefix=api.url)()
    assert info.value.status == 400


async def test_text_reply_to_schema_endpoint_is_404(api: LocalServer) -> None:
    with pytest.raises(NetworkError, match="Unexpected text response for schema Todo") as info:
        await RestEndpoint(path="/_test/text", url_prefix=api.url, schema=Todo)()
    assert info.value.status == 404
    assert await RestEndpoint(path="/_test/text", url_prefix=api.url)() == "hello"


async def test_content_type_detection(api: LocalServer) -> None:
    assert await RestEndpoint(path="/_test/vnd-json", url_prefix=api.url)() == {"id": 1, "x": 2}
    assert await RestEndpoint(path="/_test/no-content-type", url_prefix=api.url)() == "abc"
    assert await RestEndpoint(path="/_test/file", url_prefix=api.url)() == PIXEL_PNG
    with pytest.raises(NetworkError, match='binary content-type "image/png"') as info:
        await RestEndpoint(path="/_test/file", url_prefix=api.url, schema=Todo)()
    assert info.value.status == 400


async def test_binary_download_with_filename(api: LocalServer) -> None:
    class Download(RestEndpoint):
        content = "blob"
        data_expiry_length = 0

        async def parse_response(self, response: httpx.Response) -> Any:
            blob = await super().parse_response(response)
            found = re.search(r'filename="([^"]+)"', response.headers["content-disposition"])
            return {"file": blob, "filename": found.group(1) if found else None}

        def process(self, value: Any, *args: Any) -> Any:
            return value

    result = await Download(path="/_test/file", url_prefix=api.url)()
    assert result == {"file": PIXEL_PNG, "filename": "pixel.png"}
    assert last(api).path == "/_test/file"


async def test_stream_content(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/list", url_prefix=api.url, content="stream")
    stream = await ep({"n": 2000})
    chunks = [chunk async for chunk in stream]
    assert all(isinstance(c, bytes) for c in chunks)
    data = json.loads(b"".join(chunks))
    assert len(data) == 2000 and data[-1]["id"] == 2000
    assert last(api).query == "n=2000"


async def test_stream_closed_without_reading(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/list", url_prefix=api.url, content="stream")
    async with await ep({"n": 10}) as stream:
        assert isinstance(stream, ByteStream) and not stream.response.is_closed
    assert stream.response.is_closed
    stream = await ep({"n": 10})
    assert json.loads(b"".join([c async for c in stream])) and stream.response.is_closed


async def test_stream_error_status_is_read(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/500", url_prefix=api.url, content="stream")
    with pytest.raises(NetworkError) as info:
        await ep()
    assert info.value.response is not None and info.value.response.json() == {"message": "boom"}


async def test_timeout_via_request_init(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/slow", url_prefix=api.url, request_init={"timeout": 0.05})
    with pytest.raises(NetworkError) as info:
        await ep({"ms": 1000})
    err = info.value
    assert err.status == 500 and err.response is None
    assert isinstance(err.__cause__, httpx.TimeoutException)
    assert ep.error_policy(err) == "soft"
    assert await ep.extend(request_init={"timeout": 5})({"ms": 10}) == {"slept": 10}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_connection_refused_is_500() -> None:
    ep = RestEndpoint(path="/x", url_prefix=f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(NetworkError) as info:
        await ep()
    assert info.value.status == 500 and info.value.response is None
    assert ep.error_policy(info.value) == "soft"
    assert isinstance(info.value, RestLayerError)


async def test_relative_url_without_client_base_is_network_error() -> None:
    with pytest.raises(NetworkError) as info:
        await RestEndpoint(path="/x")()
    assert info.value.status == 500


# -- the shared client -------------------------------------------------------------------


async def test_shared_client_is_reused_and_reopened(api: LocalServer) -> None:
    ep = RestEndpoint(path="/todos/:id", url_prefix=api.url)
    await ep({"id": 1})
    first = get_client()
    await ep({"id": 2})
    assert get_client() is first
    await aclose()
    assert first.is_closed
    await ep({"id": 3})
    assert get_client() is not first and not get_client().is_closed


async def test_client_session_closes() -> None:
    async with client_session() as client:
        assert client is get_client()
    assert client.is_closed


def test_shared_client_per_event_loop(api: LocalServer) -> None:
    ep = RestEndpoint(path="/todos/:id", url_prefix=api.url)

    async def once() -> httpx.AsyncClient:
        await ep({"id": 1})
        return get_client()

    first = asyncio.run(once())
    second = asyncio.run(once())  # the first loop is closed: its client is not reused
    assert first is not second
    assert len([r for r in api.requests if r.path == "/todos/1"]) == 2


# -- every resource member ------------------------------------------------------------


async def test_resource_get_and_get_list(api: LocalServer, todos: Any) -> None:
    todo = await todos.get({"id": 1})
    assert todo["id"] == 1 and last(api).path == "/todos/1"
    listed = await todos.get_list({"userId": 2})
    assert {t["userId"] for t in listed} == {2}
    req = last(api)
    assert (req.method, req.path, req.query) == ("GET", "/todos", "userId=2")


async def test_resource_push_and_unshift(api: LocalServer, todos: Any) -> None:
    created = await todos.get_list.push({"userId": 1, "title": "new"})
    req = last(api)
    assert (req.method, req.path, req.query) == ("POST", "/todos", "")
    assert req.body == b'{"userId":1,"title":"new"}'
    assert req.headers["content-type"] == "application/json"
    assert created["title"] == "new" and created["id"] == 7
    await todos.get_list.unshift({"userId": 3}, {"userId": 3, "title": "first"})
    req = last(api)
    assert (req.method, req.path, req.query, req.json()) == (
        "POST",
        "/todos",
        "userId=3",
        {"userId": 3, "title": "first"},
    )


async def test_resource_update_and_partial_update(api: LocalServer, todos: Any) -> None:
    updated = await todos.update({"id": 1}, {"title": "put", "userId": 1, "completed": True})
    req = last(api)
    assert (req.method, req.path) == ("PUT", "/todos/1")
    assert req.json() == {"title": "put", "userId": 1, "completed": True}
    assert updated["title"] == "put"
    patched = await todos.partial_update({"completed": False}, id=1)
    req = last(api)
    assert (req.method, req.path, req.json()) == ("PATCH", "/todos/1", {"completed": False})
    assert patched == {"id": 1, "userId": 1, "title": "put", "completed": False}


async def test_resource_delete_204_gives_params(api: LocalServer, todos: Any) -> None:
    assert await todos.delete({"id": 5}) == {"id": 5}
    req = last(api)
    assert (req.method, req.path, req.body) == ("DELETE", "/todos/5", b"")
    with pytest.raises(NetworkError) as info:
        await todos.get({"id": 5})
    assert info.value.status == 404


async def test_resource_move_uses_item_path(api: LocalServer, todos: Any) -> None:
    moved = await todos.get_list.move({"id": 2}, {"userId": 4})
    req = last(api)
    assert (req.method, req.path, req.json()) == ("PATCH", "/todos/2", {"userId": 4})
    assert moved["userId"] == 4


async def test_resource_remove_patches_list_path(api: LocalServer) -> None:
    echo = resource(path="/_test/echo/todos/:id", schema=Todo, url_prefix=api.url)
    await echo.get_list.remove({"userId": 1}, {"id": 3})
    req = last(api)
    assert (req.method, req.path, req.query, req.json()) == (
        "PATCH",
        "/_test/echo/todos",
        "userId=1",
        {"id": 3},
    )


async def test_resource_get_page(api: LocalServer, todos: Any) -> None:
    page = await todos.get_list.get_page({"userId": 1, "page": 2, "limit": 2})
    req = last(api)
    assert (req.method, req.path, req.query) == ("GET", "/todos", "limit=2&page=2&userId=1")
    assert [t["id"] for t in page] == [3]


async def test_resource_options_reach_every_member(api: LocalServer) -> None:
    async with httpx.AsyncClient(headers={"X-Client": "res"}) as client:
        res = resource(
            path="/todos/:id",
            schema=Todo,
            url_prefix=api.url,
            client=client,
            request_init={"headers": {"X-Trace": "t1"}},
        )
        await res.get({"id": 1})
        await res.get_list.push({"title": "a", "userId": 1})
        await res.delete({"id": 1})
    for req in api.requests:
        assert req.headers["x-client"] == "res" and req.headers["x-trace"] == "t1"
    assert [r.method for r in api.requests] == ["GET", "POST", "DELETE"]


async def test_resource_extend_member_against_server(api: LocalServer, todos: Any) -> None:
    extended = todos.extend("comments", path="/todos/:id/comments", schema=None)
    comments = await extended.comments({"id": 1})
    assert comments and all(c["todoId"] == 1 for c in comments)
    assert last(api).path == "/todos/1/comments"
