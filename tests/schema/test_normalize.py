"""normalize(): results, meta, merging into a state, hooks, indexes, validate, errors, atomicity."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Mapping
from typing import Any

import pytest

from restlayer._pmap import PMap
from restlayer.errors import ParamError, RestLayerError, SchemaError
from restlayer.schema import INVALID, Collection, Entity, MemoCache, NormalizedResult, Union, denormalize, normalize

from ._models import Todo, User, meta


class Tagged(Entity):
    id: int = 0
    tags: list[str] = []

    @classmethod
    def merge(cls, existing: Any, incoming: Any) -> Any:
        return {**existing, **incoming, "tags": [*existing.get("tags", []), *incoming.get("tags", [])]}


class Indexed(Entity):
    id: int = 0
    email: str = ""
    handle: str = ""
    indexes = ("email", "handle")


class Strict(Entity):
    id: int = 0
    name: str = ""

    @classmethod
    def validate(cls, processed: Mapping[str, Any]) -> str | None:
        return None if processed.get("name") else "name missing"


class Nested(Entity):
    id: int = 0
    strict: Strict | None = None
    schema = {"strict": Strict}


def test_result_shape() -> None:
    r = normalize({"todos": [Todo]}, {"todos": [{"id": 1}]})
    assert isinstance(r, NormalizedResult)
    result, entities, indexes, entities_meta = r
    assert result == {"todos": ["1"]}
    assert isinstance(entities, PMap) and isinstance(entities["Todo"], PMap)
    assert indexes == {}
    assert set(entities_meta["Todo"]) == {"1"}


def test_args_as_list_or_tuple() -> None:
    seen: list[Any] = []

    class A(Entity):
        id: int = 0

        @classmethod
        def process(cls, input: Any, parent: Any, key: str | None, args: tuple[Any, ...]) -> Any:
            seen.append(args)
            return dict(input)

    normalize(A, {"id": 1}, args=[1, 2])
    normalize(A, {"id": 1}, args=(1, 2))
    assert seen == [(1, 2), (1, 2)]


def test_partial_meta_filled_with_defaults() -> None:
    r = normalize(Todo, {"id": 1}, meta={"fetched_at": 5})
    m = r.entities_meta["Todo"]["1"]
    assert m["fetched_at"] == 5
    assert m["expires_at"] == float("inf")
    assert m["date"] > 0


def test_metas_of_a_large_write_read_and_change_like_one_entry_per_row() -> None:
    """A big write's metas are kept compactly; every way of reading or changing them still sees one per row."""
    todos = [{"id": i, "title": f"t{i}"} for i in range(3000)]
    first = normalize([Todo], todos, meta=meta(1000))
    metas = first.entities_meta["Todo"]
    assert len(metas) == 3000 and "2999" in metas and "3000" not in metas
    assert metas["7"] == meta(1000) and metas.get("3000") is None and metas.get("3000", 5) == 5
    assert list(metas) == [str(i) for i in range(3000)]
    assert metas == {str(i): meta(1000) for i in range(3000)}
    with pytest.raises(KeyError):
        metas["3000"]
    # one entity refetched later: only its meta moves on, and the first state is unchanged
    second = normalize(Todo, {"id": 7, "title": "new"}, state=first, meta=meta(2000))
    assert second.entities_meta["Todo"]["7"] == meta(2000)
    assert second.entities_meta["Todo"]["8"] == meta(1000) and len(second.entities_meta["Todo"]) == 3000
    assert first.entities_meta["Todo"]["7"] == meta(1000)
    # most of the list refetched: the refetched rows get the new meta, the rest keep theirs
    third = normalize([Todo], todos[1000:], state=second, meta=meta(3000))
    assert third.entities_meta["Todo"] == {
        **{str(i): meta(1000) for i in range(1000)},
        "7": meta(2000),
        **{str(i): meta(3000) for i in range(1000, 3000)},
    }
    # a whole list refetched: one meta again, and deleting a row's meta leaves the others
    fourth = normalize([Todo], todos, state=third, meta=meta(4000))
    assert fourth.entities_meta["Todo"] == {str(i): meta(4000) for i in range(3000)}
    assert pickle.loads(pickle.dumps(fourth.entities_meta["Todo"])) == fourth.entities_meta["Todo"]
    assert copy.deepcopy(fourth.entities_meta["Todo"]) == fourth.entities_meta["Todo"]
    assert fourth.entities_meta["Todo"].delete("5") == {str(i): meta(4000) for i in range(3000) if i != 5}


