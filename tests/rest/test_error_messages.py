"""Errors that say what happened: the message of a non-2xx reply, the error tree, loop-bound clients."""

from __future__ import annotations

import asyncio
import gc
import inspect
import re
import warnings
from typing import Any

import httpx
import pytest

import restlayer
from restlayer import (
    ClientLoopError,
    DecodeError,
    Entity,
    ProcessingError,
    RestEndpoint,
    RestLayerError,
    SchemaError,
    StatusError,
    TransportError,
    resource,
)
from restlayer.rest._parse import status_message


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


async def test_a_bad_request_names_method_url_status_and_the_servers_message(api: Any) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=api.url)
    with pytest.raises(StatusError) as info:
        await todos.partial_update({"id": 1}, {"completed": "maybe"})
    assert str(info.value) == f"PATCH {api.url}/todos/1 -> 400 Bad Request: completed must be of type boolean"
    assert info.value.status == 400 and info.value.response is not None


def _reply(status: int, content: bytes, content_type: str) -> httpx.Response:
    request = httpx.Request("POST", "http://127.0.0.1/items")
    return httpx.Response(status, content=content, headers={"content-type": content_type}, request=request)


def test_a_validation_reply_quotes_its_detail_member() -> None:
    body = b'{"detail": [{"loc": ["body", "title"], "msg": "field required", "type": "missing"}]}'
    message = status_message(_reply(422, body, "application/json"))
    assert message.startswith("POST http://127.0.0.1/items -> 422 Unprocessable Entity: [{")
    assert '"msg": "field required"' in message


def test_a_long_reply_is_cut_to_about_500_characters() -> None:
    message = status_message(_reply(500, b"x" * 5000, "text/plain"))
    detail = message.split(": ", 1)[1]
    assert len(detail) == 500 and detail.endswith("...")


async def test_transport_failure_is_a_transport_error(unused_tcp_port: int) -> None:
    endpoint = RestEndpoint(path="/todos", url_prefix=f"http://127.0.0.1:{unused_tcp_port}")
    with pytest.raises(TransportError) as info:
        await endpoint()
    assert info.value.status == 500 and info.value.response is None
    assert str(info.value).startswith(f"GET http://127.0.0.1:{unused_tcp_port}/todos: ")


async def test_undecodable_body_is_a_decode_error(api: Any) -> None:
    with pytest.raises(DecodeError) as info:
        await RestEndpoint(path="/_test/invalid-json", url_prefix=api.url)()
    assert info.value.status == 400


async def test_a_reply_that_does_not_fit_the_schema_is_a_processing_error(api: Any) -> None:
    wrong = RestEndpoint(path="/_test/status/:code", url_prefix=api.url, schema=Todo)
    async with restlayer.Controller() as ctrl:
        with pytest.raises(ProcessingError) as info:
            await ctrl.fetch(wrong, code=200)  # {"message": ...}: no id, so no primary key
    assert info.value.status == 400 and isinstance(info.value, SchemaError)


def test_every_error_class_is_exported_and_drawn_in_the_tree() -> None:
    import restlayer.errors as errors

    classes = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, RestLayerError) and value.__module__ == errors.__name__
    }
    assert classes <= set(restlayer.__all__)
    drawn = set(re.findall(r"(\w+Error|AbortOptimistic)\s{2,}", errors.__doc__ or ""))
    assert drawn == classes


def test_a_client_from_a_closed_loop_says_what_to_do(api: Any) -> None:
    client = httpx.AsyncClient()
    endpoint = RestEndpoint(path="/todos/1", url_prefix=api.url, client=client)
    asyncio.run(endpoint())  # the client's pooled connection now belongs to a closed loop
    with pytest.raises(ClientLoopError, match="create it inside the running loop"):
        asyncio.run(endpoint())
    with warnings.catch_warnings():  # the misuse leaks that connection: drop it quietly, here
        warnings.simplefilter("ignore", ResourceWarning)
        del client, endpoint
        gc.collect()


def test_a_reply_without_a_body_or_with_unusual_json_still_reads_well() -> None:
    assert (
        status_message(_reply(503, b"", "application/json")) == "POST http://127.0.0.1/items -> 503 Service Unavailable"
    )
    assert status_message(_reply(400, b"not json", "application/json")).endswith(": not json")
    assert status_message(_reply(400, b'["a", "b"]', "application/json")).endswith(': ["a", "b"]')
    assert status_message(_reply(400, b'{"error": "", "title": "Bad input"}', "application/problem+json")).endswith(
        ": Bad input"
    )
    mislabeled = httpx.Response(
        418,
        content=b"x",
        headers={"content-type": "text/plain; charset=no-such-codec"},
        request=_reply(1, b"", "").request,
    )
    assert status_message(mislabeled).endswith("-> 418 I'm a teapot: x")
