"""Security rules of the REST layer, checked against real servers on 127.0.0.1:
no cookie shared between Controllers, no endpoint header sent to another origin on a
redirect, no mutation turned into a GET by a redirect, no path param that escapes its
segment, no header value that smuggles a line break."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from examples.todo_api import LocalServer
from restlayer.core import Controller
from restlayer.errors import NetworkError, ParamError, RedirectError
from restlayer.rest import RestEndpoint, configure_client, resource
from restlayer.schema import Entity

pytestmark = pytest.mark.usefixtures("shared_client_closed")


@pytest.fixture
async def controllers() -> AsyncIterator[tuple[Controller, Controller]]:
    a, b = Controller(), Controller()
    yield a, b
    a.close()
    b.close()


def _endpoints(api: LocalServer, **options: Any) -> tuple[RestEndpoint, RestEndpoint]:
    set_cookie = RestEndpoint(path="/_test/set-cookie", url_prefix=api.url, **options)
    echo = RestEndpoint(path="/_test/echo", url_prefix=api.url, **options)
    return set_cookie, echo


# -- cookies -------------------------------------------------------------------------------


async def test_cookie_received_by_one_controller_is_not_sent_by_another(
    api: LocalServer, controllers: tuple[Controller, Controller]
) -> None:
    a, b = controllers
    set_cookie, echo = _endpoints(api)
    await a.fetch(set_cookie)
    seen_by_b = await b.fetch(echo)
    assert "cookie" not in seen_by_b["headers"]


async def test_reset_entire_store_forgets_cookies(api: LocalServer, controllers: tuple[Controller, Controller]) -> None:
    a, _ = controllers
    set_cookie, echo = _endpoints(api)
    await a.fetch(set_cookie)
    a.reset_entire_store()
    seen = await a.fetch(echo)
    assert "cookie" not in seen["headers"]


async def test_one_client_passed_on_purpose_shares_its_cookies(
    api: LocalServer, controllers: tuple[Controller, Controller]
) -> None:
    a, b = controllers
    async with httpx.AsyncClient() as own:
        set_cookie, echo = _endpoints(api, client=own)
        await a.fetch(set_cookie)
        seen_by_b = await b.fetch(echo)
    assert seen_by_b["headers"]["cookie"] == "session=s3cret"


# -- redirects -------------------------------------------------------------------------------


def _credential_endpoint(api: LocalServer, method: str = "GET") -> RestEndpoint:
    return RestEndpoint(
        path="/_test/redirect",
        url_prefix=api.url,
        method=method,
        request_init={"headers": {"X-Token": "from-request-init"}, "auth": ("user", "pass")},
        get_headers=lambda headers: {**headers, "X-Api-Key": "k-123", "Cookie": "sid=abc"},
    )


async def test_endpoint_headers_are_not_sent_to_another_origin_on_redirect(
    api: LocalServer, other_api: LocalServer
) -> None:
    ep = _credential_endpoint(api)
    seen = await ep({"to": f"{other_api.url}/_test/echo"})
    assert seen["path"] == "/_test/echo"
    assert other_api.requests[-1].path == "/_test/echo"
    for name in ("x-api-key", "x-token", "cookie", "authorization"):
        assert name not in seen["headers"], name


async def test_endpoint_headers_follow_a_same_origin_redirect(api: LocalServer) -> None:
    ep = _credential_endpoint(api)
    seen = await ep({"to": f"{api.url}/_test/echo"})
    assert seen["headers"]["x-api-key"] == "k-123"
    assert seen["headers"]["x-token"] == "from-request-init"
    assert seen["headers"]["authorization"].startswith("Basic ")


@pytest.mark.parametrize(
    "request_init",
    [{"headers": {"Cookie": "sid=abc"}}, {"cookies": {"sid": "abc"}}],
    ids=["cookie-header", "cookies-option"],
)
async def test_endpoint_cookies_follow_a_same_origin_redirect(
    api: LocalServer, other_api: LocalServer, request_init: dict[str, Any]
) -> None:
    """httpx rebuilds the Cookie header of every redirect from the client's jar: the endpoint's own cookies were
    lost on a redirect within its origin (a missing trailing slash), so the request arrived logged out."""
    ep = RestEndpoint(path="/_test/redirect", url_prefix=api.url, request_init=request_init)
    seen = await ep({"to": f"{api.url}/_test/echo"})
    assert seen["headers"].get("cookie") == "sid=abc"
    crossed = await ep({"to": f"{other_api.url}/_test/echo"})
    assert "cookie" not in crossed["headers"]


@pytest.mark.parametrize("code", [301, 302, 303])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_mutation_redirect_that_would_become_a_get_raises(api: LocalServer, code: int, method: str) -> None:
    ep = RestEndpoint(path="/_test/redirect", url_prefix=api.url, method=method, schema=None)
    target = f"{api.url}/_test/echo"
    args: tuple[Any, ...] = ({"to": target, "code": code}, {"title": "x"})
    if method == "DELETE":
        args = args[:1]
    ctrl = Controller()
    try:
        with pytest.raises(RedirectError) as info:
            await ctrl.fetch(ep, *args)
        assert ctrl.get_response(ep, *args).data is None
    finally:
        ctrl.close()
    assert info.value.status == code
    assert info.value.location == target
    assert str(code) in str(info.value) and target in str(info.value)
    assert isinstance(info.value, NetworkError)
    assert [r.path for r in api.requests] == ["/_test/redirect"]  # the target was never called


@pytest.mark.parametrize("code", [307, 308])
async def test_mutation_redirect_keeping_method_and_body_is_followed(api: LocalServer, code: int) -> None:
    ep = RestEndpoint(path="/_test/redirect", url_prefix=api.url, method="POST")
    seen = await ep({"to": f"{api.url}/_test/echo", "code": code}, {"title": "x"})
    assert (seen["method"], seen["path"], seen["body"]) == ("POST", "/_test/echo", '{"title":"x"}')


@pytest.mark.parametrize("code", [307, 308])
async def test_one_shot_stream_body_redirected_is_a_param_error(api: LocalServer, code: int) -> None:
    """A streamed body cannot be sent twice: a redirect that needs it again is a clear ParamError, not httpx's own."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b"abc"

    ep = RestEndpoint(path="/_test/redirect", url_prefix=api.url, method="PUT")
    with pytest.raises(ParamError, match="one-shot stream"):
        await ep({"to": f"{api.url}/_test/status/200", "code": code}, chunks())