def test_merge_into_state_leaves_old_state_untouched() -> None:
    first = normalize([Todo], [{"id": 1, "title": "a"}, {"id": 2}], meta=meta(1000))
    snapshot_entities = first.entities.to_dict()
    snapshot_meta = first.entities_meta.to_dict()
    table_before = first.entities["Todo"]
    second = normalize(Todo, {"id": 1, "title": "b", "author": {"id": 3}}, state=first, meta=meta(2000))
    assert first.entities.to_dict() == snapshot_entities
    assert first.entities_meta.to_dict() == snapshot_meta
    assert first.entities["Todo"] is table_before
    assert first.entities["Todo"]["1"] == {"id": 1, "title": "a"}
    assert second.entities["Todo"]["1"] == {"id": 1, "title": "b", "author": "3"}
    assert second.entities["Todo"]["2"] is first.entities["Todo"]["2"]
    assert second.entities["User"]["3"] == {"id": 3}


def test_untouched_tables_are_shared() -> None:
    first = normalize({"t": Todo, "u": User}, {"t": {"id": 1}, "u": {"id": 1}})
    second = normalize(Todo, {"id": 2}, state=first)
    assert second.entities["User"] is first.entities["User"]
    assert second.entities_meta["User"] is first.entities_meta["User"]


def test_table_built_in_one_call_stays_immutable_when_derived_from() -> None:
    """A fresh table keeps the normalizer's dict; later versions derive from it without changing it."""
    first = normalize([Todo], [{"id": i, "title": str(i)} for i in (3, 1, 2)])
    table = first.entities["Todo"]
    assert sorted(table) == ["1", "2", "3"]
    assert table.in_order() == ["3", "1", "2"]  # type: ignore[attr-defined]
    assert len(table) == 3 and "1" in table and table["2"]["title"] == "2"
    second = normalize(Todo, {"id": 4, "title": "4"}, state=first)
    third = normalize(Todo, {"id": 1, "title": "one"}, state=first)
    assert table == {"3": {"id": 3, "title": "3"}, "1": {"id": 1, "title": "1"}, "2": {"id": 2, "title": "2"}}
    assert second.entities["Todo"].in_order() == ["3", "1", "2", "4"]  # type: ignore[attr-defined]
    assert third.entities["Todo"]["1"]["title"] == "one" and table["1"]["title"] == "1"
    assert first.entities["Todo"].delete("1") == {"3": table["3"], "2": table["2"]}
    assert PMap(table) == table and table.set("9", 9)["9"] == 9 and "9" not in table
    assert table.to_dict()["3"] == {"id": 3, "title": "3"}


@pytest.mark.parametrize("form", ["result", "object", "mapping", "plain"])
def test_state_forms(form: str) -> None:
    first = normalize(Todo, {"id": 1, "title": "a"}, meta=meta(1000))
    state: Any
    if form == "result":
        state = first
    elif form == "object":

        class State:
            entities = first.entities
            indexes = first.indexes
            entities_meta = first.entities_meta

        state = State()
    elif form == "mapping":
        state = {"entities": first.entities, "indexes": first.indexes, "entities_meta": first.entities_meta}
    else:
        state = {
            "entities": first.entities.to_dict(),
            "indexes": {},
            "entities_meta": first.entities_meta.to_dict(),
        }
    before = copy.deepcopy(state) if form == "plain" else None
    r = normalize(Todo, {"id": 1, "completed": True}, state=state, meta=meta(2000))
    assert r.entities["Todo"]["1"] == {"id": 1, "title": "a", "completed": True}
    if before is not None:
        assert state == before


