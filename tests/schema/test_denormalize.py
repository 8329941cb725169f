"""denormalize(): missing vs deleted, instances, from_json, cycles."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from typing_extensions import Self

from restlayer.errors import SchemaError
from restlayer.schema import (
    INVALID,
    All,
    Collection,
    Entity,
    Invalidate,
    MemoCache,
    Values,
    denormalize,
    normalize,
    to_plain,
)
from restlayer.schema._base import MAX_DEPTH
from tests._present import present

from ._models import CycleTag, CycleTodo, CycleUser, Todo, User

DEFAULT_AUTHOR = User(id=0, username="nobody")


class StrictTodo(Entity):
    """A Todo whose author default is truthy: a deleted author invalidates the todo."""

    id: int = 0
    title: str = ""
    author: User = DEFAULT_AUTHOR
    key = "Todo"
    schema = {"author": User}


class Owner(Entity):
    id: int = 0
    todos: list[Todo] = []
    schema = {"todos": [Todo]}


def store() -> Any:
    """Todo 1 (author u1), Todo 2 (author u2), Todo 3 (author u3 never stored), User 2 deleted, Todo 4 deleted."""
    entities: dict[str, Any] = {
        "Todo": {
            "1": {"id": 1, "title": "one", "author": "1"},
            "2": {"id": 2, "title": "two", "author": "2"},
            "3": {"id": 3, "title": "three", "author": "3"},
            "4": INVALID,
        },
        "User": {"1": {"id": 1, "username": "u1"}, "2": INVALID},
    }
    return entities


# ----- 6.4 table ------------------------------------------------------------------------------
def test_top_level_missing_and_deleted_are_none() -> None:
    e = store()
    assert denormalize(Todo, "9", e) is None
    assert denormalize(Todo, "4", e) is None
    assert denormalize(Todo, "9", {}) is None
    assert denormalize(Todo, "1", e) == Todo(id=1, title="one", author=User(id=1, username="u1"))


def test_in_list_missing_and_deleted_dropped() -> None:
    e = store()
    assert [t.id for t in present(denormalize([Todo], ["1", "4", "9"], e))] == [1]


def test_in_values_missing_and_deleted_dropped() -> None:
    e = store()
    assert list(present(denormalize(Values(Todo), {"a": "1", "b": "4", "c": "9"}, e))) == ["a"]


def test_in_collection_missing_and_deleted_dropped() -> None:
    e = store()
    e["[Todo]"] = {"{}": ["1", "4", "9"]}
    assert [t.id for t in present(denormalize(Collection([Todo]), "{}", e))] == [1]


def test_in_all_deleted_dropped() -> None:
    e = store()
    assert sorted(t.id for t in present(denormalize(All(Todo), ["1", "2", "3", "4", "9"], e))) == [1, 2, 3]


def test_in_entity_list_field_dropped() -> None:
    e = store()
    e["Owner"] = {"1": {"id": 1, "todos": ["1", "4", "9"]}}
    assert [t.id for t in present(denormalize(Owner, "1", e)).todos] == [1]


def test_dict_member_missing_none_deleted_invalid() -> None:
    """Check: denormalize({"t": Todo}, {"t": "2"}, <2 deleted>) is invalid."""
    e = store()
    assert denormalize({"t": Todo, "x": None}, {"t": "9", "x": 1}, e) == {"t": None, "x": 1}
    assert denormalize({"t": Todo, "x": None}, {"t": "4", "x": 1}, e) is None
    assert denormalize({"t": Todo}, {"t": "2"}, {"Todo": {"2": INVALID}}) is None


def test_values_check() -> None:
    """Check: denormalize(Values(Todo), {"a": "1", "b": "2"}, <2 deleted>) == {"a": <Todo 1>}."""
    e = {"Todo": {"1": {"id": 1}, "2": INVALID}}
    assert denormalize(Values(Todo), {"a": "1", "b": "2"}, e) == {"a": Todo(id=1)}


def test_field_with_falsy_default_missing_or_deleted_is_none() -> None:
    """Check: nested deleted author with default None -> author is None."""
    e = store()
    deleted = denormalize(Todo, "2", e)
    assert deleted is not None
    assert deleted.author is None
    missing = denormalize(Todo, "3", e)
    assert missing is not None
    assert missing.author is None
    assert missing.title == "three"


def test_field_with_truthy_default_deleted_invalidates_parent() -> None:
    """Check: nested deleted author with a truthy default -> parent invalid."""
    e = store()
    assert denormalize(StrictTodo, "2", e) is None
    assert denormalize([StrictTodo], ["1", "2"], e) == [StrictTodo(id=1, title="one", author=User(id=1, username="u1"))]
    missing = denormalize(StrictTodo, "3", e)
    assert missing is not None
    assert missing.author is None


def test_invalid_detail_distinguishes_deleted_from_missing() -> None:
    e = store()
    memo = MemoCache()
    deleted = memo.denormalize_detail(Todo, "4", e)
    assert deleted.data is None and deleted.invalid is True
    missing = memo.denormalize_detail(Todo, "9", e)
    assert missing.data is None and missing.invalid is False


def test_deleted_via_normalize_then_denormalize() -> None:
    r = normalize([Todo], [{"id": 1, "author": {"id": 1}}, {"id": 2, "author": {"id": 2}}])
    result = r.result
    r = normalize(Invalidate(User), {"id": 2}, state=r)
    out = denormalize([Todo], result, r.entities)
    assert out == [Todo(id=1, author=User(id=1)), Todo(id=2, author=None)]


# ----- instances ------------------------------------------------------------------------------
def test_instances_are_immutable() -> None:
    todo = present(denormalize(Todo, "1", store()))
    with pytest.raises(AttributeError):
        todo.title = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        present(todo.author).username = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        todo.__dict__ = {}
    assert todo.title == "one"


def test_to_plain_is_a_copy() -> None:
    e = store()
    todo = present(denormalize(Todo, "1", e))
    plain = to_plain(todo)
    plain["title"] = "changed"
    plain["author"]["username"] = "changed"
    assert todo.title == "one"
    assert present(todo.author).username == "u1"
    assert e["User"]["1"] == {"id": 1, "username": "u1"}


def test_value_equality_and_fresh_objects() -> None:
    e = store()
    a = denormalize(Todo, "1", e)
    b = denormalize(Todo, "1", e)
    assert a == b
    assert a is not b  # plain denormalize builds new objects every call
    assert a != denormalize(Todo, "2", e)
    assert a != to_plain(a)


def test_defaults_and_undeclared_members() -> None:
    todo = present(denormalize(Todo, "x", {"Todo": {"x": {"id": "x", "extra": [1]}}}))
    assert todo.completed is False
    assert todo.user_id == 0
    assert todo.extra == [1]  # type: ignore[attr-defined]  # an undeclared member
    assert to_plain(todo) == {"id": "x", "user_id": 0, "title": "", "completed": False, "author": None, "extra": [1]}


def test_mutable_defaults_not_shared_between_instances() -> None:
    e = {"Owner": {"1": {"id": 1}, "2": {"id": 2}}}
    one = present(denormalize(Owner, "1", e))
    two = present(denormalize(Owner, "2", e))
    assert one.todos == [] and two.todos == []
    assert one.todos is not two.todos
    assert one.todos is not Owner.todos


class Tag(Entity):
    id: str = ""
    labels: list[str] = []
    key = "Tag"


def test_a_stored_record_with_exactly_the_fields_is_the_instances_dict() -> None:
    """Both engines build no dict per such entity (an allocation per entity slows reads in a big heap)."""
    state = normalize([Tag], [{"id": "1", "labels": ["a"]}, {"labels": ["b"], "id": "2"}, {"id": "3"}])
    table = state.entities["Tag"]
    for read in (
        present(denormalize([Tag], state.result, state.entities)),
        present(MemoCache().denormalize([Tag], state.result, state.entities)),
    ):
        assert vars(read[0]) is table["1"]  # same fields, same order: one dict for both
        assert vars(read[1]) is not table["2"] and list(vars(read[1])) == ["id", "labels"]  # class order
        assert vars(read[2]) == {"id": "3", "labels": []} and read[2].labels is not Tag.labels  # own dict
        with pytest.raises(AttributeError):
            read[0].id = "changed"  # type: ignore[misc]
    assert table["1"] == {"id": "1", "labels": ["a"]}


def test_unnormalized_input_is_built() -> None:
    out = denormalize(Todo, {"id": 1, "author": {"id": 2}}, {})
    assert out == Todo(id=1, author=User(id=2))


def test_from_json_override() -> None:
    class Point(Entity):
        id: int = 0
        x: float = 0
        y: float = 0
        owner: User | None = None
        norm: float = 0
        schema = {"owner": User}

        @classmethod
        def from_json(cls, data: Mapping[str, Any]) -> Self:
            return super().from_json({**data, "norm": data["x"] ** 2 + data["y"] ** 2})

    r = normalize(Point, {"id": 1, "x": 3, "y": 4, "owner": {"id": 9}})
    p = denormalize(Point, "1", r.entities)
    assert isinstance(p, Point)
    assert p.norm == 25
    assert p.owner == User(id=9)  # nested schemas are denormalized before from_json
    m = MemoCache()
    assert m.denormalize(Point, "1", r.entities) is m.denormalize(Point, "1", r.entities)


@pytest.mark.parametrize("built", [{"id": 1}, None], ids=["dict", "None"])
def test_from_json_returning_no_instance_is_a_schema_error_not_the_data(each_engine: str, built: object) -> None:
    """A `from_json` returning a dict or None was handed out as the entity (a dict where the read's type says
    Point, or None read as "not found" with the data valid); every read of the record now names the hook."""

    class Point(Entity):
        id: int = 0

        @classmethod
        def from_json(cls, data: Mapping[str, Any]) -> Any:
            return built

    r = normalize([Point], [{"id": 1}])
    reads: list[Callable[[], object]] = [
        lambda: denormalize(Point, "1", r.entities),
        lambda: MemoCache().denormalize(Point, "1", r.entities),
        lambda: MemoCache().denormalize([Point], r.result, r.entities),
    ]
    for read in reads:
        with pytest.raises(SchemaError, match=r"Point\.from_json returned (dict|NoneType), not a Point instance"):
            read()


# ----- cycles ---------------------------------------------------------------------------------
class CUser(Entity):
    id: int = 0
    name: str = ""
    todos: list[Any] = []
    key = "CUser"


class CTodo(Entity):
    id: int = 0
    title: str = ""
    author: CUser | None = None
    key = "CTodo"
    schema = {"author": CUser}


CUser.schema = {"todos": [CTodo]}


def cycle_store() -> Any:
    data = {
        "id": 1,
        "name": "u",
        "todos": [{"id": 10, "title": "a", "author": {"id": 1}}, {"id": 11, "title": "b", "author": 1}],
    }
    return normalize(CUser, data)


def test_cycle_normalize() -> None:
    r = cycle_store()
    assert r.entities["CUser"]["1"] == {"id": 1, "name": "u", "todos": ["10", "11"]}
    assert r.entities["CTodo"]["10"] == {"id": 10, "title": "a", "author": "1"}
    assert r.entities["CTodo"]["11"] == {"id": 11, "title": "b", "author": "1"}


@pytest.mark.parametrize("memo", [False, True])
def test_cycle_denormalize_user_todo(memo: bool) -> None:
    r = cycle_store()
    read = MemoCache().denormalize if memo else denormalize
    user = present(read(CUser, "1", r.entities))
    assert [t.title for t in user.todos] == ["a", "b"]
    assert user.todos[0].author is user
    assert user.todos[1].author is user
    todo = present(read(CTodo, "10", r.entities))
    assert present(todo.author).name == "u"
    assert present(todo.author).todos[0] is todo


def test_cycle_memo_follows_the_cycle_root() -> None:
    r = cycle_store()
    memo = MemoCache()
    user = present(memo.denormalize(CUser, "1", r.entities))
    todo = present(memo.denormalize(CTodo, "10", r.entities))
    assert todo is user.todos[0]
    r2 = normalize(CUser, {"id": 1, "name": "renamed"}, state=r)
    todo2 = present(memo.denormalize(CTodo, "10", r2.entities))
    assert todo2 is not todo
    assert present(todo2.author).name == "renamed"
    user2 = present(memo.denormalize(CUser, "1", r2.entities))
    assert user2.name == "renamed"
    assert [t.author.name for t in user2.todos] == ["renamed", "renamed"]


def test_cycle_memo_sibling_change() -> None:
    r = cycle_store()
    memo = MemoCache()
    user = memo.denormalize(CUser, "1", r.entities)
    r2 = normalize(CTodo, {"id": 11, "title": "B"}, state=r)
    user2 = present(memo.denormalize(CUser, "1", r2.entities))
    assert user2 is not user
    assert [t.title for t in user2.todos] == ["a", "B"]
    assert user2.todos[1].author is user2


def test_cycle_memo_sibling_change_reaches_earlier_members() -> None:
    r = cycle_store()
    memo = MemoCache()
    memo.denormalize(CUser, "1", r.entities)
    r2 = normalize(CTodo, {"id": 11, "title": "B"}, state=r)
    user2 = present(memo.denormalize(CUser, "1", r2.entities))
    assert user2.todos[0].author is user2


def test_cycle_memo_sees_a_change_below_the_entity_it_came_back_to() -> None:
    """Todo 1 -> author -> todos -> Todo 1 (a cycle), and Todo 1 -> tag: a new tag reaches the author's read."""
    data = {"id": 1, "tag": {"id": 7, "name": "old"}, "author": {"id": 3, "todos": [{"id": 1}]}}
    r = normalize(CycleTodo, data)
    memo = MemoCache()
    todo = present(memo.denormalize(CycleTodo, "1", r.entities))
    assert todo.author.todos[0] is todo
    r2 = normalize(CycleTag, {"id": 7, "name": "new"}, state=r)
    user = present(memo.denormalize(CycleUser, "3", r2.entities))
    assert user.todos[0].tag.name == "new"
    todo2 = present(memo.denormalize(CycleTodo, "1", r2.entities))
    assert present(todo2.tag).name == "new" and present(todo2.author).todos[0] is todo2 and todo2.author is user
    assert memo.denormalize(CycleUser, "3", r2.entities) is user  # and the same objects while nothing changes


