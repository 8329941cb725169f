"""Bounded replies and clear errors, against the real test server on 127.0.0.1: a cap on
the decoded body, a total deadline, too-deep JSON, reset streams, empty bodies, and
argument misuse that used to send the wrong request (or drop the right reply)."""

from __future__ import annotations

import datetime
import decimal
import uuid
import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest

from examples.todo_api import LocalServer
from restlayer.core import Controller
from restlayer.errors import (
    BodyTooLargeError,
    DeadlineExceededError,
    DecodeError,
    EmptyBodyError,
    NetworkError,
    ParamError,
    PathTemplateWarning,
    RestLayerError,
    StatusError,
)
from restlayer.rest import RestEndpoint, resource
from restlayer.schema import Entity
from tests._present import present

pytestmark = pytest.mark.usefixtures("shared_client_closed")

MIB = 1024 * 1024


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


@pytest.fixture
async def ctrl() -> AsyncIterator[Controller]:
    c = Controller()
    yield c
    c.close()


# -- body size -----------------------------------------------------------------------------


def test_default_body_cap_is_100_mib() -> None:
    assert RestEndpoint(path="/x").max_body_size == 100 * MIB


async def test_decoded_body_over_the_cap_fails_and_stores_nothing(api: LocalServer, ctrl: Controller) -> None:
    # 4 MiB of zeros, gzip-compressed to a few KiB: the cap applies to the decoded size
    ep = RestEndpoint(path="/_test/gzip", url_prefix=api.url, max_body_size=MIB)
    with pytest.raises(BodyTooLargeError, match="max_body_size=1048576") as info:
        await ctrl.fetch(ep, {"kib": 4096})
    assert isinstance(info.value, NetworkError)
    assert ctrl.get_response(ep, {"kib": 4096}).data is None