# ----- hooks ---------------------------------------------------------------------------------
def test_custom_merge_within_response_and_with_store() -> None:
    r = normalize([Tagged], [{"id": 1, "tags": ["a"]}, {"id": 1, "tags": ["b"]}])
    assert r.entities["Tagged"]["1"]["tags"] == ["a", "b"]
    r2 = normalize(Tagged, {"id": 1, "tags": ["c"]}, state=r)
    assert r2.entities["Tagged"]["1"]["tags"] == ["a", "b", "c"]


def test_should_reorder_hook() -> None:
    class Sticky(Todo):
        key = "Todo"

        @classmethod
        def should_reorder(cls, existing_meta: Any, incoming_meta: Any, existing: Any, incoming: Any) -> bool:
            return True

    state = normalize(Todo, {"id": 1, "title": "old"}, meta=meta(1000))
    r = normalize(Sticky, {"id": 1, "title": "new", "completed": True}, state=state, meta=meta(2000))
    assert r.entities["Todo"]["1"] == {"id": 1, "title": "old", "completed": True}
    assert r.entities_meta["Todo"]["1"]["fetched_at"] == 1000


def test_should_update_receives_metas_and_records() -> None:
    calls: list[tuple[Any, ...]] = []

    class Watch(Todo):
        key = "Todo"

        @classmethod
        def should_update(cls, existing_meta: Any, incoming_meta: Any, existing: Any, incoming: Any) -> bool:
            calls.append((existing_meta["fetched_at"], incoming_meta["fetched_at"], dict(existing), dict(incoming)))
            return bool(incoming.get("title") != "ignore")

    state = normalize(Todo, {"id": 1, "title": "old"}, meta=meta(1000))
    r = normalize(Watch, {"id": 1, "title": "ignore"}, state=state, meta=meta(2000))
    assert calls == [(1000, 2000, {"id": 1, "title": "old"}, {"id": 1, "title": "ignore"})]
    assert r.entities["Todo"]["1"] == {"id": 1, "title": "old"}
    r = normalize(Watch, {"id": 1, "title": "fine"}, state=state, meta=meta(2000))
    assert r.entities["Todo"]["1"] == {"id": 1, "title": "fine"}


def test_merge_with_store_and_meta_hooks() -> None:
    class Counter(Entity):
        id: int = 0
        n: int = 0

        @classmethod
        def merge_with_store(cls, existing_meta: Any, incoming_meta: Any, existing: Any, incoming: Any) -> Any:
            return {**incoming, "n": existing["n"] + incoming["n"]}

        @classmethod
        def merge_meta_with_store(cls, existing_meta: Any, incoming_meta: Any, existing: Any, incoming: Any) -> Any:
            return {**incoming_meta, "fetched_at": max(existing_meta["fetched_at"], incoming_meta["fetched_at"])}

    state = normalize(Counter, {"id": 1, "n": 2}, meta=meta(3000))
    r = normalize(Counter, {"id": 1, "n": 5}, state=state, meta=meta(1000))
    assert r.entities["Counter"]["1"] == {"id": 1, "n": 7}
    assert r.entities_meta["Counter"]["1"]["fetched_at"] == 3000
    assert r.entities_meta["Counter"]["1"]["date"] == 1000