def test_cycle_memo_an_entity_reaching_into_a_closed_cycle_from_outside_sees_a_change_below_its_root() -> None:
    """User 3 -> todo 1 -> author user 3 (a cycle); user 4, read after user 3, lists todo 1 too: a change to
    user 3's other todo reaches user 4's read (user 4 took todo 1's deps before the cycle was closed)."""
    todos = [{"id": 1, "author": 3}, {"id": 2, "title": "old", "author": 3}]
    r = normalize([CycleUser], [{"id": 3, "todos": todos}, {"id": 4, "todos": [{"id": 1}]}])
    memo = MemoCache()
    assert present(memo.denormalize([CycleUser], r.result, r.entities))[1].todos[0].author.todos[1].title == "old"
    r2 = normalize(CycleTodo, {"id": 2, "title": "new"}, state=r)
    users = present(memo.denormalize([CycleUser], r.result, r2.entities))
    assert users[1].todos[0].author.todos[1].title == "new"
    assert users[1].todos[0] is users[0].todos[0]


def test_cycle_memo_an_inner_cycle_leaves_the_deps_of_the_entity_it_came_back_to_whole() -> None:
    """Todo 1 -> author user 3 -> todos: todo 2 (back to user 3) and todo 1 (back to todo 1), then todo 1's
    tag: closing user 3's cycle must not give todo 1 user 3's smaller deps, so a new tag name is seen."""
    data = {"id": 1, "tag": {"id": 7, "name": "old"}, "author": {"id": 3, "todos": [{"id": 2, "author": 3}, {"id": 1}]}}
    r = normalize(CycleTodo, data)
    memo = MemoCache()
    assert present(present(memo.denormalize(CycleTodo, "1", r.entities)).tag).name == "old"
    r2 = normalize(CycleTag, {"id": 7, "name": "new"}, state=r)
    todo = present(memo.denormalize(CycleTodo, "1", r2.entities))
    assert present(todo.tag).name == "new" and present(todo.author).todos[1] is todo