@pytest.fixture
def configured_credentials() -> Iterator[None]:
    """The shared clients send an API key and a cookie (each test runs in a loop of its own, so its
    shared client is built with them); the defaults come back after the test."""
    configure_client(headers={"X-Api-Key": "k-123"}, cookies={"sid": "abc"})
    yield
    configure_client()


@pytest.mark.usefixtures("configured_credentials")
async def test_configured_headers_and_cookies_are_not_sent_to_another_origin_on_redirect(
    api: LocalServer, other_api: LocalServer
) -> None:
    """httpx drops only Authorization, and a cookie given by name and value has no domain: both went to any host."""
    ep = RestEndpoint(path="/_test/redirect", url_prefix=api.url)
    direct = await ep({"to": f"{other_api.url}/_test/echo"})
    twice = await ep({"to": f"{other_api.url}/_test/redirect?to={other_api.url}/_test/echo"})
    for seen in (direct, twice):
        assert seen["path"] == "/_test/echo"
        assert "x-api-key" not in seen["headers"] and "cookie" not in seen["headers"]
    assert [r.path for r in other_api.requests] == ["/_test/echo", "/_test/redirect", "/_test/echo"]


@pytest.mark.usefixtures("configured_credentials")
async def test_configured_headers_and_cookies_follow_a_same_origin_redirect(api: LocalServer) -> None:
    seen = await RestEndpoint(path="/_test/redirect", url_prefix=api.url)({"to": f"{api.url}/_test/echo"})
    assert (seen["headers"]["x-api-key"], seen["headers"]["cookie"]) == ("k-123", "sid=abc")


