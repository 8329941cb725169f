"""Collection: keys, push/unshift/assign/remove/move, add_with, move_with, pagination."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, cast

import pytest

from restlayer.errors import DefinitionError, ParamError, SchemaError
from restlayer.schema import (
    INVALID,
    Collection,
    Entity,
    Invalidate,
    MemoCache,
    Union,
    Values,
    denormalize,
    find_collection,
    normalize,
    replace_collection,
)
from restlayer.schema._collection import values_merge
from tests._present import present

from ._models import Group, Todo, User, meta

TODOS = Collection([Todo])

K_U1 = '{"userId":"1"}'
K_U2 = '{"userId":"2"}'
K_ALL = "{}"
K_ORDER = '{"orderBy":"title","userId":"1"}'
K_DONE = '{"completed":"true","userId":"1"}'


def prepared(coll: Collection = TODOS) -> Any:
    """Lists for {userId 1}, {userId 2}, {}, {userId 1, orderBy title}, {userId 1, completed True}."""
    t1 = {"id": 1, "userId": 1, "title": "one"}
    t2 = {"id": 2, "userId": 2, "title": "two"}
    state: Any = None
    for args, items in [
        ({"userId": 1}, [t1]),
        ({"userId": 2}, [t2]),
        ({}, [t1, t2]),
        ({"userId": 1, "orderBy": "title"}, [t1]),
        ({"userId": 1, "completed": True}, [t1]),
    ]:
        state = normalize(coll, items, args=[args], state=state, meta=meta(1000))
    return state


def lists(state: Any, key: str = "[Todo]") -> dict[str, Any]:
    return dict(state.entities[key].items())


# ----- 5.1 keys ------------------------------------------------------------------------------
def test_collection_keys() -> None:
    assert Collection([Todo]).key == "[Todo]"
    assert Collection(Values(Todo)).key == "{Todo}"
    assert Collection([Union({"users": User, "groups": Group}, "type")]).key == "[User;Group]"


def test_collection_requires_list_or_values() -> None:
    with pytest.raises(TypeError):
        Collection(Todo)  # type: ignore[call-overload]


def test_collection_pk_from_args() -> None:
    """Check: args [{"userId": 1, "completed": True, "b": None}] and args []."""
    r = normalize(TODOS, [{"id": 1}], args=[{"userId": 1, "completed": True, "b": None}])
    assert r.result == '{"completed":"true","userId":"1"}'
    assert r.entities["[Todo]"][r.result] == ["1"]
    assert normalize(TODOS, [{"id": 1}], args=[]).result == "{}"


def test_collection_pk_text_rules() -> None:
    r = normalize(TODOS, [], args=[{"z": 1.5, "a": "x", "m": ["l", 1], "é": "ü", "d": {"k": "v"}}, {"ignored": 1}])
    assert r.result == '{"a":"x","d":{"k":"v"},"m":["l",1],"z":"1.5","é":"ü"}'


def test_collection_stored_with_meta() -> None:
    m = meta(1234)
    r = normalize(TODOS, [{"id": 1}, {"id": 2}], args=[{"userId": 1}], meta=m)
    assert r.entities["[Todo]"] == {K_U1: ["1", "2"]}
    assert r.entities_meta["[Todo]"][K_U1] == m


def test_refetch_replaces_list_ordered_by_fetched_at() -> None:
    state = normalize(TODOS, [{"id": 1}, {"id": 2}], args=[{"userId": 1}], meta=meta(1000))
    newer = normalize(TODOS, [{"id": 3}], args=[{"userId": 1}], state=state, meta=meta(2000))
    assert newer.entities["[Todo]"][K_U1] == ["3"]
    assert newer.entities_meta["[Todo]"][K_U1]["fetched_at"] == 2000
    older = normalize(TODOS, [{"id": 4}], args=[{"userId": 1}], state=state, meta=meta(500))
    assert older.entities["[Todo]"][K_U1] == ["1", "2"]
    assert older.entities_meta["[Todo]"][K_U1]["fetched_at"] == 1000
    assert older.entities["Todo"]["4"] == {"id": 4}
    # the original state still has the old list
    assert state.entities["[Todo]"][K_U1] == ["1", "2"]


def test_values_collection_refetch() -> None:
    coll = Collection(Values(Todo))
    state = normalize(coll, {"a": {"id": 1}}, args=[{"userId": 1}])
    r = normalize(coll, {"b": {"id": 2}}, args=[{"userId": 1}], state=state)
    assert r.entities["{Todo}"][K_U1] == {"b": "2"}


def test_deleted_collection_replaced() -> None:
    state = normalize(Invalidate(Todo), {"id": 1})
    state = normalize(TODOS, [{"id": 1}], args=[{"userId": 1}], state=state)
    r = normalize(TODOS, [{"id": 2}], args=[{"userId": 1}], state=state)
    assert r.entities["[Todo]"][K_U1] == ["2"]


def test_collection_denormalize() -> None:
    r = normalize(TODOS, [{"id": 1, "title": "a"}, {"id": 2}], args=[{"userId": 1}])
    assert denormalize(TODOS, r.result, r.entities) == [Todo(id=1, title="a"), Todo(id=2)]
    assert denormalize(TODOS, '{"userId":"9"}', r.entities) is None


def test_args_key() -> None:
    """Check: args_key=lambda p: {"userId": p["userId"]} with args [{"userId": 5, "page": 2}]."""
    coll = Collection([Todo], args_key=lambda p: {"userId": p["userId"]})
    r = normalize(coll, [{"id": 1}], args=[{"userId": 5, "page": 2}])
    assert r.result == '{"userId":"5"}'
    assert r.entities["[Todo]"] == {'{"userId":"5"}': ["1"]}


def test_nest_key() -> None:
    """Check: nest_key under user "7" stores the list and the user's member holds its pk."""

    class Author(Entity):
        id: int = 0
        todos: list[Todo] = []
        schema = {"todos": Collection([Todo], nest_key=lambda parent, key: {"userId": parent["id"]})}

    r = normalize(Author, {"id": 7, "todos": [{"id": 1}, {"id": 2}]})
    assert r.entities["[Todo]"]['{"userId":"7"}'] == ["1", "2"]
    assert r.entities["Author"]["7"]["todos"] == '{"userId":"7"}'
    author = present(denormalize(Author, "7", r.entities))
    assert author.todos == [Todo(id=1), Todo(id=2)]


