"""A user's entities: typed constructor, typed fields, Self-returning builders."""

from __future__ import annotations

from typing import Any, ClassVar

from typing_extensions import assert_type

from restlayer import Entity


class User(Entity):
    id: int = 0
    name: str = ""


class Todo(Entity):
    id: int = 0
    title: str = ""
    completed: bool = False
    user_id: int | None = None
    tags: ClassVar[tuple[str, ...]] = ()
    schema = {"author": User}


todo = Todo(id=1, title="x")
assert_type(todo, Todo)
assert_type(todo.title, str)
assert_type(todo.completed, bool)
assert_type(todo.user_id, int | None)
assert_type(Todo.from_json({"id": 1, "title": "y"}), Todo)
assert_type(Todo.from_json({"id": 1}).title, str)
assert_type(todo.replace(title="z"), Todo)
assert_type(todo.replace(), Todo)
assert_type(todo.replace(user_id=None, completed=True).completed, bool)
assert_type(todo.pk(), str | None)
assert_type(todo.to_dict(), dict[str, Any])

# Mistakes a checker must catch.
Todo(titel="x")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
Todo(id="1")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
Todo(1)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
todo.replace(titel="z")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
todo.replace(id="1")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
todo.title = "changed"  # type: ignore[misc]  # pyright: ignore[reportAttributeAccessIssue]
todo.missing  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