async def test_decoded_body_under_the_cap_is_read_whole(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/gzip", url_prefix=api.url, max_body_size=MIB)
    assert await ep({"kib": 1024}) == "0" * MIB


@pytest.mark.parametrize("cap", [1000, 5000])
async def test_an_unencoded_body_of_declared_length_over_the_cap_fails(api: LocalServer, cap: int) -> None:
    ep = RestEndpoint(path="/_test/list", url_prefix=api.url, max_body_size=cap)
    with pytest.raises(BodyTooLargeError, match=f"max_body_size={cap}"):
        await ep({"n": 100})  # about 5.6 KB, sent with its Content-Length


@pytest.mark.parametrize("cap", [6000, None])
async def test_an_unencoded_body_within_the_cap_or_uncapped_is_read_whole(api: LocalServer, cap: int | None) -> None:
    ep = RestEndpoint(path="/_test/list", url_prefix=api.url, max_body_size=cap)
    rows = await ep({"n": 100})
    assert [row["id"] for row in rows] == list(range(1, 101))


@pytest.mark.parametrize(("code", "policy", "cap"), [(503, "soft", 10), (404, None, 10), (503, "soft", 10.5)])
async def test_an_error_reply_over_the_cap_keeps_its_status(
    api: LocalServer, ctrl: Controller, code: int, policy: str | None, cap: float
) -> None:
    """The cap cuts an error page short instead of hiding the server's status behind a 400."""
    ep = RestEndpoint(path="/_test/status/:code", url_prefix=api.url, max_body_size=cap)  # the body is ~25 bytes
    with pytest.raises(StatusError, match=f"-> {code} ") as info:
        await ctrl.fetch(ep, {"code": code})
    assert info.value.status == code
    assert present(info.value.response).content == b'{"message"'
    assert ctrl.get_state()["meta"][ep.key({"code": code})]["error_policy"] == policy


# -- total deadline --------------------------------------------------------------------------


async def test_total_timeout_bounds_a_dripping_reply(api: LocalServer) -> None:
    # the server needs 200 x 50 ms = 10 s; each read is fast, so only a total deadline stops it
    ep = RestEndpoint(path="/_test/drip", url_prefix=api.url, total_timeout=0.5, request_init={"timeout": 30})
    with pytest.raises(DeadlineExceededError, match=r"total_timeout=0\.5"):
        await ep({"chunks": 200, "ms": 50})


async def test_total_timeout_lets_a_complete_reply_through(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/drip", url_prefix=api.url, total_timeout=30)
    assert await ep({"chunks": 2, "ms": 1}) == {}


# -- undecodable bodies ------------------------------------------------------------------------


@pytest.mark.parametrize("schema", [None, Todo])
async def test_too_deep_json_is_a_decode_error(api: LocalServer, ctrl: Controller, schema: Any) -> None:
    ep = RestEndpoint(path="/_test/deep-json", url_prefix=api.url, schema=schema)
    with pytest.raises(DecodeError, match="nests too deeply") as info:
        await ctrl.fetch(ep, {"depth": 100_000})
    assert info.value.status == 400
    stored = ctrl.get_error(ep, {"depth": 100_000})
    assert isinstance(stored, DecodeError) and stored.status == 400


async def test_invalid_json_is_a_decode_error(api: LocalServer) -> None:
    with pytest.raises(DecodeError, match="invalid JSON"):
        await RestEndpoint(path="/_test/invalid-json", url_prefix=api.url)()


async def test_truncated_stream_raises_a_network_error(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/truncated", url_prefix=api.url, content="stream")
    stream = await ep()
    received = 0
    with pytest.raises(NetworkError) as info:
        async for chunk in stream:
            received += len(chunk)
            assert received <= 100_000
    assert isinstance(info.value, RestLayerError) and info.value.status == 500


async def test_iterating_a_closed_stream_raises_a_restlayer_error(api: LocalServer) -> None:
    stream = await RestEndpoint(path="/_test/text", url_prefix=api.url, content="stream")()
    await stream.aclose()
    with pytest.raises(RestLayerError, match="closed"):
        await stream.__anext__()


async def test_truncated_body_raises_a_network_error(api: LocalServer) -> None:
    with pytest.raises(NetworkError):
        await RestEndpoint(path="/_test/truncated", url_prefix=api.url, content="blob")()


async def test_205_reply_names_the_empty_body(api: LocalServer) -> None:
    ep = RestEndpoint(path="/_test/status/:code", url_prefix=api.url, schema=Todo)
    with pytest.raises(EmptyBodyError, match=r"empty reply body \(status 205\) where schema Todo needs data") as info:
        await ep({"code": 205})
    assert info.value.status == 400


async def test_205_reply_without_schema_is_empty_text(api: LocalServer) -> None:
    assert await RestEndpoint(path="/_test/status/:code", url_prefix=api.url)({"code": 205}) == ""


# -- params of other types ---------------------------------------------------------------------

ODD_PARAMS: dict[str, Any] = {
    "day": datetime.date(2024, 1, 2),
    "at": datetime.datetime(2024, 1, 2, 3, 4, 5),
    "ref": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "amount": decimal.Decimal("1.50"),
}


async def test_collection_params_of_date_uuid_decimal_work_like_strings(api: LocalServer, ctrl: Controller) -> None:
    lists = resource(path="/_test/list/:id", schema=Todo, url_prefix=api.url)
    params = {"n": 3, **ODD_PARAMS}
    fetched = await ctrl.fetch(lists.get_list, params)
    assert [t.id for t in fetched] == [1, 2, 3]
    query = api.requests[-1].query
    assert "day=2024-01-02" in query and "ref=12345678-1234-5678-1234-567812345678" in query
    assert "amount=1.50" in query and "at=2024-01-02+03%3A04%3A05" in query
    assert [t.id for t in present(ctrl.get_response(lists.get_list, params).data)] == [1, 2, 3]
    assert [t.id for t in present(ctrl.cache(lists.get_list, params))] == [1, 2, 3]
    assert [t.id for t in await ctrl.suspense(lists.get_list, params)] == [1, 2, 3]
    # the same text as a str names the same list
    as_text = {"n": 3, **{k: str(v) for k, v in ODD_PARAMS.items()}}
    assert [t.id for t in present(ctrl.cache(lists.get_list, as_text))] == [1, 2, 3]


# -- misuse -----------------------------------------------------------------------------------------


async def test_body_endpoint_called_with_keywords_only_says_the_body_is_missing(
    api: LocalServer, ctrl: Controller
) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url)
    with pytest.raises(ParamError, match="takes a body"):
        await ctrl.fetch(todos.partial_update, id=1, completed=True)
    assert api.requests == []
    # the body given positionally is fine
    await ctrl.fetch(todos.partial_update, {"completed": True}, id=1)
    assert api.requests[-1].method == "PATCH" and api.requests[-1].body == b'{"completed":true}'


def test_braced_name_in_path_warns_with_a_hint() -> None:
    with pytest.warns(PathTemplateWarning, match='write ":id"'):
        RestEndpoint(path="/warned/todos/{id}")


@pytest.mark.parametrize("path", ["/book{s}/:id", "/todos/:id", "/files{/:name}", "/a{/b}/:id"])
def test_intended_optional_text_does_not_warn(path: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RestEndpoint(path=path)


def test_trailing_slash_after_last_param_stays_on_the_list_path() -> None:
    todos = resource(path="/todos/:id/", schema=Todo)
    assert todos.get_list.path == "/todos/"
    assert todos.get_list.push.path == "/todos/"
    assert resource(path="/todos/:id", schema=Todo).get_list.path == "/todos"
    assert resource(path="/todos/:id/detail", schema=Todo).get_list.path == "/todos"