# ----- 5.2 adding ---------------------------------------------------------------------------
def test_push_filter() -> None:
    """Check: push {"id": 3, "userId": 1} with args ({"userId": 1}, {"title": "x"})."""
    state = prepared()
    r = normalize(TODOS.push, {"id": 3, "userId": 1}, args=[{"userId": 1}, {"title": "x"}], state=state)
    assert r.result == ["3"]  # the stored result of a create is the list of new pks, even for one object
    assert present(denormalize(TODOS.push, r.result, r.entities, args=[{"userId": 1}, {"title": "x"}])).id == 3
    assert lists(r) == {
        K_U1: ["1", "3"],
        K_U2: ["2"],
        K_ALL: ["1", "2", "3"],
        K_ORDER: ["1", "3"],
        K_DONE: ["1"],
    }
    assert r.entities["Todo"]["3"] == {"id": 3, "userId": 1}


def test_push_filter_from_second_arg() -> None:
    """Check: args ({}, {"userId": 2}) appends to {"userId":"2"} and {}."""
    state = prepared()
    r = normalize(TODOS.push, {"id": 3, "userId": 2}, args=[{}, {"userId": 2}], state=state)
    assert lists(r) == {K_U1: ["1"], K_U2: ["2", "3"], K_ALL: ["1", "2", "3"], K_ORDER: ["1"], K_DONE: ["1"]}


def test_unshift_puts_first() -> None:
    """Check: unshift puts the pk first."""
    state = prepared()
    r = normalize(TODOS.unshift, {"id": 3, "userId": 1}, args=[{"userId": 1}], state=state)
    assert r.entities["[Todo]"][K_U1] == ["3", "1"]
    assert r.entities["[Todo]"][K_ALL] == ["3", "1", "2"]


def test_push_existing_pk_again_duplicates() -> None:
    """Check: pushing an existing pk "1" again gives [..., "1", ..., "1"]."""
    state = prepared()
    r = normalize(TODOS.push, {"id": 1, "userId": 1}, args=[{}], state=state)
    assert r.entities["[Todo]"][K_ALL] == ["1", "2", "1"]


def test_push_list_of_items_and_no_collection_created() -> None:
    r = normalize(TODOS.push, [{"id": 1}, {"id": 2}], args=[{"userId": 1}])
    assert r.result == ["1", "2"]
    assert "[Todo]" not in r.entities
    assert set(r.entities["Todo"]) == {"1", "2"}


def test_push_without_pk_keeps_placeholder() -> None:
    state = prepared()
    r = normalize(TODOS.push, {"title": "draft"}, args=[{}], state=state)
    [pk] = r.result
    assert pk.startswith("MISS-")
    assert r.entities["Todo"][pk] == {"title": "draft"}
    assert r.entities["[Todo]"][K_ALL] == ["1", "2", pk]


