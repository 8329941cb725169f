"""Request body encoding (`rest._body`) and reply parsing (`rest._parse`) on their own, without a server."""

from __future__ import annotations

import ast
import datetime
import decimal
from pathlib import Path

import httpx
import pytest

import restlayer.rest.endpoint as endpoint_module
from restlayer.errors import DecodeError, EmptyBodyError, ParamError
from restlayer.rest._body import RequestParts
from restlayer.rest._parse import ByteStream, parse_reply


def test_json_body_is_encoded_once_with_a_json_content_type() -> None:
    init, headers = RequestParts({"headers": {"X-A": "1"}, "timeout": 3}).encode("POST", {"t": "é"})
    assert init == {"timeout": 3, "method": "POST", "content": '{"t":"é"}'.encode()}
    assert headers == {"Content-Type": "application/json", "X-A": "1"}


def test_text_body_keeps_the_callers_headers_only() -> None:
    init, headers = RequestParts({"headers": {"X-A": "1"}}).encode("PUT", "plain")
    assert init["content"] == "plain" and headers == {"X-A": "1"}


def test_unsupported_body_names_its_type() -> None:
    with pytest.raises(ParamError, match="object"):
        RequestParts(None).encode("POST", object())


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"when": datetime.datetime(2024, 1, 1)}, r"body\['when'\]: datetime is not JSON-serializable"),
        ([1, {"n": decimal.Decimal("1.5")}], r"body\[1\]\['n'\]: Decimal is not"),
        ({b"title": "x"}, r"body: key b'title' is a bytes"),
    ],
)
def test_json_body_json_cannot_encode_is_a_param_error(body: object, where: str) -> None:
    """What json.dumps refuses is a ParamError naming the endpoint and the member, with json's error as cause."""
    with pytest.raises(ParamError, match=rf"^ep: the request body cannot be sent as JSON: {where}") as info:
        RequestParts(None).encode("POST", body, "ep")
    assert isinstance(info.value.__cause__, TypeError)


def test_json_body_containing_itself_is_a_param_error() -> None:
    body: dict[str, object] = {}
    body["self"] = [body]
    with pytest.raises(ParamError, match=r"body\['self'\]\[0\]: contains itself") as info:
        RequestParts(None).encode("POST", body, "ep")
    assert isinstance(info.value.__cause__, ValueError)


def _reply(body: bytes, content_type: str | None, status: int = 200) -> httpx.Response:
    headers = {} if content_type is None else {"content-type": content_type}
    return httpx.Response(status, content=body, headers=headers, request=httpx.Request("GET", "http://h/x"))


async def test_parse_reply_reads_json_by_content_type() -> None:
    assert await parse_reply(_reply(b'{"a":1}', "application/json"), None, None, schema_set=False, raw_ok=True) == {
        "a": 1
    }


async def test_parse_reply_refuses_html_where_a_schema_needs_data() -> None:
    with pytest.raises(DecodeError, match="html"):
        await parse_reply(_reply(b"<html></html>", "text/html"), None, "Todo", schema_set=True, raw_ok=False)


async def test_parse_reply_refuses_an_empty_body_where_a_schema_needs_data() -> None:
    with pytest.raises(EmptyBodyError):
        await parse_reply(_reply(b"", "application/json"), None, "Todo", schema_set=True, raw_ok=False)


async def test_parse_reply_stream_mode_hands_back_a_byte_stream() -> None:
    value = await parse_reply(_reply(b"abc", None), "stream", None, schema_set=False, raw_ok=True)
    assert isinstance(value, ByteStream)


def test_endpoint_module_leaves_encoding_and_parsing_to_their_modules() -> None:
    """rest/endpoint.py neither serializes nor parses JSON itself: `_body` and `_parse` do."""
    tree = ast.parse(Path(endpoint_module.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert "json" not in imported