class LTodo(Entity):
    id: int = 0
    userId: int = 0
    author: Any = None
    tag: CycleTag | None = None
    key = "LTodo"


class LUser(Entity):
    id: int = 0
    todos: list[Any] = []
    key = "LUser"
    schema = {"todos": Collection([LTodo], nest_key=lambda parent, key: {"userId": parent["id"]})}


LTodo.schema = {"author": LUser, "tag": CycleTag}


def test_cycle_memo_through_a_nested_collection_sees_a_change_below_its_root() -> None:
    """Todo 1 -> author -> the user's todos (a stored list) -> Todo 1: the list's cached read renews too."""
    data = {"id": 1, "userId": 3, "tag": {"id": 7, "name": "old"}, "author": {"id": 3, "todos": [{"id": 1}]}}
    r = normalize(LTodo, data)
    memo = MemoCache()
    assert present(memo.denormalize(LTodo, "1", r.entities)).author.todos[0].tag.name == "old"
    r2 = normalize(CycleTag, {"id": 7, "name": "new"}, state=r)
    user = present(memo.denormalize(LUser, "3", r2.entities))
    assert user.todos[0].tag.name == "new" and user.todos[0].author is user


# ----- deep data: no recursion limit ---------------------------------------------------------
class Link(Entity):
    id: int = 0
    name: str = ""
    next: Any = None
    items: list[Any] = []