# ----- indexes -------------------------------------------------------------------------------
def test_indexes_several_fields() -> None:
    r = normalize([Indexed], [{"id": 1, "email": "a@x", "handle": "a"}, {"id": 2, "email": "b@x"}])
    assert r.indexes == {"Indexed": {"email": {"a@x": "1", "b@x": "2"}, "handle": {"a": "1"}}}
    r2 = normalize(Indexed, {"id": 1, "email": "c@x", "handle": "a"}, state=r)
    assert r2.indexes["Indexed"]["email"] == {"a@x": INVALID, "b@x": "2", "c@x": "1"}
    assert r2.indexes["Indexed"]["handle"] == {"a": "1"}
    assert r.indexes["Indexed"]["email"] == {"a@x": "1", "b@x": "2"}


def test_index_follows_merged_record() -> None:
    # an older response does not move the index away from the stored value
    r = normalize(Indexed, {"id": 1, "email": "new@x"}, meta=meta(2000))
    r2 = normalize(Indexed, {"id": 1, "email": "old@x"}, state=r, meta=meta(1000))
    assert r2.entities["Indexed"]["1"]["email"] == "new@x"
    assert r2.indexes["Indexed"]["email"]["new@x"] == "1"
    assert r2.indexes["Indexed"]["email"].get("old@x") != "1"


# ----- validate ------------------------------------------------------------------------------
def test_nested_validate_failure_raises_and_stores_nothing() -> None:
    state = normalize(Todo, {"id": 1}, meta=meta(1000))
    with pytest.raises(SchemaError) as info:
        normalize(Nested, {"id": 1, "strict": {"id": 2}}, state=state)
    assert info.value.status == 400
    assert info.value.schema == "Strict"
    assert info.value.path == ("strict",)


# ----- errors --------------------------------------------------------------------------------
def test_error_names_schema_and_path() -> None:
    with pytest.raises(SchemaError) as info:
        normalize({"results": [Todo]}, {"results": [{"id": 1}, {"title": "no id"}]})
    err = info.value
    assert err.schema == "Todo"
    assert err.path == ("results", 1)
    assert "Todo" in str(err)
    assert "['results'][1]" in str(err)
    assert isinstance(err, RestLayerError)


def test_error_path_through_nested_entity() -> None:
    with pytest.raises(SchemaError) as info:
        normalize([Todo], [{"id": 1}, {"id": 2, "author": {"username": "x"}}])
    assert info.value.schema == "User"
    assert info.value.path == (1, "author")


def test_error_path_through_values() -> None:
    from restlayer.schema import Values

    with pytest.raises(SchemaError) as info:
        normalize({"by_id": Values(User)}, {"by_id": {"a": {"id": 1}, "b": {}}})
    assert info.value.path == ("by_id", "b")
    assert info.value.schema == "User"


# ----- atomicity -----------------------------------------------------------------------------
def test_failing_normalize_leaves_state_untouched() -> None:
    state = normalize([Todo], [{"id": 1, "title": "a"}], meta=meta(1000))
    before = (state.entities.to_dict(), state.indexes.to_dict(), state.entities_meta.to_dict())
    with pytest.raises(SchemaError):
        normalize([Todo], [{"id": 1, "title": "changed"}, {"id": 5}, {"title": "no id"}], state=state)
    assert (state.entities.to_dict(), state.indexes.to_dict(), state.entities_meta.to_dict()) == before


def test_failing_normalize_leaves_plain_state_untouched() -> None:
    state: dict[str, Any] = {
        "entities": {"Todo": {"1": {"id": 1, "title": "a"}}},
        "indexes": {},
        "entities_meta": {"Todo": {"1": meta(1000)}},
    }
    before = copy.deepcopy(state)
    with pytest.raises(SchemaError):
        normalize([Todo], [{"id": 1, "title": "b"}, {"id": None}], state=state)
    assert state == before