def test_plain_collection_without_pk_raises() -> None:
    with pytest.raises(SchemaError) as info:
        normalize(TODOS, [{"title": "x"}], args=[{}])
    assert info.value.status == 400


def test_assign_values_collection() -> None:
    coll = Collection(Values(Todo))
    state = normalize(coll, {"a": {"id": 1}}, args=[{"userId": 1}])
    state = normalize(coll, {"z": {"id": 9}}, args=[{"userId": 2}], state=state)
    r = normalize(coll.assign, {"b": {"id": 2}}, args=[{"userId": 1}], state=state)
    assert r.result == {"b": "2"}
    assert r.entities["{Todo}"] == {K_U1: {"a": "1", "b": "2"}, K_U2: {"z": "9"}}


def test_assign_of_a_list_collection_is_a_param_error_naming_push() -> None:
    """`assign` merges `{name: item}` into a dict; on a list it would fail deep in the merge, after storing."""
    state = normalize(TODOS, [{"id": 1}], args=[{}])
    with pytest.raises(ParamError, match=r"Collection\(\[Todo\]\): assign .*Values.*use push or unshift"):
        normalize(TODOS.assign, {"id": 2, "title": "x"}, args=[{}], state=state)
    assert lists(state, "[Todo]") == {K_ALL: ["1"]}


@pytest.mark.parametrize("derived", ["assign", "remove", "add_with"])
def test_values_assign_or_remove_of_a_single_record_is_a_schema_error(derived: str, each_engine: str) -> None:
    """A record sent where `{name: record}` is expected: its fields were stored as refs ("title": "x" -> Todo "x")."""
    coll = Collection(Values(Todo))
    state = normalize(coll, {"a": {"id": 1}, "x": {"id": 7}}, args=[{}])
    schema = coll.add_with(values_merge) if derived == "add_with" else getattr(coll, derived)
    for record in ({"id": 2, "title": "x"}, {"id": 7}):
        with pytest.raises(SchemaError, match=r"expects \{name: item\}, found a value of str|int") as info:
            normalize(schema, record, args=[{}], state=state)
        assert info.value.status == 400
        assert info.value.schema == "Collection({Todo})"
    assert lists(state, "{Todo}") == {K_ALL: {"a": "1", "x": "7"}}
    kept = normalize(coll.assign, {"b": {"id": 2}, "c": None}, args=[{}], state=state)
    assert lists(kept, "{Todo}") == {K_ALL: {"a": "1", "x": "7", "b": "2"}}


def test_push_and_unshift_to_a_values_collection_key_each_item_by_its_pk() -> None:
    """A Values collection stays a dict: push adds the created item under its pk at the end, unshift first."""
    coll = Collection(Values(Todo))
    state = normalize(coll, {"a": {"id": 1}}, args=[{"userId": 1}])
    pushed = normalize(coll.push, {"id": 2, "title": "x"}, args=[{"userId": 1}, {"title": "x"}], state=state)
    assert pushed.result == {"2": "2"}
    assert pushed.entities["{Todo}"][K_U1] == {"a": "1", "2": "2"}
    assert denormalize(coll.push, pushed.result, pushed.entities, args=[{"userId": 1}]) == {"2": Todo(id=2, title="x")}
    assert MemoCache().query(coll, [{"userId": 1}], pushed) == {"a": Todo(id=1), "2": Todo(id=2, title="x")}
    first = normalize(coll.unshift, [{"id": 3}, {"id": 4}], args=[{"userId": 1}], state=pushed)
    assert list(first.entities["{Todo}"][K_U1].items()) == [("3", "3"), ("4", "4"), ("a", "1"), ("2", "2")]
    with pytest.raises(SchemaError, match="Missing usable primary key"):
        normalize(coll.push, {"title": "no id"}, args=[{"userId": 1}], state=state, placeholders=False)


def test_add_with_custom_merge_and_filter() -> None:
    state = prepared()

    def merge(existing: list[str], incoming: list[str]) -> list[str]:
        return sorted({*existing, *incoming}, reverse=True)

    def only_all(*args: Any) -> Callable[[Mapping[str, Any]], bool]:
        return lambda key: key == {}

    r = normalize(TODOS.add_with(merge, only_all), {"id": 3, "userId": 1}, args=[{"userId": 1}], state=state)
    assert lists(r) == {K_U1: ["1"], K_U2: ["2"], K_ALL: ["3", "2", "1"], K_ORDER: ["1"], K_DONE: ["1"]}
    r2 = normalize(TODOS.add_with(merge), {"id": 3, "userId": 1}, args=[{"userId": 1}], state=state)
    assert r2.entities["[Todo]"][K_U1] == ["3", "1"]
    assert r2.entities["[Todo]"][K_U2] == ["2"]


