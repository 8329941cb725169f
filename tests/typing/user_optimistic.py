"""A user's optimistic guess: `snapshot.get(schema, ...)` reads like `ctrl.get(schema, ...)`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import assert_type

from restlayer import All, Entity, Values, resource
from restlayer.core._optimistic import Snapshot  # what `get_optimistic_response` is handed


class Todo(Entity):
    id: int = 0
    title: str = ""
    completed: bool = False


TodoResource = resource(path="/todos/:id", url_prefix="https://api.example.com", schema=Todo)


def toggle_guess(snapshot: Snapshot, params: Mapping[str, object], body: object = None) -> dict[str, Any]:
    """The mutations guide's guess, with every read typed by its schema."""
    assert_type(snapshot.get(Todo, params), Todo | None)
    assert_type(snapshot.get(All(Todo)), list[Todo] | None)
    assert_type(snapshot.get(Values(Todo), {}), dict[str, Todo] | None)
    assert_type(snapshot.get([Todo]), list[Todo] | None)  # the list shorthand, as `ctrl.get` reads it
    assert_type(snapshot.get({"todo": Todo}, {}), dict[str, Any] | None)
    todo = snapshot.get(Todo, params)
    if todo is None:
        raise snapshot.abort
    return {**todo.to_dict(), "completed": not todo.completed}


toggle = TodoResource.partial_update.extend(get_optimistic_response=toggle_guess)