def test_failing_normalize_does_not_mutate_input() -> None:
    class Raw(Entity):
        id: int = 0
        author: User | None = None
        schema = {"author": User}

        @classmethod
        def process(cls, input: Any, parent: Any, key: str | None, args: tuple[Any, ...]) -> Any:
            return input  # identity, as a user might write it

    data = [{"id": 1, "author": {"id": 7}}, {"id": 2, "author": {"name": "no id"}}]
    before = copy.deepcopy(data)
    with pytest.raises(SchemaError):
        normalize([Raw], data)
    assert data == before
    ok = [{"id": 1, "author": {"id": 7}}]
    r = normalize([Raw], ok)
    assert ok == [{"id": 1, "author": {"id": 7}}]
    assert r.entities["Raw"]["1"] == {"id": 1, "author": "7"}


def test_normalize_output_roundtrip() -> None:
    r = normalize([Todo], [{"id": 1, "title": "a", "author": {"id": 2, "username": "u"}}])
    out = denormalize([Todo], r.result, r.entities)
    assert out == [Todo(id=1, title="a", author=User(id=2, username="u"))]


# ----- deep and self-containing input --------------------------------------------------------
class Chain(Entity):
    id: int = 0
    next: Any = None
    rest: list[Any] = []


Chain.schema = {"next": Chain, "rest": [Chain]}


def test_input_containing_itself_is_a_schema_error() -> None:
    direct: dict[str, Any] = {"id": 1}
    direct["next"] = direct
    with pytest.raises(SchemaError, match="contains itself"):
        normalize(Chain, direct)
    a: dict[str, Any] = {"id": 1}
    b: dict[str, Any] = {"id": 2, "rest": [a]}
    a["next"] = b
    with pytest.raises(SchemaError, match="contains itself"):
        normalize([Chain], [a])


def test_long_cycle_in_input_is_a_schema_error() -> None:
    first: dict[str, Any] = {"id": 0}
    node = first
    for i in range(1, 300):
        node["next"] = node = {"id": i}
    node["next"] = first
    with pytest.raises(SchemaError, match="contains itself"):
        normalize(Chain, first)


def test_same_object_twice_is_not_a_cycle_even_deep_down() -> None:
    shared = {"id": "s", "rest": []}
    data: dict[str, Any] = {"id": 0, "rest": [shared]}
    for i in range(1, 500):
        data = {"id": i, "next": data, "rest": [shared]}
    r = normalize(Chain, data)
    assert len(r.entities["Chain"]) == 501


def test_deep_chain_normalizes_in_store_order_and_keeps_merge_semantics() -> None:
    data: dict[str, Any] = {"id": 10_000}
    for i in range(9_999, 0, -1):
        data = {"id": i, "next": data}
    r = normalize(Chain, data)
    assert len(r.entities["Chain"]) == 10_000
    assert r.entities["Chain"]["9999"] == {"id": 9999, "next": "10000"}


def test_state_whose_tables_are_not_mappings_is_a_param_error() -> None:
    class Thing(Entity):
        id: int = 0

    with pytest.raises(ParamError, match="a store table must be a mapping, got list"):
        normalize(Thing, {"id": 1}, state={"entities": {"Thing": [1, 2]}})


class _NotJson:
    """An object that is neither a JSON object nor an array (as a forgotten coroutine would be)."""


@pytest.mark.parametrize("data", [_NotJson(), object(), range(2)])
def test_an_object_that_is_not_json_data_raises_400_and_stores_nothing(data: object) -> None:
    """Returned as the result before, such an object was stored as an endpoint's data."""
    with pytest.raises(SchemaError, match="Unexpected input") as caught:
        normalize(Todo, data)
    assert caught.value.status == 400
    with pytest.raises(SchemaError, match="Unexpected input"):
        normalize([Todo], data)


@pytest.mark.parametrize("data", [b'{"id": 1}', bytearray(b"1"), {1, 2}, frozenset({"1"})])
def test_binary_or_set_input_raises_400_like_a_scalar(data: object) -> None:
    """Read as a pk before, a bytes or set reply replaced a stored result with nothing readable."""
    with pytest.raises(SchemaError, match="Unexpected input") as caught:
        normalize(Todo, data)
    assert caught.value.status == 400