def test_collection_level_create_collection_filter() -> None:
    coll = Collection([Todo], create_collection_filter=lambda *args: lambda key: "userId" not in key)
    state = prepared(coll)
    r = normalize(coll.push, {"id": 3}, args=[{"userId": 1}], state=state)
    assert lists(r)[K_ALL] == ["1", "2", "3"]
    assert lists(r)[K_U1] == ["1"]


@pytest.mark.parametrize(
    "option",
    [["sort"], ("sort",), "sort", re.compile("^so"), lambda name: name == "sort"],
    ids=["list", "tuple", "str", "regex", "callable"],
)
def test_non_filter_argument_keys(option: Any) -> None:
    """Check: non_filter_argument_keys=["sort"] replaces the default orderBy rule."""
    coll = Collection([Todo], non_filter_argument_keys=option)
    state = normalize(coll, [], args=[{"userId": 1, "sort": "a"}])
    state = normalize(coll, [], args=[{"userId": 1, "orderBy": "a"}], state=state)
    r = normalize(coll.push, {"id": 3}, args=[{"userId": 1}], state=state)
    assert r.entities["[Todo]"]['{"sort":"a","userId":"1"}'] == ["3"]
    assert r.entities["[Todo]"]['{"orderBy":"a","userId":"1"}'] == []


@pytest.mark.parametrize("option", [5, True, [b"sort"], ["sort", 5], {"sort": 1}], ids=str)
def test_non_filter_argument_keys_of_another_type_is_a_definition_error(option: Any) -> None:
    """Not names, a regex or a function: a bare TypeError (5), or names matching nothing (b"sort")."""
    with pytest.raises(DefinitionError, match="non_filter_argument_keys must be"):
        Collection([Todo], non_filter_argument_keys=option)


def test_non_filter_argument_keys_names_may_come_as_a_set_or_generator() -> None:
    for option in ({"sort"}, (n for n in ["sort"])):
        coll = Collection([Todo], non_filter_argument_keys=option)  # type: ignore[call-overload]
        assert coll.non_filter_argument_keys("sort") and not coll.non_filter_argument_keys("orderBy")


def test_default_filter_missing_member_never_matches() -> None:
    state = prepared()
    r = normalize(TODOS.push, {"id": 3}, args=[{"userId": None}], state=state)
    assert lists(r)[K_U1] == ["1"]
    assert lists(r)[K_ALL] == ["1", "2", "3"]


# ----- 5.3 remove, move ---------------------------------------------------------------------
def test_remove() -> None:
    """Check: remove {"id": 1} with args ({"userId": 1},)."""
    state = prepared()
    r = normalize(TODOS.remove, {"id": 1}, args=[{"userId": 1}], state=state)
    assert lists(r) == {K_U1: [], K_U2: ["2"], K_ALL: ["2"], K_ORDER: [], K_DONE: ["1"]}
    # entities are updated from the response
    assert r.entities["Todo"]["1"] == {"id": 1, "userId": 1, "title": "one"}


def test_remove_updates_entity() -> None:
    state = prepared()
    r = normalize(TODOS.remove, {"id": 2, "title": "gone"}, args=[{}], state=state, meta=meta(2000))
    assert r.entities["Todo"]["2"]["title"] == "gone"
    assert lists(r)[K_ALL] == ["1"]


def test_remove_from_values_collection() -> None:
    coll = Collection(Values(Todo))
    state = normalize(coll, {"a": {"id": 1}, "b": {"id": 2}}, args=[{}])
    r = normalize(coll.remove, {"x": {"id": 1}}, args=[{}], state=state)
    assert r.entities["{Todo}"]["{}"] == {"b": "2"}


def test_remove_union_compares_id_and_schema() -> None:
    coll = Collection([Union({"users": User, "groups": Group}, "type")])
    state = normalize(coll, [{"id": 1, "type": "users"}, {"id": 1, "type": "groups"}], args=[{}])
    r = normalize(coll.remove, {"id": 1, "type": "groups"}, args=[{}], state=state)
    assert r.entities["[User;Group]"]["{}"] == [{"id": "1", "schema": "users"}]


