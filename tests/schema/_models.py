"""Entity classes shared by the schema tests."""

from __future__ import annotations

from typing import Any

from restlayer.schema import Entity

FULL_META: dict[str, float] = {"fetched_at": 1000, "date": 1000, "expires_at": 61000}


def meta(fetched_at: float) -> dict[str, float]:
    """A complete meta dict for `fetched_at` (date = fetched_at, expires a minute later)."""
    return {"fetched_at": fetched_at, "date": fetched_at, "expires_at": fetched_at + 60000}


class User(Entity):
    id: int = 0
    username: str = ""
    name: str = ""


class Todo(Entity):
    id: int = 0
    user_id: int = 0
    title: str = ""
    completed: bool = False
    author: User | None = None

    schema = {"author": User}


class Group(Entity):
    id: int = 0
    name: str = ""


# A cycle with data below it: a todo's author owns todos (back to the todo), and each todo has a tag.
class CycleTag(Entity):
    id: int = 0
    name: str = ""


class CycleTodo(Entity):
    id: int = 0
    title: str = ""
    author: Any = None
    tag: CycleTag | None = None


class CycleUser(Entity):
    id: int = 0
    name: str = ""
    todos: list[Any] = []
    schema = {"todos": [CycleTodo]}


CycleTodo.schema = {"author": CycleUser, "tag": CycleTag}


def plain(value: Any) -> Any:
    """Tables (PMaps) and values as plain dicts/lists, for readable comparisons."""
    from collections.abc import Mapping

    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