Link.schema = {"next": Link, "items": [Link]}


def _chain(length: int) -> dict[str, Any]:
    data: dict[str, Any] = {"id": length}
    for i in range(length - 1, 0, -1):
        data = {"id": i, "next": data} if i % 2 else {"id": i, "items": [data]}
    return data


def test_chain_of_10000_nested_entities_normalizes_and_denormalizes() -> None:
    """Deep data never hits Python's recursion limit (it used to fail near 240 levels)."""
    r = normalize(Link, _chain(10_000))
    assert len(r.entities["Link"]) == 10_000
    assert r.entities["Link"]["1"]["next"] == "2" and r.entities["Link"]["2"]["items"] == ["3"]
    reads: list[Callable[[], Any]] = [
        lambda: denormalize(Link, "1", r.entities),
        lambda: MemoCache().denormalize(Link, "1", r.entities),
    ]
    for read in reads:
        node, seen = read(), 1
        while True:
            following = node.next if node.next is not None else (node.items[0] if node.items else None)
            if following is None:
                break
            assert following.id == node.id + 1
            node, seen = following, seen + 1
        assert seen == 10_000


def test_deep_memo_read_sees_a_change_far_down_the_chain() -> None:
    r = normalize(Link, _chain(3_000))
    memo = MemoCache()
    first = memo.denormalize(Link, "1", r.entities)
    assert memo.denormalize(Link, "1", r.entities) is first
    r2 = normalize(Link, {"id": 2_999, "name": "changed"}, state=r)
    second = memo.denormalize(Link, "1", r2.entities)
    assert second is not first
    node = present(second)
    while node.id != 2_999:
        node = node.next if node.next is not None else node.items[0]
    assert node.name == "changed"