async def test_get_redirects_are_still_followed(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/redirect", url_prefix=api.url)
    seen = await ep({"to": f"{api.url}/_test/echo", "code": 301})
    assert (seen["method"], seen["path"]) == ("GET", "/_test/echo")


async def test_follow_redirects_given_by_get_request_init_that_is_no_bool_is_a_param_error(api: LocalServer) -> None:
    """`"no"` would count as true: the redirect followed when the caller asked not to."""

    class NoFollow(RestEndpoint):
        async def get_request_init(self, body: object) -> dict[str, object]:
            return {**await super().get_request_init(body), "follow_redirects": "no"}

    ep = NoFollow(path="/_test/redirect", url_prefix=api.url)
    with pytest.raises(ParamError, match="follow_redirects must be True or False, not 'no'"):
        await ep({"to": f"{api.url}/_test/echo", "code": 301})
    assert api.requests == []


# -- path params -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [".", ".."])
def test_dot_segment_param_is_refused(value: str) -> None:
    ep = RestEndpoint(path="/users/:id/posts")
    with pytest.raises(ParamError, match="whole path segment"):
        ep.url({"id": value})
    with pytest.raises(ParamError, match="whole path segment"):
        ep.key({"id": value})


def test_dot_segment_in_wildcard_is_refused() -> None:
    ep = RestEndpoint(path="/files/*path")
    with pytest.raises(ParamError, match="whole path segment"):
        ep.url({"path": ["..", "..", "etc", "passwd"]})


async def test_dot_segment_param_sends_no_request(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/echo/:id/posts", url_prefix=api.url)
    with pytest.raises(ParamError):
        await ep({"id": ".."})
    assert api.requests == []


@pytest.mark.parametrize("path", ["/users/:id", "/users/:id/posts", "/users{/:id}", "/users/:id?x=1"])
def test_an_empty_value_filling_a_whole_segment_is_refused(path: str) -> None:
    ep = RestEndpoint(path=path)
    with pytest.raises(ParamError, match="empty value cannot be a whole path segment"):
        ep.url({"id": ""})


class Todo(Entity):
    id: int = 0
    title: str = ""


async def test_an_empty_id_never_sends_a_delete_to_the_lists_url(api: LocalServer) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url)
    with pytest.raises(ParamError, match="Parameter id: an empty value"):
        await todos.delete({"id": ""})
    assert api.requests == []


@pytest.mark.parametrize(("path", "url"), [("/files/:id.json", "/files/.json"), ("/a/x:id", "/a/x")])
def test_an_empty_value_inside_a_segment_is_still_sent(path: str, url: str) -> None:
    assert RestEndpoint(path=path).url({"id": ""}) == url


@pytest.mark.parametrize("value", ["...", "a..b", ".hidden", "v1.2"])
async def test_dotted_values_that_are_no_dot_segment_reach_their_own_path(api: LocalServer, value: str) -> None:
    ep = RestEndpoint(path="/_test/echo/:id/posts", url_prefix=api.url)
    seen = await ep({"id": value})
    assert seen["path"] == f"/_test/echo/{value}/posts"
    assert ep.key({"id": value}) == f"GET {api.url}/_test/echo/{value}/posts"


# -- header values ----------------------------------------------------------------------------


async def test_line_break_in_header_value_is_a_param_error_not_a_stored_server_error(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, get_headers=lambda h: {**h, "X-Bad": "a\r\nInjected: 1"})
    ctrl = Controller()
    try:
        ctrl.set_response(ep, {"cached": True})
        with pytest.raises(ParamError, match="line break"):
            await ctrl.fetch(ep)
        error = ctrl.get_error(ep)
        assert not (isinstance(error, NetworkError) and error.status == 500)
        assert error is None  # a local mistake is raised, never stored for the key
        assert ctrl.get_response(ep).data == {"cached": True}
    finally:
        ctrl.close()
    assert api.requests == []


async def test_non_ascii_header_value_is_a_clear_param_error(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, get_headers=lambda h: {**h, "X-Name": "Jörg"})
    with pytest.raises(ParamError, match="not ASCII"):
        await ep()
    assert api.requests == []


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("X Token", "1", "not a valid header name"),
        ("X-Token:", "1", "not a valid header name"),
        ("", "1", "not a valid header name"),
        ("X-Token", " s3cret", "starts or ends with whitespace"),
        ("X-Token", "s3cret\t", "starts or ends with whitespace"),
    ],
    ids=["space", "colon", "empty", "leading-space", "trailing-tab"],
)
async def test_a_header_http_cannot_carry_is_a_param_error_not_a_soft_transport_error(
    api: LocalServer, name: str, value: str, says: str
) -> None:
    """h11 refused them on sending: a TransportError of status 500, so the Controller kept stale data as if the
    server were down (error_policy "soft") for what is a mistake in the caller's headers."""
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, get_headers=lambda h: {**h, name: value})
    ctrl = Controller()
    try:
        with pytest.raises(ParamError, match=says) as info:
            await ctrl.fetch(ep)
        assert ep.error_policy(info.value) is None
    finally:
        ctrl.close()
    assert api.requests == []