def test_move() -> None:
    """Check: move {"id": 2, "userId": 1} with args ({"id": 2}, {"userId": 1}) (stored userId 2)."""
    state = prepared()
    r = normalize(TODOS.move, {"id": 2, "userId": 1}, args=[{"id": 2}, {"userId": 1}], state=state, meta=meta(2000))
    tables = lists(r)
    assert tables[K_U2] == []
    assert tables[K_U1] == ["1", "2"]
    assert tables[K_ALL] == ["1", "2"]
    assert tables[K_DONE] == ["1"]
    assert r.entities["Todo"]["2"]["userId"] == 1


def test_move_with_custom_merge() -> None:
    state = prepared()
    r = normalize(
        TODOS.move_with(lambda existing, incoming: [*incoming, *existing]),
        {"id": 2, "userId": 1},
        args=[{"id": 2}, {"userId": 1}],
        state=state,
    )
    assert lists(r)[K_U1] == ["2", "1"]
    assert lists(r)[K_U2] == []


# ----- 5.4 pagination -----------------------------------------------------------------------
def drop_page(*args: Any) -> list[Any]:
    return [{k: v for k, v in args[0].items() if k != "page"}, *args[1:]]


def test_paginated_appends_unique() -> None:
    """Check: list [1, 2], then page 2 returning [2, 3] -> ["1", "2", "3"]."""
    state = normalize(TODOS, [{"id": 1}, {"id": 2}], args=[{"userId": 1}])
    state = normalize(TODOS, [{"id": 8}], args=[{"userId": 2}], state=state)
    page = TODOS.paginated(drop_page)
    r = normalize(page, [{"id": 2}, {"id": 3}], args=[{"userId": 1, "page": 2}], state=state)
    assert r.entities["[Todo]"][K_U1] == ["1", "2", "3"]
    assert r.entities["[Todo]"][K_U2] == ["8"]
    assert r.result == K_U1  # the page's result is the list itself, as get_list's
    assert denormalize(TODOS, K_U1, r.entities) == [Todo(id=1), Todo(id=2), Todo(id=3)]
    assert denormalize(page, r.result, r.entities) == [Todo(id=1), Todo(id=2), Todo(id=3)]


def test_paginated_values_collection_adds_the_page_entries() -> None:
    """A next page of a Values collection adds its entries to the stored dict instead of replacing it."""
    coll = Collection(Values(Todo))
    state = normalize(coll, {"a": {"id": 1}, "b": {"id": 2}}, args=[{"userId": 1}])
    page = coll.paginated(drop_page)
    second = {"b": {"id": 2, "title": "again"}, "c": {"id": 3}}
    r = normalize(page, second, args=[{"userId": 1, "page": 2}], state=state)
    assert list(r.entities["{Todo}"][K_U1].items()) == [("a", "1"), ("b", "2"), ("c", "3")]
    assert denormalize(coll, K_U1, r.entities) == {"a": Todo(id=1), "b": Todo(id=2, title="again"), "c": Todo(id=3)}


def test_paginated_without_base_list_starts_it() -> None:
    r = normalize(TODOS.paginated(drop_page), [{"id": 3}], args=[{"userId": 1, "page": 2}])
    assert r.entities["[Todo]"] == {K_U1: ["3"]}


def test_create_schema_denormalizes_single_reply_to_one_item() -> None:
    assert denormalize(TODOS.push, {"id": 7}, {}) == Todo(id=7)
    assert denormalize(TODOS.push, [{"id": 7}], {}) == [Todo(id=7)]
    # the stored list of one pk reads as one item when the call sent one object, else as a list
    assert denormalize(TODOS.push, [{"id": 7}], {}, args=[{}, {"title": "x"}]) == Todo(id=7)
    assert denormalize(TODOS.push, [{"id": 7}], {}, args=[{}, [{"title": "x"}]]) == [Todo(id=7)]


def test_create_reply_of_several_items_reads_them_all() -> None:
    """A reply of several items is never cut to its first, whatever the call's last argument is."""
    state = prepared()
    for schema in (TODOS.push, TODOS.unshift, TODOS.remove, TODOS.move):
        for args in ([{"userId": 1}], [{"userId": 1}, {"title": "x"}]):
            r = normalize(schema, [{"id": 7, "userId": 1}, {"id": 8, "userId": 1}], args=args, state=state)
            assert r.result == ["7", "8"]
            assert [t.id for t in cast("list[Todo]", denormalize(schema, r.result, r.entities, args=args))] == [7, 8], (
                schema,
                args,
            )
            assert [
                t.id for t in cast("list[Todo]", MemoCache().denormalize(schema, r.result, r.entities, args=args))
            ] == [7, 8]


