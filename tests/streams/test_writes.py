"""Writes: a message's store writes are checked against the store first, then applied all together."""

from __future__ import annotations

from typing import Any

import pytest

from restlayer import Controller, Entity, ExpiryStatus, ParamError, resource
from restlayer.streams import Message, SSEStream, Writes

NOWHERE = "http://127.0.0.1:9"  # never contacted: these writes need no server


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""


def title(ctrl: Controller, pk: int) -> str | None:
    """The stored title of Todo `pk` (None when absent)."""
    todo = ctrl.get(Todo, {"id": pk})
    return None if todo is None else todo.title


Todos = resource(path="/todos/:id", schema=Todo, url_prefix=NOWHERE)


def test_a_batch_of_different_writes_is_applied_in_order() -> None:
    ctrl = Controller()
    ctrl.set_response(Todos.get_list, {"userId": 1}, [{"id": 1, "userId": 1, "title": "a"}])
    writes = Writes()
    writes.set_response(Todos.get, {"id": 2}, {"id": 2, "userId": 1, "title": "b"})
    writes.set(Todo, {"id": 1}, lambda current: {"id": 1, "title": current.title + "!"})
    writes.invalidate(Todos.get_list, userId=1)
    assert len(writes) == 3
    writes.commit(ctrl)
    stored = ctrl.cache(Todos.get, id=2)
    assert stored is not None and stored.title == "b"
    assert title(ctrl, 1) == "a!"
    assert ctrl.get_response(Todos.get_list, userId=1).expiry_status == ExpiryStatus.INVALID


def test_a_batch_whose_response_does_not_fit_changes_nothing_and_stores_no_error() -> None:
    ctrl = Controller()
    writes = Writes()
    writes.set(Todo, {"id": 5, "title": "first"})
    writes.set_response(Todos.get, {"id": 6}, {"title": "no id"})
    with pytest.raises(Exception, match="primary key"):
        writes.commit(ctrl)
    assert ctrl.get(Todo, {"id": 5}) is None
    assert ctrl.get_error(Todos.get, id=6) is None


def test_an_endpoint_without_schema_takes_any_response() -> None:
    ctrl = Controller()
    raw = Todos.get.extend(schema=None, name="raw")
    writes = Writes()
    writes.set_response(raw, {"id": 1}, "plain text")
    writes.set(Todo, {"id": 9, "title": "t"})
    writes.commit(ctrl)
    assert ctrl.cache(raw, id=1) == "plain text"


def test_missing_values_are_param_errors() -> None:
    with pytest.raises(ParamError, match="the response is missing"):
        Writes().set_response(Todos.get)
    with pytest.raises(ParamError, match="the value is missing"):
        Writes().set(Todo)


def test_a_mapping_function_gets_every_message() -> None:
    got: list[Message] = []

    def on(message: Message, writes: Writes) -> None:
        got.append(message)
        writes.set(Todo, message.data)

    ctrl = Controller()
    stream = SSEStream(f"{NOWHERE}/events", on=on)
    assert stream.apply(ctrl, Message("anything", {"id": 3, "title": "c"}, "7"))
    assert got == [Message("anything", {"id": 3, "title": "c"}, "7")]
    assert title(ctrl, 3) == "c"
    assert (stream.applied, stream.last_event_id) == (1, "7")


def test_a_mapping_function_that_raises_changes_nothing() -> None:
    def on(message: Message, writes: Writes) -> None:
        writes.set(Todo, {"id": 4, "title": "half"})
        raise KeyError("missing field")

    ctrl = Controller()
    stream = SSEStream(f"{NOWHERE}/events", on=on)
    assert not stream.apply(ctrl, Message("x", {}))
    assert ctrl.get(Todo, {"id": 4}) is None
    assert stream.ignored == 1


@pytest.mark.parametrize("message", [{"type": "todos.updated", "data": {"id": 6}}, ("todos.updated", {"id": 6}), None])
def test_applying_something_that_is_no_message_is_a_param_error(message: Any) -> None:
    ctrl = Controller()
    stream = SSEStream(f"{NOWHERE}/events", on={"todos.updated": Todo})
    with pytest.raises(ParamError, match="apply takes a Message"):
        stream.apply(ctrl, message)
    assert (stream.applied, stream.ignored, stream.last_event_id) == (0, 0, None)
    assert ctrl.get(Todo, {"id": 6}) is None


async def _async_on(message: Message, writes: Writes) -> None:
    writes.set(Todo, message.data)  # pragma: no cover - never run: refused


@pytest.mark.parametrize("on", [_async_on, {"todos.updated": _async_on}], ids=["function", "table"])
def test_an_async_mapping_function_is_a_param_error(on: Any) -> None:
    """Its writes would come after the message was counted as applied (or never): refused up front."""
    with pytest.raises(ParamError, match=r"on= .*plain function"):
        SSEStream(f"{NOWHERE}/events", on=on)


def test_a_mapping_function_returning_an_awaitable_is_ignored_and_changes_nothing() -> None:
    ctrl = Controller()
    stream = SSEStream(f"{NOWHERE}/events", on=lambda message, writes: _async_on(message, writes))
    assert not stream.apply(ctrl, Message("todos.updated", {"id": 5, "title": "e"}))
    assert (stream.applied, stream.ignored) == (0, 1)
    assert ctrl.get(Todo, {"id": 5}) is None


@pytest.mark.parametrize("on", [{1: Todo}, 42])
def test_bad_mappings_are_param_errors(on: Any) -> None:
    with pytest.raises(ParamError, match="on= "):
        SSEStream(f"{NOWHERE}/events", on=on)


class NotASchema:
    """A class that is no Entity: neither a schema nor a handler."""


@pytest.mark.parametrize("target", [42, "todos", NotASchema], ids=["number", "text", "class"])
def test_a_table_entry_that_is_no_endpoint_schema_or_function_is_a_param_error(target: object) -> None:
    with pytest.raises(
        ParamError, match=r"on= table: 'todos.updated' maps to .*, not an endpoint, a schema or a function"
    ):
        SSEStream(f"{NOWHERE}/events", on={"todos.updated": target})


def test_keywords_need_mapping_params() -> None:
    with pytest.raises(ParamError, match="params must be a mapping"):
        Writes().set(Todo, 5, {"id": 1}, title="x")