@pytest.mark.parametrize("deep", [MAX_DEPTH - 1, MAX_DEPTH + 1], ids=["built-deferring", "deferred"])
def test_deep_memo_an_entity_reading_deep_data_of_the_same_read_sees_a_change_below_it(deep: int) -> None:
    """Link 100 lists link `deep` of a long chain, read earlier in the same read: one whose build deferred its
    descendants (deep data) or the deferred one itself. Its deps there are incomplete, so a change far down
    the chain must renew link 100 too."""
    r = normalize(Link, {**_chain(MAX_DEPTH + 16), "items": [{"id": 100, "items": [{"id": deep}]}]})
    memo = MemoCache()
    assert present(memo.denormalize(Link, "1", r.entities)).items[0].items[0].id == deep
    r2 = normalize(Link, {"id": MAX_DEPTH + 16, "name": "changed"}, state=r)
    node = present(memo.denormalize(Link, "100", r2.entities)).items[0]
    while node.next is not None or node.items:
        node = node.next if node.next is not None else node.items[0]
    assert node.name == "changed"


class ShelvedLink(Entity):
    id: int = 0
    name: str = ""
    next: Any = None
    shelf: Any = None
    key = "ShelvedLink"


class Shelf(Entity):
    id: int = 0
    links: list[Any] = []
    key = "Shelf"
    schema = {"links": Collection([ShelvedLink], nest_key=lambda parent, key: {"shelf": parent["id"]})}