# ----- helpers ---------------------------------------------------------------------------------
def test_find_and_replace_collection() -> None:
    schema = {"results": TODOS, "next": None}
    assert find_collection(schema) is TODOS
    assert find_collection([TODOS]) is TODOS
    assert find_collection({"a": [Todo]}) is None
    new = Collection([Todo])
    replaced = replace_collection(schema, new)
    assert replaced == {"results": new, "next": None}
    assert schema["results"] is TODOS


def test_collection_in_object_memo_query() -> None:
    r = normalize({"results": TODOS, "next": None}, {"results": [{"id": 1}], "next": "c"}, args=[{"userId": 1}])
    assert r.result == {"results": K_U1, "next": "c"}
    assert MemoCache().query(TODOS, [{"userId": 1}], r) == [Todo(id=1)]
    assert r.entities["[Todo]"][K_U1] is not INVALID


# ----- subclass overrides and Values moves (issue 9.6, 9.7) ---------------------------------------
class SortDoesNotFilter(Collection):
    """A subclass naming its non-filtering argument by a method, as the original allows."""

    def non_filter_argument_keys(self, name: str) -> bool:
        return name == "sort"


class OnlyUnfilteredLists(Collection):
    """A subclass whose creates reach only the unfiltered list."""

    def create_collection_filter(self, *args: Any) -> Callable[[Mapping[str, Any]], bool]:
        return lambda key: key == {}


def test_subclass_non_filter_argument_keys_method_is_honoured() -> None:
    coll = SortDoesNotFilter([Todo])
    state = normalize(coll, [], args=[{"userId": 1, "sort": "a"}])
    state = normalize(coll, [], args=[{"userId": 1, "orderBy": "a"}], state=state)
    r = normalize(coll.push, {"id": 3}, args=[{"userId": 1}], state=state)
    assert r.entities["[Todo]"]['{"sort":"a","userId":"1"}'] == ["3"]
    assert r.entities["[Todo]"]['{"orderBy":"a","userId":"1"}'] == []


def test_subclass_create_collection_filter_method_is_honoured() -> None:
    coll = OnlyUnfilteredLists([Todo])
    r = normalize(coll.push, {"id": 3, "userId": 1}, args=[{"userId": 1}], state=prepared(coll))
    assert lists(r)[K_ALL] == ["1", "2", "3"]
    assert lists(r)[K_U1] == ["1"]


def test_options_still_win_over_subclass_methods() -> None:
    coll = SortDoesNotFilter([Todo], non_filter_argument_keys=["page"])
    assert coll.non_filter_argument_keys("page") and not coll.non_filter_argument_keys("sort")
    assert not SortDoesNotFilter([Todo]).non_filter_argument_keys("page")


def values_lists() -> Any:
    """Values collections for {userId 1} holding todo 1 and {userId 2} holding todo 2."""
    coll = Collection(Values(Todo))
    state = normalize(coll, {"1": {"id": 1, "userId": 1}}, args=[{"userId": 1}], meta=meta(1000))
    return normalize(coll, {"2": {"id": 2, "userId": 2}}, args=[{"userId": 2}], state=state, meta=meta(1000))


VALUES = Collection(Values(Todo))


MEMBERS = Collection([Union({"users": User, "groups": Group}, "type")])
T1 = '{"teamId":"1"}'
T2 = '{"teamId":"2"}'


def member_lists(coll: Collection = MEMBERS) -> Any:
    """Lists for {teamId 1} holding user 1 and group 1, {teamId 2} holding user 2."""
    one = [{"id": 1, "type": "users", "teamId": 1}, {"id": 1, "type": "groups", "teamId": 1}]
    two = [{"id": 2, "type": "users", "teamId": 2}]
    if not coll.is_array:
        state = normalize(coll, {"u1": one[0], "g1": one[1]}, args=[{"teamId": 1}], meta=meta(1000))
        return normalize(coll, {"u2": two[0]}, args=[{"teamId": 2}], state=state, meta=meta(1000))
    state = normalize(coll, one, args=[{"teamId": 1}], meta=meta(1000))
    return normalize(coll, two, args=[{"teamId": 2}], state=state, meta=meta(1000))


def test_move_in_a_union_collection_moves_the_item_between_lists(each_engine: str) -> None:
    """A move reads the stored record of the member type the item names, like for an Entity collection."""
    moved = {"id": 1, "type": "groups", "teamId": 2}
    r = normalize(MEMBERS.move, moved, args=[{"id": 1}, {"teamId": 2}], state=member_lists(), meta=meta(2000))
    user1, user2, group1 = ({"id": pk, "schema": s} for pk, s in (("1", "users"), ("2", "users"), ("1", "groups")))
    assert lists(r, "[User;Group]") == {T1: [user1], T2: [user2, group1]}
    assert r.entities["Group"]["1"]["teamId"] == 2 and r.entities["User"]["1"]["teamId"] == 1
    read = denormalize(MEMBERS.move, r.result, r.entities, args=[{"id": 1}, {"teamId": 2}])
    assert isinstance(read, Group) and read.id == 1


