"""Array, Object (and their dict/list shorthands) and Values."""

from __future__ import annotations

from typing import Any

import pytest

from restlayer.errors import SchemaError
from restlayer.schema import INVALID, Array, Object, Values, denormalize, normalize

from ._models import Todo, User


def test_array_shorthand_and_class_agree() -> None:
    data = [{"id": 1}, {"id": 2}]
    a = normalize([Todo], data)
    b = normalize(Array(Todo), data)
    assert a.result == b.result == ["1", "2"]
    assert a.entities == b.entities


def test_array_keeps_none_items_as_none_both_ways() -> None:
    """A `None` member of a list stays `None` (normalize and denormalize); missing ids are dropped."""
    r = normalize([Todo], [{"id": 1}, None, {"id": 2}])
    assert r.result == ["1", None, "2"]
    assert denormalize([Todo], r.result, r.entities) == [Todo(id=1), None, Todo(id=2)]
    assert denormalize([Todo], ["1", None, "404"], r.entities) == [Todo(id=1), None]
    nested = normalize({"items": [Todo]}, {"items": [None, {"id": 3}]})
    assert nested.result == {"items": [None, "3"]}


def test_array_of_dict_input_uses_values() -> None:
    r = normalize([Todo], {"a": {"id": 1}, "b": {"id": 2}})
    assert r.result == ["1", "2"]


def test_array_wrong_type_raises() -> None:
    with pytest.raises(SchemaError):
        normalize({"items": [Todo]}, {"items": 5})


def test_array_denormalize_drops_missing_and_deleted() -> None:
    entities = {"Todo": {"1": {"id": 1}, "2": INVALID}}
    assert denormalize([Todo], ["1", "2", "3"], entities) == [Todo(id=1)]


def test_object_normalizes_named_members_only() -> None:
    data = {"results": [{"id": 1}], "next": "cursor", "extra": {"id": 5}}
    r = normalize({"results": [Todo], "next": None}, data)
    assert r.result == {"results": ["1"], "next": "cursor", "extra": {"id": 5}}
    assert set(r.entities) == {"Todo"}
    assert data["results"] == [{"id": 1}]  # input untouched


def test_object_class_equals_shorthand() -> None:
    data = {"results": [{"id": 1}], "next": None}
    assert normalize(Object({"results": [Todo]}), data).result == normalize({"results": [Todo]}, data).result


def test_object_missing_member_left_out() -> None:
    r = normalize({"results": [Todo], "user": User}, {"results": [{"id": 1}]})
    assert r.result == {"results": ["1"]}


def test_object_denormalize_member_missing_is_none_deleted_is_invalid() -> None:
    """Member of a dict schema: missing -> None, deleted -> whole dict invalid."""
    entities = {"Todo": {"1": {"id": 1}, "2": INVALID}}
    schema = {"t": Todo, "n": None}
    assert denormalize(schema, {"t": "1", "n": 3}, entities) == {"t": Todo(id=1), "n": 3}
    assert denormalize(schema, {"t": "9", "n": 3}, entities) == {"t": None, "n": 3}
    assert denormalize(schema, {"t": "2", "n": 3}, entities) is None
    assert denormalize({"t": Todo}, {"t": "2"}, entities) is None


def test_nested_object_invalid_propagates() -> None:
    entities = {"Todo": {"2": INVALID}}
    assert denormalize({"outer": {"t": Todo}}, {"outer": {"t": "2"}}, entities) is None


def test_values_normalize_drops_none() -> None:
    """Check: Values(User) with a None member."""
    r = normalize(Values(User), {"a": {"id": "1"}, "b": {"id": "2"}, "c": None})
    assert r.result == {"a": "1", "b": "2"}
    assert r.entities["User"] == {"1": {"id": "1"}, "2": {"id": "2"}}


def test_values_denormalize_drops_missing_and_deleted() -> None:
    """Check: Values(Todo) with Todo 2 deleted gives only a."""
    entities = {"Todo": {"1": {"id": 1}, "2": INVALID}}
    assert denormalize(Values(Todo), {"a": "1", "b": "2"}, entities) == {"a": Todo(id=1)}
    assert denormalize(Values(Todo), {"a": "1", "c": "3"}, entities) == {"a": Todo(id=1)}


def test_values_wrong_type_raises() -> None:
    with pytest.raises(SchemaError):
        normalize(Values(User), [1, 2])


def test_values_of_plain_values() -> None:
    r = normalize({"counts": Values(None)}, {"counts": {"a": 1, "b": None}})
    assert r.result == {"counts": {"a": 1}}


def test_list_schema_must_hold_one_schema() -> None:
    with pytest.raises(TypeError):
        normalize([Todo, User], [])


def test_non_schema_class_rejected() -> None:
    with pytest.raises(TypeError):
        normalize(int, {"a": 1})


def test_plain_value_schema_keeps_data() -> None:
    r = normalize(None, {"a": 1})
    assert r.result == {"a": 1}
    assert r.entities == {}


def test_denormalize_list_within_object() -> None:
    entities: dict[str, Any] = {"Todo": {"1": {"id": 1, "author": "7"}}, "User": {"7": {"id": 7}}}
    out = denormalize({"results": [Todo]}, {"results": ["1"], "next": 2}, entities)
    assert out == {"results": [Todo(id=1, author=User(id=7))], "next": 2}
