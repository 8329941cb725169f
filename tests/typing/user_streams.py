"""A user's stream handlers: the writes of a message check a typed endpoint's parameters like the Controller."""

from __future__ import annotations

from typing_extensions import TypedDict, assert_type

from restlayer import Entity, RestEndpoint
from restlayer.streams import Message, StreamManager, Writes


class Todo(Entity):
    id: int = 0
    title: str = ""


class TodoParams(TypedDict):
    id: int


get_todo = RestEndpoint(path="/todos/:id", url_prefix="https://api.example.com", schema=Todo, params=TodoParams)
untyped = RestEndpoint(path="/todos/:id", url_prefix="https://api.example.com", schema=Todo)


def on_deleted(message: Message, writes: Writes) -> None:
    writes.invalidate(get_todo, {"id": int(message.data["id"])})
    writes.invalidate(untyped, {"id": "1", "anything": [1]})  # untyped endpoints: checked at run time

    # Mistakes a checker must catch.
    writes.invalidate(get_todo, {"id": "1"})  # type: ignore[typeddict-item]  # pyright: ignore[reportArgumentType]
    writes.invalidate(get_todo, {"idd": 1})  # type: ignore[typeddict-item, typeddict-unknown-key]  # pyright: ignore[reportArgumentType]


class AppStreams(StreamManager):
    """A manager of the app's own: `async with` gives it back as itself."""


async def use_manager() -> None:
    async with AppStreams() as manager:
        assert_type(manager, AppStreams)