ShelvedLink.schema = {"next": ShelvedLink, "shelf": Shelf}


@pytest.mark.parametrize("deep", [MAX_DEPTH - 1, MAX_DEPTH + 1], ids=["built-deferring", "deferred"])
def test_deep_memo_a_stored_list_holding_deep_data_of_the_same_read_sees_a_change_below_it(deep: int) -> None:
    """Link 1 of a long chain is on shelf 9, whose stored list holds link `deep` (read earlier in the same read,
    its deps incomplete): the list's cached read is renewed by a change far down the chain, and read again."""
    data: dict[str, Any] = {"id": MAX_DEPTH + 16, "name": "old"}
    for i in range(MAX_DEPTH + 15, 0, -1):
        data = {"id": i, "next": data}
    r = normalize(ShelvedLink, {**data, "shelf": {"id": 9, "links": [{"id": deep}]}})
    memo = MemoCache()
    assert present(memo.denormalize(ShelvedLink, "1", r.entities)).shelf.links[0].id == deep
    r2 = normalize(ShelvedLink, {"id": MAX_DEPTH + 16, "name": "new"}, state=r)
    for read in (
        present(memo.denormalize(Shelf, "9", r2.entities)),
        present(memo.denormalize(ShelvedLink, "1", r2.entities)).shelf,
    ):
        node = read.links[0]
        while node.next is not None:
            node = node.next
        assert node.name == "new"


def test_deep_ring_of_stored_entities_closes_on_the_same_instance() -> None:
    """A cycle longer than the depth guard still denormalizes to a cyclic graph of shared instances."""
    ring = 500
    r = normalize([Link], [{"id": i, "next": (i % ring) + 1} for i in range(1, ring + 1)])
    first = MemoCache().denormalize(Link, "1", r.entities)
    node = present(first)
    for _ in range(ring):
        node = present(node.next)
    assert node is first


def test_deep_deleted_entity_reads_none_in_its_parent() -> None:
    r = normalize(Link, _chain(400))
    r = normalize(Invalidate(Link), {"id": 399}, state=r)
    node = present(denormalize(Link, "1", r.entities))
    for _ in range(397):
        node = node.next if node.next is not None else node.items[0]
    assert node.id == 398 and node.next is None and node.items == []