def test_move_in_a_union_values_collection_moves_the_entry(each_engine: str) -> None:
    coll = Collection(Values(Union({"users": User, "groups": Group}, "type")))
    moved = {"id": 2, "type": "users", "teamId": 1}
    r = normalize(coll.move, moved, args=[{"id": 2}, {"teamId": 1}], state=member_lists(coll), meta=meta(2000))
    tables = lists(r, "{User;Group}")
    assert tables[T2] == {}
    assert tables[T1]["2"] == {"id": "2", "schema": "users"} and len(tables[T1]) == 3


def test_union_values_entries_of_one_pk_but_other_members_never_replace_each_other(each_engine: str) -> None:
    """Pushed, moved or sent together, a group and a user of one pk are two entries; an entity the dict
    holds already (under the server's name) is updated where it is, not added again."""
    coll = Collection(Values(Union({"users": User, "groups": Group}, "type")))
    state = member_lists(coll)  # T1: u1 user 1, g1 group 1; T2: u2 user 2
    r = normalize(coll.push, {"id": 2, "type": "groups", "teamId": 2}, args=[{"teamId": 2}], state=state)
    r = normalize(
        coll.push,
        [{"id": 3, "type": "users", "teamId": 2}, {"id": 3, "type": "groups", "teamId": 2}],
        args=[{"teamId": 2}],
        state=r,
    )
    r = normalize(coll.unshift, {"id": 2, "type": "users", "teamId": 2}, args=[{"teamId": 2}], state=r)
    moved = {"id": 1, "type": "groups", "teamId": 2}
    r = normalize(coll.move, moved, args=[{"id": 1}, {"teamId": 2}], state=r, meta=meta(2000))
    refs = {name: (ref["schema"], ref["id"]) for name, ref in lists(r, "{User;Group}")[T2].items()}
    assert sorted(refs.values()) == [
        ("groups", "1"), ("groups", "2"), ("groups", "3"), ("users", "2"), ("users", "3"),
    ]  # fmt: skip
    assert refs["u2"] == ("users", "2")  # the stored user 2 kept its entry
    read: Any = denormalize(coll, T2, r.entities, args=[{"teamId": 2}])
    assert sorted((type(m).__name__, m.id) for m in read.values()) == [
        ("Group", 1), ("Group", 2), ("Group", 3), ("User", 2), ("User", 3),
    ]  # fmt: skip


def test_move_of_an_item_of_no_union_member_is_a_schema_error() -> None:
    state = member_lists()
    with pytest.raises(SchemaError, match="names no member of Union") as info:
        normalize(MEMBERS.move, {"id": 1, "type": "robots", "teamId": 2}, args=[{"id": 1}, {"teamId": 2}], state=state)
    assert info.value.status == 400


def test_values_move_between_collections() -> None:
    r = normalize(
        VALUES.move, {"id": 1, "userId": 2}, args=[{"id": 1}, {"userId": 2}], state=values_lists(), meta=meta(2000)
    )
    assert lists(r, "{Todo}") == {K_U1: {}, K_U2: {"2": "2", "1": "1"}}
    assert r.entities["Todo"]["1"]["userId"] == 2
    assert denormalize(VALUES.move, r.result, r.entities) == {"1": Todo.from_json({"id": 1, "userId": 2})}


def test_values_move_with_custom_merge() -> None:
    first = VALUES.move_with(lambda existing, incoming: {**incoming, **existing})
    r = normalize(first, {"id": 1, "userId": 2}, args=[{"id": 1}, {"userId": 2}], state=values_lists())
    assert list(lists(r, "{Todo}")[K_U2]) == ["1", "2"]
    assert lists(r, "{Todo}")[K_U1] == {}


def test_values_move_that_stays_changes_no_collection() -> None:
    state = values_lists()
    r = normalize(
        VALUES.move, {"id": 1, "userId": 1, "title": "t"}, args=[{"id": 1}, {"userId": 1}], state=state, meta=meta(2000)
    )
    assert lists(r, "{Todo}") == lists(state, "{Todo}")
    assert r.entities["Todo"]["1"]["title"] == "t"