# ----- entity instances where a record or pk belongs ------------------------------------------
@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ([Todo], [{"id": 1}, Todo(id=2, title="x")]),
        ({"todos": [Todo]}, {"todos": [Todo(id=2)]}),
        (Todo, {"id": 1, "author": User(id=3)}),
        ([Todo], [object()]),
    ],
    ids=["in a list", "in an object", "as a member", "any object"],
)
def test_an_object_that_is_no_record_nor_pk_is_a_schema_error(schema: Any, value: Any, each_engine: str) -> None:
    """It was stored as is: the list then read without it (its pk was its repr), with no error."""
    state = normalize([Todo], [{"id": 1}])
    with pytest.raises(SchemaError, match=r"Expected an object or a primary key for entity (Todo|User), found") as info:
        normalize(schema, value, state=state)
    assert info.value.status == 400


# ----- a user hook that raises ------------------------------------------------------------
def _raising(hook: str) -> type[Entity]:
    """An entity (key "Todo") whose `hook` raises a KeyError, as a hook with a bug does."""

    def boom(*args: object) -> Any:
        raise KeyError(f"no {hook}")

    method: object = boom if hook == "pk" else classmethod(boom)
    namespace: dict[str, object] = {"key": "Todo", "__annotations__": {"id": "int"}, "id": 0, hook: method}
    return type(f"Raising_{hook}", (Entity,), namespace)


@pytest.mark.parametrize(
    "hook",
    [
        "pk",
        "process",
        "validate",
        "merge",
        "merge_with_store",
        "merge_meta_with_store",
        "should_update",
        "should_reorder",
    ],
)
def test_a_hook_that_raises_is_a_400_naming_it_and_stores_nothing(hook: str) -> None:
    """It was the hook's own KeyError, outside the RestLayerError tree (`ctrl.set` raised it as is)."""
    state = normalize(Todo, {"id": 1, "title": "kept"}, meta=meta(1000))
    with pytest.raises(SchemaError, match=r"Raising_\w+\.\w+ raised KeyError: 'no ") as info:
        normalize({"items": [_raising(hook)]}, {"items": [{"id": 1, "title": "new"}]}, state=state, meta=meta(2000))
    assert info.value.status == 400 and info.value.schema == "Todo" and info.value.path == ("items", 0)
    assert isinstance(info.value.__cause__, KeyError)
    assert state.entities["Todo"]["1"] == {"id": 1, "title": "kept"}


def _returning(hook: str, value: object) -> type[Entity]:
    """An entity (key "Todo") whose `hook` returns `value`, as a hook with a bug does."""
    method = classmethod(lambda cls, *args: value)
    namespace: dict[str, object] = {"key": "Todo", "__annotations__": {"id": "int"}, "id": 0, hook: method}
    return type(f"Returning_{hook}", (Entity,), namespace)


@pytest.mark.parametrize(
    ("hook", "value", "named"),
    [
        ("merge", 5, r"merge returned int"),
        ("merge", None, r"merge returned NoneType"),
        ("merge_with_store", ["id", 1], r"merge_with_store returned list"),
        ("merge_meta_with_store", 5, r"merge_meta_with_store returned 5"),
        ("merge_meta_with_store", {"fetched_at": 1}, r"merge_meta_with_store returned \{'fetched_at': 1\}"),
        ("process", [("id", 1)], r"process returned list"),
    ],
)
def test_a_hook_returning_no_record_is_a_400_and_stores_nothing(hook: str, value: object, named: str) -> None:
    """What `merge`/`merge_with_store` returned was stored as the record (`5`: later reads failed or gave an empty
    instance), `merge_meta_with_store`'s as the meta (the next write failed), and `process` returning a list
    raised a bare TypeError (or, a list of pairs, was stored as a dict)."""
    state = normalize(Todo, {"id": 1, "title": "kept"}, meta=meta(1000))
    with pytest.raises(SchemaError, match=rf"Returning_\w+\.{named}") as info:
        normalize(_returning(hook, value), {"id": 1, "title": "new"}, state=state, meta=meta(2000))
    assert info.value.status == 400 and info.value.schema == "Todo"
    assert state.entities["Todo"]["1"] == {"id": 1, "title": "kept"}
    assert state.entities_meta["Todo"]["1"]["fetched_at"] == 1000


