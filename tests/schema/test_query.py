"""Query and All, and MemoCache.query on Entity/Collection/dict schemas."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from restlayer.errors import DefinitionError, SchemaError
from restlayer.schema import (
    INVALID,
    All,
    Collection,
    Entity,
    Invalidate,
    MemoCache,
    Query,
    Union,
    Values,
    denormalize,
    normalize,
)
from tests._present import present

from ._models import Group, Todo, User, plain


def users_store() -> Any:
    return normalize([User], [{"id": 1, "name": "b"}, {"id": 2, "name": "a"}])


def test_query_all_with_process() -> None:
    """Check: Query(All(User), lambda users: sorted(u.name for u in users)) -> ["a", "b"]."""
    q = Query(All(User), lambda users: sorted(u.name for u in users))
    assert MemoCache().query(q, [], users_store()) == ["a", "b"]


def test_query_process_results_are_read_only_like_every_read() -> None:
    """A list or dict that `process` builds is shared by every memoized reader: it must not be changeable."""
    memo, state = MemoCache(), users_store()
    names = Query(All(User), lambda users: sorted(u.name for u in users))
    counted = Query(All(User), lambda users: {"n": len(users), "ids": [u.id for u in users]})
    named = Query(All(User), lambda users: users[0].name)
    result: Any = memo.query(names, [], state)
    with pytest.raises(TypeError, match="read-only"):
        result.append("x")
    counts: Any = memo.query(counted, [], state)
    with pytest.raises(TypeError, match="read-only"):
        counts["n"] = 99
    with pytest.raises(TypeError, match="read-only"):
        counts["ids"].append(3)
    assert memo.query(names, [], state) == ["a", "b"] and memo.query(counted, [], state) == {"n": 2, "ids": [1, 2]}
    assert memo.query(named, [], state) == "b"  # any other value as returned


def test_all_without_table_is_invalid() -> None:
    """Check: All(Todo) with no Todo table -> None (invalid)."""
    memo = MemoCache()
    assert memo.query(All(Todo), [], users_store()) is None
    detail = memo.query_detail(All(Todo), [], users_store())
    assert detail.invalid is True
    assert detail.data is None


def test_all_insertion_order_skips_deleted() -> None:
    names = list("qwertyuiopasdfghjklz")
    r = normalize([User], [{"id": n} for n in names])
    r = normalize(Invalidate(User), {"id": "q"}, state=r)
    out = present(MemoCache().query(All(User), [], r))
    assert [u.id for u in out] == names[1:]  # type: ignore[comparison-overlap]  # pks given as text


def test_all_skips_deleted() -> None:
    r = normalize([User], [{"id": 3, "name": "c"}, {"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
    r = normalize(Invalidate(User), {"id": 1}, state=r)
    out = present(MemoCache().query(All(User), [], r))
    assert sorted(u.id for u in out) == [2, 3]


def test_all_empty_table_is_empty_list() -> None:
    r = normalize(Invalidate(User), {"id": 1})
    detail = MemoCache().query_detail(All(User), [], r)
    assert detail.data == []
    assert detail.invalid is False


def test_all_union() -> None:
    r = normalize({"u": [User], "g": [Group]}, {"u": [{"id": 1}], "g": [{"id": 2}]})
    out: list[Entity] | None = MemoCache().query(All({"users": User, "groups": Group}, "type"), [], r)
    assert out == [User(id=1), Group(id=2)]


def test_query_process_receives_args() -> None:
    q = Query(All(User), lambda users, *args: [u.name for u in users if u.name == args[0]["name"]])
    assert MemoCache().query(q, [{"name": "a"}], users_store()) == ["a"]


def test_query_process_skipped_when_nothing_found() -> None:
    calls: list[Any] = []

    def record(value: Any, *args: Any) -> Any:
        calls.append(value)
        return value

    q = Query(All(Todo), record)
    assert MemoCache().query(q, [], users_store()) is None
    assert calls == []
    q2 = Query(Todo, record)
    detail = MemoCache().query_detail(q2, [{"id": 5}], users_store())
    assert detail.data is None
    assert calls == []


def test_entity_as_query() -> None:
    r = normalize([Todo], [{"id": 1}, {"id": 2, "title": "two"}])
    memo = MemoCache()
    assert memo.query(Todo, [{"id": 2}], r) == Todo(id=2, title="two")
    assert memo.query(Todo, ["2"], r) == Todo(id=2, title="two")
    assert memo.query(Todo, [2], r) == Todo(id=2, title="two")
    assert memo.query(Todo, [{"id": 9}], r) is None
    assert memo.query(Todo, [], r) is None
    missing = memo.query_detail(Todo, [{"id": 9}], r)
    assert missing.data is None
    assert missing.found is False
    r2 = normalize(Invalidate(Todo), {"id": 2}, state=r)
    deleted = memo.query_detail(Todo, [{"id": 2}], r2)
    assert deleted.data is None
    assert deleted.invalid is True
    assert deleted.found is True


def test_collection_as_query() -> None:
    coll = Collection([Todo])
    r = normalize(coll, [{"id": 1}, {"id": 2}], args=[{"userId": 1}])
    memo = MemoCache()
    assert memo.query(coll, [{"userId": 1}], r) == [Todo(id=1), Todo(id=2)]
    assert memo.query(coll, [{"userId": 2}], r) is None
    assert memo.query_detail(coll, [{"userId": 2}], r).found is False


def test_dict_schema_query_each_member() -> None:
    r = normalize({"t": Todo, "u": User}, {"t": {"id": 1}, "u": {"id": 1}})
    memo = MemoCache()
    assert memo.query({"t": Todo, "u": User}, [{"id": 1}], r) == {"t": Todo(id=1), "u": User(id=1)}
    # nothing found: the dict with each member None, and the read counts as not found (a fetch is due)
    assert memo.query({"t": Todo, "u": User}, [{"id": 2}], r) == {"t": None, "u": None}
    assert memo.query_detail({"t": Todo, "u": User}, [{"id": 2}], r).found is False


def test_dict_schema_query_missing_member_is_none_and_literals_are_filled() -> None:
    """A missing member reads None, literal members as written in the schema; found only when all are."""
    r = normalize(Todo, {"id": 1})
    memo = MemoCache()
    schema = {"t": Todo, "u": User, "page": 1, "kind": "todos"}
    detail = memo.query_detail(schema, [{"id": 1}], r)
    assert detail.data == {"t": Todo(id=1), "u": None, "page": 1, "kind": "todos"}
    assert detail.found is False and detail.invalid is False
    r = normalize(User, {"id": 1}, state=r)
    detail = memo.query_detail(schema, [{"id": 1}], r)
    assert detail.data == {"t": Todo(id=1), "u": User(id=1), "page": 1, "kind": "todos"}
    assert detail.found is True


def test_all_inside_a_dict_schema_before_the_type_has_data() -> None:
    """`{"results": All(Todo)}` with no Todo table: the member reads None (no crash)."""
    memo = MemoCache()
    empty = normalize(User, {"id": 1})
    detail = memo.query_detail({"results": All(Todo)}, [], empty)
    assert detail.data == {"results": None} and detail.found is False
    r = normalize([Todo], [{"id": 2}, {"id": 1}], state=empty)
    assert memo.query({"results": All(Todo)}, [], r) == {"results": [Todo(id=2), Todo(id=1)]}


def test_all_normalizes_a_dict_by_its_values() -> None:
    r = normalize(All(User), {"a": {"id": 1, "name": "a"}, "b": {"id": 2, "name": "b"}})
    assert r.result == ["1", "2"]
    assert plain(r.entities)["User"] == {"1": {"id": 1, "name": "a"}, "2": {"id": 2, "name": "b"}}


def test_all_refuses_a_reply_that_is_no_list_with_a_schema_error() -> None:
    """A number or a string given to All is a SchemaError naming it, not a bare TypeError (or one entity per char)."""
    for bad in (7, "abc"):
        with pytest.raises(SchemaError, match=f"Expected a list, found {type(bad).__name__}"):
            normalize({"users": All(User)}, {"users": bad})


def test_all_of_a_union_reads_every_member_table_as_instances() -> None:
    """`All(Union(...))` reads like `All({...}, attr)`: instances of each member, never raw pks or None."""
    members = Union({"users": User, "groups": Group}, "type")
    r = normalize([members], [{"id": 1, "type": "users", "name": "a"}, {"id": 2, "type": "groups"}])
    everyone = All(members)
    read = present(MemoCache().query(everyone, [], r))
    assert [(type(x), x.id) for x in read] == [(User, 1), (Group, 2)]  # type: ignore[attr-defined]  # read as Entity
    assert MemoCache().query(Query(everyone, lambda found: [x.id for x in found]), [], r) == [1, 2]  # type: ignore[attr-defined]
    stored = normalize(everyone, [{"id": 3, "type": "users"}], state=r)
    read = present(denormalize(everyone, stored.result, stored.entities))
    assert [(type(x), x.id) for x in read] == [(User, 3)]  # type: ignore[attr-defined]  # read as Entity
    with pytest.raises(DefinitionError, match="schema_attribute"):
        All(members, "type")  # type: ignore[call-overload]  # the Union already has its attribute


@pytest.mark.parametrize("schema", [[Todo], Values(Todo), Collection([Todo]), Query(All(Todo)), None])
def test_all_of_what_names_no_table_is_refused_where_defined(schema: Any) -> None:
    with pytest.raises(DefinitionError, match="All takes an Entity class, a Union"):
        All(schema)


def test_polymorphic_all_with_no_tables_reads_as_missing() -> None:
    detail = MemoCache().query_detail(All({"u": User, "g": Group}, "type"), [], normalize(Todo, {"id": 1}))
    assert detail.data is None and detail.invalid is True


def test_all_order_is_insertion_order_across_writes_deletes_and_processes() -> None:
    """Order of first storing, kept by later updates; the same whatever PYTHONHASHSEED is."""
    names = [f"user-{i}" for i in range(40)][::-1]
    r = normalize([User], [{"id": n} for n in names[:20]])
    r = normalize([User], [{"id": n, "name": "again"} for n in reversed(names[:5])], state=r)  # updates
    r = normalize([User], [{"id": n} for n in names[20:]], state=r)
    assert [u.id for u in present(MemoCache().query(All(User), [], r))] == names  # type: ignore[comparison-overlap]  # pks given as text
    script = (
        "from restlayer.schema import All, Entity, MemoCache, normalize\n"
        "class U(Entity):\n    id: str = ''\n"
        f"names = {names!r}\n"
        "r = normalize([U], [{'id': n} for n in names[:20]])\n"
        "r = normalize([U], [{'id': n} for n in names[20:]], state=r)\n"
        "print(','.join(u.id for u in MemoCache().query(All(U), [], r)))\n"
    )
    for seed in ("1", "2", "3"):
        out = subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert out.stdout.strip() == ",".join(names)


def test_all_order_of_tables_given_as_plain_dicts_is_their_order() -> None:
    state = {"entities": {"User": {"z": {"id": "z"}, "a": {"id": "a"}, "m": {"id": "m"}}}}
    assert [u.id for u in present(MemoCache().query(All(User), [], state))] == ["z", "a", "m"]  # type: ignore[comparison-overlap]  # pks given as text


def test_plain_list_schema_cannot_be_queried() -> None:
    r = normalize([Todo], [{"id": 1}])
    assert MemoCache().query([Todo], [{"id": 1}], r) is None


def test_query_state_forms() -> None:
    r = users_store()

    class State:
        entities = r.entities
        indexes = r.indexes

    memo = MemoCache()
    q = All(User)
    assert len(present(memo.query(q, [], r))) == 2
    assert len(present(memo.query(q, [], State()))) == 2
    assert len(present(memo.query(q, [], {"entities": r.entities, "indexes": r.indexes}))) == 2


def test_query_cached_per_schema_object() -> None:
    """Referential stability: the same All(Todo) object over an unchanged store gives the same list."""
    r = users_store()
    memo = MemoCache()
    q = All(User)
    first = memo.query(q, [], r)
    assert memo.query(q, [], r) is first
    assert memo.query(All(User), [], r) is not first
    assert memo.query(All(User), [], r) == first


def test_query_result_changes_with_store() -> None:
    r = users_store()
    memo = MemoCache()
    q = All(User)
    first = present(memo.query(q, [], r))
    r2 = normalize(User, {"id": 3, "name": "c"}, state=r)
    second = present(memo.query(q, [], r2))
    assert second is not first
    assert len(second) == 3
    old = {u.id: u for u in first}
    for user in second:
        if user.id in old:
            assert user is old[user.id]


def test_all_denormalize_of_given_pks() -> None:
    entities = {"User": {"1": {"id": 1}, "2": INVALID}}
    assert denormalize(All(User), ["1", "2", "3"], entities) == [User(id=1)]


def test_entity_table_order_is_per_version_even_when_versions_branch() -> None:
    """Two writes on one snapshot each see their own order; a deleted then re-added pk counts from its return."""
    from restlayer._pmap import OrderedPMap

    base = OrderedPMap({"a": 1, "b": 2})
    left = base.set("x", 3)
    right = base.update({"y": 4, "a": 5})  # branches from the same snapshot as `left`
    assert base.in_order() == ["a", "b"]
    assert left.in_order() == ["a", "b", "x"]
    assert right.in_order() == ["a", "b", "y"]
    assert left.delete("a").set("a", 9).in_order() == ["b", "x", "a"]
    assert left.set("b", 7).in_order() == ["a", "b", "x"]  # updating a key keeps its place


def test_an_adopted_table_makes_its_order_log_only_when_derived_from() -> None:
    """A table built in one normalize keeps no key log of its own (its dict has the order) until a write."""
    from restlayer._pmap import OrderedPMap

    base = OrderedPMap.adopt({"b": 1, "a": 2})
    assert isinstance(base, OrderedPMap)
    assert base._log is None and base.in_order() == ["b", "a"] and base._log is None
    left = base.set("x", 3)
    right = base.update({"y": 4, "b": 5})  # branches from the same snapshot as `left`
    same = base.update({"a": 6})  # no new key
    assert base._log is not None and base._log[:2] == ["b", "a"]  # made once, shared by the versions
    assert left.in_order() == ["b", "a", "x"] and right.in_order() == ["b", "a", "y"]
    assert same.in_order() == ["b", "a"] and base.in_order() == ["b", "a"]
    assert left.delete("b").set("b", 9).in_order() == ["a", "x", "b"]


def test_all_order_survives_garbage_collected_rows() -> None:
    from restlayer._pmap import OrderedPMap

    r = normalize([User], [{"id": 3}, {"id": 1}, {"id": 2}])
    table = r.entities["User"]
    assert isinstance(table, OrderedPMap)
    entities = r.entities.set("User", table.delete("1"))  # what a garbage-collection sweep does
    assert [u.id for u in present(MemoCache().query(All(User), [], {"entities": entities}))] == [3, 2]