def test_values_move_of_entity_not_yet_stored_only_joins() -> None:
    r = normalize(VALUES.move, {"id": 5, "userId": 2}, args=[{"id": 5}, {"userId": 2}], state=values_lists())
    assert lists(r, "{Todo}") == {K_U1: {"1": "1"}, K_U2: {"2": "2", "5": "5"}}


def test_values_move_without_pk_raises() -> None:
    with pytest.raises(SchemaError, match="Missing usable primary key"):
        normalize(VALUES.move, {"userId": 2}, args=[{}, {"userId": 2}], state=values_lists())


def test_move_of_non_objects_raises_schema_error() -> None:
    with pytest.raises(SchemaError, match="A move takes objects, found str") as info:
        normalize(TODOS.move, [{"id": 1}, "x"], args=[{}, {"userId": 2}])
    assert info.value.path == (1,)
    with pytest.raises(SchemaError, match="A move takes objects, found list"):
        normalize(VALUES.move, [{"id": 1}], args=[{}, {"userId": 2}])


@pytest.mark.parametrize("items", [[1, 2], ["x"], [{"id": 1}, None]])
def test_move_with_non_object_items_is_a_schema_error_naming_the_path(items: Any) -> None:
    state = normalize(TODOS, [{"id": 1, "userId": 1}], args=[{"userId": 1}])
    with pytest.raises(SchemaError, match="A move takes objects") as info:
        normalize(TODOS.move, items, args=[{"id": 1}, {"userId": 2}], state=state)
    assert info.value.path == (len(items) - 1 if items[0] == {"id": 1} else 0,)


# ----- hooks returning the wrong type -----------------------------------------------------------
@pytest.mark.parametrize("wrong", [[1], "userId", 5])
def test_args_key_or_nest_key_returning_no_mapping_is_a_definition_error(wrong: Any) -> None:
    """It failed inside with a bare AttributeError (`'list' object has no attribute 'items'`), on reads too."""
    by_args = Collection([Todo], args_key=lambda *args: wrong)
    with pytest.raises(DefinitionError, match=r"args_key must return a dict of key values"):
        normalize(by_args, [{"id": 1}], args=[{"userId": 1}])
    with pytest.raises(DefinitionError, match=r"args_key must return a dict of key values"):
        MemoCache().query(by_args, [{"userId": 1}], normalize([Todo], [{"id": 1}]))

    class Owner(Entity):
        id: int = 0
        schema = {"todos": Collection([Todo], nest_key=lambda parent, key: wrong)}

    with pytest.raises(DefinitionError, match=r"nest_key must return a dict of key values"):
        normalize(Owner, {"id": 1, "todos": [{"id": 2}]})


@pytest.mark.parametrize("derived", ["push", "move", "add_with"])
def test_create_collection_filter_returning_no_function_is_a_definition_error(derived: str) -> None:
    """It failed with a bare TypeError ('NoneType' object is not callable) from push, move and add_with."""
    coll = Collection([Todo], create_collection_filter=lambda *args: None)  # type: ignore[arg-type]
    state = normalize(coll, [{"id": 1, "userId": 1}], args=[{"userId": 1}])
    schema = coll.add_with(values_merge) if derived == "add_with" else getattr(coll, derived)
    with pytest.raises(DefinitionError, match="create_collection_filter must return a function of a list's key values"):
        normalize(schema, {"id": 1, "userId": 2}, args=[{"id": 1}, {"userId": 2}], state=state)


def test_key_names_of_mixed_types_are_text_and_sorted_at_any_depth() -> None:
    """Argument names that are not str (an int, `None`) are named as text, so mixed names sort instead of raising."""
    args: list[Any] = [{1: "a", None: "b", "userId": 2}]
    assert normalize(TODOS, [{"id": 1}], args=args).result == '{"1":"a","None":"b","userId":"2"}'
    nested = Collection([Todo], args_key=lambda p: {"f": {2: "x", "a": [{1: 1, "b": None}]}})
    assert normalize(nested, [{"id": 1}], args=[{}]).result == '{"f":{"2":"x","a":[{"1":1,"b":null}]}}'


def test_a_push_reaches_lists_keyed_by_non_str_names() -> None:
    """The filter reads the create's arguments by the same text names the stored list's key holds."""
    state = normalize(TODOS, [{"id": 1}], args=[{1: "a", "userId": 2}])
    pushed = normalize(TODOS.push, {"id": 5}, args=[{1: "a", "userId": 2}, {}], state=state)
    assert list(pushed.entities["[Todo]"]['{"1":"a","userId":"2"}']) == ["1", "5"]