def _fails(*args: object) -> Any:
    raise KeyError("user function")


class _Item(Entity):
    id: int = 0


class _Holder(Entity):
    id: int = 0
    items: list[_Item] = []
    schema = {"items": Collection([_Item], nest_key=_fails)}


@pytest.mark.parametrize(
    ("schema", "data", "args"),
    [
        ([Union({"a": _Item}, _fails)], [{"id": 1}], ()),
        (Collection([_Item], args_key=_fails), [{"id": 1}], ({"owner": 1},)),
        (_Holder, {"id": 1, "items": [{"id": 2}]}, ()),
    ],
    ids=["union attribute", "args_key", "nest_key"],
)
def test_a_schema_function_that_raises_is_a_400_and_stores_nothing(schema: Any, data: Any, args: Any) -> None:
    """It was the function's bare KeyError from `normalize` and `ctrl.set` (a fetch wrapped it)."""
    state = normalize(Todo, {"id": 1, "title": "kept"}, meta=meta(1000))
    with pytest.raises(SchemaError, match=r"normalizing .+ raised KeyError: 'user function'") as info:
        normalize(schema, data, args, state=state)
    assert info.value.status == 400 and isinstance(info.value.__cause__, KeyError)
    assert state.entities == {"Todo": {"1": {"id": 1, "title": "kept"}}}


class _UpdatesInPlace(Entity):
    """A merge in a common Python idiom: the stored record updated in place and returned."""

    id: int = 0
    title: str = ""
    done: bool = False

    @classmethod
    def merge(cls, existing: Any, incoming: Any) -> Any:
        existing.update(incoming)
        return existing

    @classmethod
    def merge_meta_with_store(cls, existing_meta: Any, incoming_meta: Any, existing: Any, incoming: Any) -> Any:
        existing_meta.update(incoming_meta)
        return existing_meta


def test_a_store_hook_changing_the_stored_record_in_place_changes_no_earlier_state() -> None:
    """The hooks were given the stored record and meta themselves: the earlier state changed with the new one,
    and a memoized read of the new state kept showing the old title (the record was still the same object)."""
    memo = MemoCache()
    first = normalize(_UpdatesInPlace, {"id": 1, "title": "a"}, meta=meta(1000))
    assert memo.denormalize(_UpdatesInPlace, "1", first.entities) == _UpdatesInPlace(id=1, title="a")
    second = normalize(_UpdatesInPlace, {"id": 1, "title": "b"}, state=first, meta=meta(2000))
    assert first.entities["_UpdatesInPlace"]["1"] == {"id": 1, "title": "a"}
    assert first.entities_meta["_UpdatesInPlace"]["1"]["fetched_at"] == 1000
    assert second.entities["_UpdatesInPlace"]["1"] == {"id": 1, "title": "b"}
    assert second.entities_meta["_UpdatesInPlace"]["1"]["fetched_at"] == 2000
    assert memo.denormalize(_UpdatesInPlace, "1", second.entities) == _UpdatesInPlace(id=1, title="b")
    third = normalize([_UpdatesInPlace], [{"id": 1, "done": True}, {"id": 1, "title": "c"}], state=second)
    assert second.entities["_UpdatesInPlace"]["1"] == {"id": 1, "title": "b"}
    assert third.entities["_UpdatesInPlace"]["1"] == {"id": 1, "title": "c", "done": True}