async def test_headers_that_are_neither_a_mapping_nor_pairs_are_a_param_error(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, get_headers=lambda h: 5)
    ctrl = Controller()
    try:
        with pytest.raises(ParamError, match="headers must be a mapping or a list of"):
            await ctrl.fetch(ep)
    finally:
        ctrl.close()
    assert api.requests == []


@pytest.mark.parametrize(
    "headers", ["X-A: 1", [("X-A", "1", "extra")], [("X-A",)], ["XA"]], ids=["str", "triple", "single", "str-item"]
)
async def test_headers_given_as_items_that_are_not_pairs_are_a_param_error(api: LocalServer, headers: object) -> None:
    """Text, or pairs of the wrong length, from get_headers or in request_init raised a bare ValueError (unpacking)."""
    ep = RestEndpoint(path="/_test/echo", url_prefix=api.url, get_headers=lambda h: headers)
    with pytest.raises(ParamError, match="headers must be a mapping or a list of"):
        await ep()
    with pytest.raises(ParamError, match="request_init headers must be a mapping or"):
        RestEndpoint(path="/_test/echo", url_prefix=api.url, request_init={"headers": headers})
    assert api.requests == []


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({"X-A": "a\r\nInjected: 1"}, "line break"),
        ([("X-A", "a\nb")], "line break"),
        ({"X A": "1"}, "not a valid header name"),
        ({"X-Name": "Jörg"}, "not ASCII"),
    ],
    ids=["crlf-value", "lf-value-in-pairs", "space-in-name", "non-ascii"],
)
def test_request_init_headers_http_cannot_carry_are_refused_when_defined(headers: object, says: str) -> None:
    """The endpoint's own headers were checked only when sent, unlike those of `configure_client`."""
    with pytest.raises(ParamError, match=rf"/_test/echo: request_init: .*{says}"):
        RestEndpoint(path="/_test/echo", request_init={"headers": headers})


async def test_headers_given_as_an_iterator_of_pairs_are_all_sent(api: LocalServer) -> None:
    """Checking the pairs used up a generator from get_headers, so the request went without them (credentials lost)."""
    ep = RestEndpoint(
        path="/_test/echo",
        url_prefix=api.url,
        get_headers=lambda h: ((name, value) for name, value in {**h, "Authorization": "Bearer t0k"}.items()),
    )
    sent = (await ep())["headers"]
    assert (sent["authorization"], sent["content-type"]) == ("Bearer t0k", "application/json")
