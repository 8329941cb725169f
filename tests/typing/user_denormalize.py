"""A user's direct schema calls: `denormalize` and `MemoCache` read what the schema describes."""

from __future__ import annotations

from typing import Any

from typing_extensions import assert_type

from restlayer import All, Array, Collection, Entity, Invalidate, MemoCache, Query, Values, denormalize, normalize


class Todo(Entity):
    id: int = 0
    title: str = ""


def count(todos: list[Todo], *args: object) -> int:
    return len(todos)


normalized = normalize([Todo], [{"id": 1, "title": "a"}])
entities = normalized.entities

# denormalize reads like `ctrl.get`: the schema's type, or None when the data is missing or invalid.
assert_type(denormalize(Todo, "1", entities), Todo | None)
assert_type(denormalize([Todo], ["1"], entities), list[Todo] | None)
assert_type(denormalize(Array(Todo), ["1"], entities), list[Todo] | None)
assert_type(denormalize(Values(Todo), {"a": "1"}, entities), dict[str, Todo] | None)
assert_type(denormalize(Collection([Todo]), "key", entities), list[Todo] | None)
assert_type(denormalize([Values(Todo)], [{"a": "1"}], entities), list[dict[str, Todo]] | None)
assert_type(denormalize({"todo": Todo}, {"todo": "1"}, entities, ()), dict[str, Any] | None)
assert_type(denormalize(Invalidate(Todo), "1", entities), Any | None)  # a deleting schema reads as its reply
assert_type(denormalize(None, {"raw": 1}, entities), Any)  # no schema: the input as it is

memo = MemoCache()
assert_type(memo.denormalize(Todo, "1", entities), Todo | None)
assert_type(memo.denormalize([Todo], ["1"], entities, ()), list[Todo] | None)
assert_type(memo.denormalize({"todo": Todo}, {"todo": "1"}, entities), dict[str, Any] | None)
assert_type(memo.query(All(Todo), (), normalized), list[Todo] | None)
assert_type(memo.query(Todo, ({"id": 1},), normalized), Todo | None)
assert_type(memo.query(Query(All(Todo), count), (), normalized), int | None)
assert_type(memo.query({"todos": All(Todo)}, (), normalized), dict[str, Any] | None)

# Mistakes a checker must catch.
denormalize(Todo, "1", entities).title  # type: ignore[union-attr]  # pyright: ignore[reportOptionalMemberAccess]
memo.query(All(Todo), (), normalized)[0]  # type: ignore[index]  # pyright: ignore[reportOptionalSubscript]
