"""Entity: pk, process, nesting, re-normalization, meta, indexes, validate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from restlayer.errors import RestLayerError, SchemaError
from restlayer.schema import INVALID, Entity, Invalidate, MemoCache, denormalize, normalize
from tests._present import present

from ._models import CycleTodo, CycleUser, Todo, User, meta


class PriceLevel(Entity):
    id: str = ""
    amount: int = 0

    @classmethod
    def process(cls, input: Any, parent: Any, key: str | None, args: tuple[Any, ...]) -> Any:
        if input.get("amount") == 0:
            return None
        return dict(input)


class U(Entity):
    id: int = 0
    username: str = ""

    indexes = ("username",)


class V(Entity):
    id: str = ""
    name: str = ""

    @classmethod
    def validate(cls, processed: Mapping[str, Any]) -> str | None:
        return None if "name" in processed else "name is required"


def old_store() -> Any:
    return normalize(Todo, {"id": 1, "title": "old", "completed": True}, meta=meta(1000))


# ----- 4.1 pk ------------------------------------------------------------------------------
def test_field_names_are_the_fields_in_declaration_order() -> None:
    class Note(Entity):
        id: int = 0
        body: str = ""
        tags: list[str] = []

    class Pinned(Note):
        pinned: bool = False

    assert Note.field_names() == ("id", "body", "tags")
    assert Pinned.field_names() == ("id", "body", "tags", "pinned")


def test_pk_is_text_of_id() -> None:
    assert normalize(Todo, {"id": 1}).result == "1"
    assert normalize(Todo, {"id": "abc"}).result == "abc"


def test_pk_zero_is_valid() -> None:
    r = normalize(Todo, {"id": 0, "title": "z"})
    assert r.result == "0"
    assert r.entities["Todo"]["0"] == {"id": 0, "title": "z"}


@pytest.mark.parametrize("data", [{"title": "x"}, {"id": None}, {"id": ""}, {"id": "undefined"}])
def test_unusable_pk_raises_400_naming_entity(data: dict[str, Any]) -> None:
    with pytest.raises(SchemaError, match="Missing usable primary key") as info:
        normalize(Todo, data)
    assert info.value.status == 400
    assert isinstance(info.value, RestLayerError)
    assert info.value.schema == "Todo"


@pytest.mark.parametrize("bad", [{"a": 1}, [1, 2], (1,), {1}, frozenset({1})], ids=repr)
def test_container_pk_is_refused_naming_the_entity(bad: object, each_engine: str) -> None:
    """A dict or list id is no primary key: it was stored under its repr ("{'a': 1}")."""
    stored = normalize(Todo, {"id": 1, "title": "kept"})
    for data in ({"id": bad, "title": "x"}, [{"id": 2}, {"id": bad}]):
        schema: Any = Todo if isinstance(data, dict) else [Todo]
        with pytest.raises(SchemaError, match="Todo primary key must be text or a number") as info:
            normalize(schema, data, state=stored)
        assert info.value.status == 400
        assert info.value.schema == "Todo"
    assert dict(stored.entities["Todo"].items()) == {"1": {"id": 1, "title": "kept"}}


def test_container_from_a_custom_pk_is_refused() -> None:
    class Keyed(Entity):
        ref: Any = None

        def pk(self, parent: Any = None, key: str | None = None, args: tuple[Any, ...] = ()) -> str | None:
            return self.ref  # type: ignore[no-any-return]

    with pytest.raises(SchemaError, match="Keyed primary key must be text or a number, found dict"):
        normalize(Keyed, {"ref": {"a": 1}})
    assert normalize(Keyed, {"ref": 7}).result == "7"
    with pytest.raises(SchemaError, match="Todo primary key must be text or a number, found list"):
        normalize(Invalidate(Todo), {"id": [1]})


def test_number_and_bool_pks_stay_text() -> None:
    assert normalize(Todo, {"id": 1.5}).result == "1.5"
    assert normalize(Todo, {"id": True}).result == "true"


def test_pk_does_not_fall_back_to_field_default() -> None:
    # Todo.id defaults to 0, but a response without id has no pk.
    with pytest.raises(SchemaError):
        normalize(Todo, {"title": "x"})


def test_custom_pk() -> None:
    class Slug(Entity):
        slug: str = ""

        def pk(self, parent: Any = None, key: str | None = None, args: tuple[Any, ...] = ()) -> str | None:
            return self.slug or None

    r = normalize([Slug], [{"slug": "a"}, {"slug": "b"}])
    assert r.result == ["a", "b"]
    assert r.entities["Slug"]["a"] == {"slug": "a"}
    with pytest.raises(SchemaError):
        normalize(Slug, {"other": 1})


def test_entity_key_defaults_to_class_name_and_can_be_set() -> None:
    class Thing(Entity):
        id: int = 0

    class Other(Entity):
        id: int = 0
        key = "Renamed"

    assert Thing.key == "Thing"
    assert normalize(Other, {"id": 1}).entities == {"Renamed": {"1": {"id": 1}}}


# ----- 4.2 process -------------------------------------------------------------------------
def test_process_sees_parent_key_args_and_its_result_is_stored() -> None:
    seen: list[tuple[Any, Any, Any]] = []

    class P(Entity):
        id: int = 0

        @classmethod
        def process(cls, input: Any, parent: Any, key: str | None, args: tuple[Any, ...]) -> Any:
            seen.append((parent, key, args))
            return {**input, "tag": args[0] if args else None}

    data = {"id": 1}
    r = normalize(P, data, args=["t"])
    assert r.entities["P"]["1"] == {"id": 1, "tag": "t"}
    assert seen == [(data, None, ("t",))]

    seen.clear()
    outer = {"p": {"id": 2}}
    normalize({"p": P}, outer, args=[])
    assert seen == [(outer, "p", ())]


def test_default_process_copies_and_never_mutates_input() -> None:
    data = {"id": 1, "author": {"id": 7, "username": "u"}}
    r = normalize(Todo, data)
    assert data == {"id": 1, "author": {"id": 7, "username": "u"}}
    assert r.entities["Todo"]["1"] is not data


def test_process_returning_none_deletes() -> None:
    """Check: process returning None when amount == 0 (4.6 Checks)."""
    r = normalize([PriceLevel], [{"id": "a", "amount": 0}, {"id": "b", "amount": 1}])
    assert r.result == ["a", "b"]
    assert r.entities["PriceLevel"]["a"] is INVALID
    out = denormalize([PriceLevel], r.result, r.entities)
    assert out == [PriceLevel(id="b", amount=1)]


def test_list_given_to_entity_raises_400() -> None:
    with pytest.raises(SchemaError) as info:
        normalize(Todo, [{"id": 1}])
    assert info.value.status == 400


@pytest.mark.parametrize("bad", [None, "x", 5, 1.5])
def test_wrong_top_level_type_raises(bad: Any) -> None:
    with pytest.raises(RestLayerError, match="Unexpected input given to normalize"):
        normalize(Todo, bad)


def test_none_top_level_message() -> None:
    with pytest.raises(RestLayerError, match='Expected type to be "object", found "null"'):
        normalize(Todo, None)


# ----- 4.3 nesting ---------------------------------------------------------------------------
def test_normalize_keeps_undeclared_keys() -> None:
    """Check: normalize(Todo, {"id": 1, "title": "a", "extra": "x"})."""
    r = normalize(Todo, {"id": 1, "title": "a", "extra": "x"})
    assert r.result == "1"
    assert r.entities == {"Todo": {"1": {"id": 1, "title": "a", "extra": "x"}}}


def test_nested_entity_replaced_by_pk() -> None:
    """Check: the author member holds "7"."""
    r = normalize(Todo, {"id": 1, "author": {"id": 7, "username": "u"}})
    assert r.entities["Todo"]["1"]["author"] == "7"
    assert r.entities["User"]["7"] == {"id": 7, "username": "u"}


def test_same_entity_twice_is_merged() -> None:
    """Check: [Todo] with Todo 1 twice."""
    r = normalize([Todo], [{"id": 1, "title": "a"}, {"id": 1, "completed": True}])
    assert r.entities["Todo"]["1"] == {"id": 1, "title": "a", "completed": True}
    assert r.result == ["1", "1"]


def test_nested_id_given_directly() -> None:
    assert normalize(Todo, {"id": 1, "author": 7}).entities["Todo"]["1"]["author"] == "7"
    assert normalize(Todo, {"id": 1, "author": 0}).entities["Todo"]["1"]["author"] == 0
    assert normalize(Todo, {"id": 1, "author": ""}).entities["Todo"]["1"]["author"] == ""
    assert normalize(Todo, {"id": 1, "author": None}).entities["Todo"]["1"]["author"] is None


def test_only_declared_present_members_are_visited() -> None:
    r = normalize(Todo, {"id": 1, "other": {"id": 9}})
    assert r.entities == {"Todo": {"1": {"id": 1, "other": {"id": 9}}}}


# ----- 4.4 re-normalization ------------------------------------------------------------------
def test_newer_fetch_wins() -> None:
    """Check: fetched_at 2000 over stored fetched_at 1000."""
    store = old_store()
    r = normalize(Todo, {"id": 1, "title": "new"}, state=store, meta=meta(2000))
    assert r.entities["Todo"]["1"] == {"id": 1, "title": "new", "completed": True}
    assert r.entities_meta["Todo"]["1"]["fetched_at"] == 2000


def test_older_fetch_loses_but_adds_fields() -> None:
    """Check: fetched_at 500 keeps title "old", adds user_id 5, meta unchanged."""
    store = old_store()
    r = normalize(Todo, {"id": 1, "title": "new", "user_id": 5}, state=store, meta=meta(500))
    assert r.entities["Todo"]["1"]["title"] == "old"
    assert r.entities["Todo"]["1"]["user_id"] == 5
    assert r.entities["Todo"]["1"] == {"id": 1, "title": "old", "completed": True, "user_id": 5}
    assert r.entities_meta["Todo"]["1"] == store.entities_meta["Todo"]["1"]
    assert r.entities_meta["Todo"]["1"]["fetched_at"] == 1000


def test_equal_fetched_at_counts_as_newer() -> None:
    store = old_store()
    r = normalize(Todo, {"id": 1, "title": "new"}, state=store, meta=meta(1000))
    assert r.entities["Todo"]["1"]["title"] == "new"


def test_should_update_false_keeps_fields_but_takes_meta() -> None:
    """Check: should_update returning False, fetched_at=2000."""

    class Frozen(Todo):
        key = "Todo"

        @classmethod
        def should_update(cls, existing_meta: Any, incoming_meta: Any, existing: Any, incoming: Any) -> bool:
            return False

    store = old_store()
    m = meta(2000)
    r = normalize(Frozen, {"id": 1, "title": "new"}, state=store, meta=m)
    assert r.entities["Todo"]["1"] == {"id": 1, "title": "old", "completed": True}
    assert r.entities_meta["Todo"]["1"] == m


def test_deleted_marker_replaced_only_by_data_fetched_after_it() -> None:
    store = normalize(PriceLevel, {"id": "a", "amount": 0}, meta=meta(5000))
    assert store.entities["PriceLevel"]["a"] is INVALID
    older = normalize(PriceLevel, {"id": "a", "amount": 3}, state=store, meta=meta(100))
    assert older.entities["PriceLevel"]["a"] is INVALID
    newer = normalize(PriceLevel, {"id": "a", "amount": 3}, state=store, meta=meta(6000))
    assert newer.entities["PriceLevel"]["a"] == {"id": "a", "amount": 3}


# ----- 4.5 meta and indexes -------------------------------------------------------------------
def test_direct_normalize_default_meta() -> None:
    import time

    before = time.time() * 1000
    r = normalize(Todo, {"id": 1})
    after = time.time() * 1000
    m = r.entities_meta["Todo"]["1"]
    assert m["fetched_at"] == 0
    assert before <= m["date"] <= after
    assert m["expires_at"] == float("inf")


def test_meta_given_is_stored_per_entity() -> None:
    m = meta(1234)
    r = normalize(Todo, {"id": 1, "author": {"id": 2}}, meta=m)
    assert r.entities_meta == {"Todo": {"1": m}, "User": {"2": m}}


def test_indexes_follow_value_changes() -> None:
    """Check: username bob then rob for id "1"."""
    first = normalize(U, {"id": 1, "username": "bob"})
    assert first.indexes["U"]["username"] == {"bob": "1"}
    second = normalize(U, {"id": 1, "username": "rob"}, state=first)
    table = second.indexes["U"]["username"]
    assert table["rob"] == "1"
    assert table["bob"] is INVALID
    # the earlier state is untouched
    assert first.indexes["U"]["username"] == {"bob": "1"}


def test_index_lookup_resolves_query() -> None:
    from restlayer.schema import MemoCache

    r = normalize(U, {"id": 1, "username": "bob"})
    found = MemoCache().query(U, [{"username": "bob"}], r)
    assert found == U(id=1, username="bob")
    assert MemoCache().query(U, [{"username": "nobody"}], r) is None


class Tagged(Entity):
    id: int = 0
    label: Any = None
    indexes = ("label",)


def test_dict_and_list_index_values_are_not_indexed_and_never_match() -> None:
    """A dict or list has no text of its own: indexed by its repr, `"[1, 2]"` found the list (and took
    the entry of the record whose label is that text), and an equal dict written in another order missed."""
    records = [{"id": 4, "label": "[1, 2]"}, {"id": 1, "label": {"a": 1, "b": 2}}, {"id": 2, "label": [1, 2]}]
    r = normalize([Tagged], records)
    assert r.indexes["Tagged"]["label"] == {"[1, 2]": "4"}
    memo = MemoCache()
    for probe in ({"a": 1, "b": 2}, {"b": 2, "a": 1}, "{'a': 1, 'b': 2}", [1, 2]):
        assert memo.query(Tagged, [{"label": probe}], r) is None
    assert memo.query(Tagged, [{"label": "[1, 2]"}], r) == Tagged(id=4, label="[1, 2]")
    # a label changing from a list to text and back: only the text is ever indexed (then retired)
    changed = normalize(Tagged, {"id": 2, "label": "two"}, state=r)
    assert changed.indexes["Tagged"]["label"] == {"[1, 2]": "4", "two": "2"}
    back = normalize(Tagged, {"id": 2, "label": [1, 2]}, state=changed)
    assert back.indexes["Tagged"]["label"] == {"[1, 2]": "4", "two": INVALID}


# ----- 4.6 validate and denormalization --------------------------------------------------------
def test_validate_at_normalize_raises_400() -> None:
    """Check: validate requiring name: normalize(V, {"id": "x"}) raises status 400."""
    with pytest.raises(SchemaError) as info:
        normalize(V, {"id": "x"})
    assert info.value.status == 400
    assert "name is required" in str(info.value)


def test_validate_at_denormalize() -> None:
    """Check: invalid stored V at top level, in a list, in a dict schema."""
    entities = {"V": {"x": {"id": "x"}, "y": {"id": "y", "name": "Y"}}}
    assert denormalize(V, "x", entities) is None
    assert denormalize(V, "y", entities) == V(id="y", name="Y")
    assert denormalize([V], ["x", "y"], entities) == [V(id="y", name="Y")]
    assert denormalize({"v": V, "n": 5}, {"v": "x", "n": 5}, entities) is None
    assert denormalize({"v": V, "n": 5}, {"v": "y", "n": 5}, entities) == {"v": V(id="y", name="Y"), "n": 5}


def test_summary_and_detail_share_a_key() -> None:
    class Summary(Entity):
        id: int = 0
        name: str = ""
        key = "Article"

    class Detail(Entity):
        id: int = 0
        name: str = ""
        body: str = ""
        key = "Article"

        @classmethod
        def validate(cls, processed: Mapping[str, Any]) -> str | None:
            return None if "body" in processed else "missing body"

    r = normalize(Summary, {"id": 1, "name": "n"})
    assert denormalize(Summary, "1", r.entities) == Summary(id=1, name="n")
    assert denormalize(Detail, "1", r.entities) is None
    r2 = normalize(Detail, {"id": 1, "body": "b"}, state=r)
    assert denormalize(Detail, "1", r2.entities) == Detail(id=1, name="n", body="b")


def test_from_json_defaults_then_stored_members() -> None:
    r = normalize(Todo, {"id": 1, "title": "a", "extra": "x"})
    todo = denormalize(Todo, "1", r.entities)
    assert isinstance(todo, Todo)
    assert todo.title == "a"
    assert todo.completed is False
    assert todo.user_id == 0
    assert todo.author is None
    assert todo.extra == "x"  # type: ignore[attr-defined]


# ----- instances -------------------------------------------------------------------------------
def test_instances_immutable_and_equal_by_value() -> None:
    a = Todo(id=1, title="a")
    b = Todo(id=1, title="a")
    assert a == b
    assert a != Todo(id=1, title="b")
    assert hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a.title = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del a.title
    assert a.title == "a"


def test_instance_defaults_not_shared() -> None:
    class L(Entity):
        id: int = 0
        tags: list[str] = []

    one, two = L(), L()
    assert one.tags == [] and one.tags is not two.tags
    assert one.tags is not L.tags


def test_to_dict_and_replace() -> None:
    t = Todo(id=1, author=User(id=2, username="u"))
    d = t.to_dict()
    assert d["author"] == {"id": 2, "username": "u", "name": ""}
    t2 = t.replace(title="z")
    assert t2.title == "z" and t.title == ""
    assert isinstance(t2, Todo)


# ----- pk() sees the response data only ---------------------------------------------------
class Slugged(Entity):
    id: str = "0"
    slug: str = ""
    indexes = ("slug",)

    def pk(self, parent: Any = None, key: str | None = None, args: tuple[Any, ...] = ()) -> str | None:
        return self.id


class Pair(Entity):
    a: str = ""
    b: str = ""

    def pk(self, parent: Any = None, key: str | None = None, args: tuple[Any, ...] = ()) -> str | None:
        return f"{self.a}/{self.b}"


def test_custom_pk_does_not_see_field_defaults() -> None:
    """`id: str = "0"`: a record without an id has no pk, so a query falls back to the index."""
    assert Slugged.compute_pk({"slug": "x"}, None, None, ()) is None
    with pytest.raises(SchemaError, match="Missing usable primary key"):
        normalize(Slugged, {"slug": "x"})
    r = normalize(Slugged, {"id": "5", "slug": "five"})
    from restlayer.schema import MemoCache

    assert MemoCache().query(Slugged, [{"slug": "five"}], r) == Slugged(id="5", slug="five")


def test_composite_pk_with_a_missing_part_is_refused() -> None:
    with pytest.raises(SchemaError, match="Missing usable primary key"):
        normalize(Pair, {"a": "a"})
    assert normalize(Pair, {"a": "a", "b": "b"}).result == "a/b"


def test_custom_pk_view_keeps_methods_and_class_settings() -> None:
    class Keyed(Entity):
        group: str = ""
        n: int = 0
        key = "KeyedThing"

        def pk(self, parent: Any = None, key: str | None = None, args: tuple[Any, ...] = ()) -> str | None:
            return f"{self.key}:{self.label()}"

        def label(self) -> str:
            return f"{self.group}-{self.n}"

    assert normalize(Keyed, {"group": "g", "n": 2}).result == "KeyedThing:g-2"
    assert Keyed(group="g").pk() == "KeyedThing:g-0"  # on an instance, defaults still apply


# ----- definitions colliding with the machinery ------------------------------------------------
@pytest.mark.parametrize("name", ["key", "pk", "schema", "process", "replace", "merge", "validate", "indexes"])
def test_field_named_like_the_machinery_is_refused(name: str) -> None:
    with pytest.raises(TypeError, match=repr(name)):
        type("Bad", (Entity,), {"__annotations__": {"id": "int", name: "str"}, "id": 0, name: ""})


def test_machinery_method_set_to_a_value_is_refused() -> None:
    with pytest.raises(TypeError, match="'process'"):
        type("Bad", (Entity,), {"process": None})


def test_empty_key_is_refused() -> None:
    with pytest.raises(TypeError, match="key must be a non-empty string"):
        type("Bad", (Entity,), {"key": ""})


def test_unknown_constructor_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="'titel'"):
        Todo(titel="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'titel'"):
        Todo(title="x").replace(titel="y")  # type: ignore[call-arg]
    assert Todo(title="x").replace(title="y").title == "y"
    stored: Any = Todo.from_json({"id": 1, "extra": 2})  # undeclared stored members are kept
    assert stored.replace(extra=3).extra == 3


def test_none_nested_schema_member_is_refused() -> None:
    with pytest.raises(TypeError, match=r"schema\['author'\] is None"):
        type("Bad", (Entity,), {"schema": {"author": None}})

    class Later(Entity):
        id: int = 0

    Later.schema = {"author": None}  # reassigned after class creation: refused when first used
    with pytest.raises(TypeError, match=r"schema\['author'\] is None"):
        normalize(Later, {"id": 1, "author": {"id": 2}})


def test_cyclic_entities_print_compare_and_refuse_a_plain_form() -> None:
    """repr, == and to_dict of data that contains itself used to overflow the stack."""
    data = {"id": 1, "title": "t", "author": {"id": 7, "name": "u", "todos": [{"id": 1}]}}
    result = normalize(CycleTodo, data)
    first = present(denormalize(CycleTodo, result.result, result.entities))
    second = denormalize(CycleTodo, result.result, result.entities)
    assert first is not second and first == second
    assert isinstance(first.author, CycleUser) and "..." in repr(first)
    assert first != first.replace(title="other")
    with pytest.raises(RestLayerError, match="contains itself"):
        first.to_dict()


def test_a_read_by_a_container_pk_finds_nothing() -> None:
    stored = normalize(Todo, {"id": 1, "title": "kept"})
    assert MemoCache().query(Todo, [{"id": {"a": 1}}], stored) is None
    assert MemoCache().query(Todo, [{"id": 1}], stored) == Todo(id=1, title="kept")


def test_a_read_through_a_pk_hook_that_raises_raises_naming_it() -> None:
    """It was the hook's bare KeyError (from `ctrl.cache`/`get_response` of an endpoint never fetched)."""

    class Slugged(Entity):
        id: int = 0
        slug: str = ""

        def pk(self, parent: object = None, key: str | None = None, args: tuple[object, ...] = ()) -> str | None:
            return str(self.__dict__["slug"])  # a bug: a KeyError where the pk view gives an AttributeError

    stored = normalize(Slugged, {"id": 1, "slug": "a"})
    assert MemoCache().query(Slugged, [{"slug": "a"}], stored) == Slugged(id=1, slug="a")
    with pytest.raises(SchemaError, match=r"Slugged\.pk raised KeyError: 'slug'") as info:
        MemoCache().query(Slugged, [{"id": 1}], stored)
    assert isinstance(info.value.__cause__, KeyError)
