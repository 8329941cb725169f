"""Union."""

from __future__ import annotations

from typing import Any

import pytest

from restlayer.errors import SchemaError
from restlayer.schema import INVALID, MemoCache, Union, denormalize, normalize
from tests._present import present

from ._models import Group, User

UNION = Union({"users": User, "groups": Group}, "type")


def test_union_normalizes_to_id_and_schema() -> None:
    """Check: Union with attribute "type"."""
    r = normalize(UNION, {"id": "1", "type": "users"})
    assert r.result == {"id": "1", "schema": "users"}
    assert r.entities["User"]["1"] == {"id": "1", "type": "users"}


def test_union_function_attribute() -> None:
    """Check: a function attribute returning "groups"."""
    seen: list[Any] = []

    def attr(value: Any, parent: Any, key: Any) -> str:
        seen.append((value, parent, key))
        return "groups"

    data = {"id": "3"}
    r = normalize(Union({"users": User, "groups": Group}, attr), data)
    assert r.result == {"id": "3", "schema": "groups"}
    assert r.entities["Group"]["3"] == {"id": "3"}
    assert seen == [(data, data, None)]


def test_union_requires_attribute() -> None:
    with pytest.raises(TypeError, match="schema_attribute"):
        Union({"users": User})


def test_union_unknown_attribute_kept_as_received() -> None:
    r = normalize([UNION], [{"id": "1", "type": "cats"}, {"id": "2", "type": "users"}])
    assert r.result == [{"id": "1", "type": "cats"}, {"id": "2", "schema": "users"}]


def test_union_denormalize_picks_class() -> None:
    r = normalize([UNION], [{"id": "1", "type": "users", "username": "u"}, {"id": "2", "type": "groups"}])
    out = denormalize([UNION], r.result, r.entities)
    assert out == [
        User.from_json({"id": "1", "type": "users", "username": "u"}),
        Group.from_json({"id": "2", "type": "groups"}),
    ]
    assert isinstance(out[0], User) and isinstance(out[1], Group)


def test_union_denormalize_unnormalized_dict_classified_by_attribute() -> None:
    out = denormalize(UNION, {"id": "5", "type": "groups", "name": "g"}, {})
    assert out == Group.from_json({"id": "5", "type": "groups", "name": "g"})


def test_union_deleted_member_dropped_from_list() -> None:
    entities: dict[str, dict[str, object]] = {"User": {"1": INVALID}, "Group": {"2": {"id": "2"}}}
    out = denormalize([UNION], [{"id": "1", "schema": "users"}, {"id": "2", "schema": "groups"}], entities)
    assert out == [Group.from_json({"id": "2"})]


def test_union_in_entity_field() -> None:
    from restlayer.schema import Entity

    class Event(Entity):
        id: int = 0
        actor: Any = None
        schema = {"actor": UNION}

    r = normalize(Event, {"id": 1, "actor": {"id": "9", "type": "users"}})
    assert r.entities["Event"]["1"]["actor"] == {"id": "9", "schema": "users"}
    assert present(denormalize(Event, "1", r.entities)).actor == User.from_json({"id": "9", "type": "users"})


def test_union_wrong_type_raises() -> None:
    with pytest.raises(SchemaError):
        normalize({"u": UNION}, {"u": 5})


def test_union_query_by_attribute() -> None:
    r = normalize(UNION, {"id": "1", "type": "users"})
    assert MemoCache().query(UNION, [{"id": "1", "type": "users"}], r) == User.from_json({"id": "1", "type": "users"})
    # an attribute naming no member: every member is tried in turn, as without the attribute
    assert MemoCache().query(UNION, [{"id": "1", "type": "nope"}], r) == User.from_json({"id": "1", "type": "users"})
    assert MemoCache().query(UNION, [{"id": "404", "type": "users"}], r) is None


def test_union_query_without_type_field_tries_each_member() -> None:
    """No attribute in the arguments: the first member that finds a stored entity answers."""
    r = normalize([UNION], [{"id": "1", "type": "users"}, {"id": "2", "type": "groups", "name": "g"}])
    memo = MemoCache()
    assert memo.query(UNION, [{"id": "1"}], r) == User.from_json({"id": "1", "type": "users"})
    assert memo.query(UNION, [{"id": "2"}], r) == Group.from_json({"id": "2", "type": "groups", "name": "g"})
    assert memo.query(UNION, ["2"], r) == Group.from_json({"id": "2", "type": "groups", "name": "g"})
    assert memo.query(UNION, [{"id": "3"}], r) is None


@pytest.mark.parametrize("bad", [["users"], {"a": 1}])
def test_union_type_attribute_of_wrong_type_is_a_schema_error_naming_the_path(bad: Any) -> None:
    with pytest.raises(SchemaError, match="must be a string") as info:
        normalize({"items": [UNION]}, {"items": [{"id": "1", "type": "users"}, {"id": "2", "type": bad}]})
    assert info.value.path == ("items", 1)


def test_union_key() -> None:
    assert UNION.key == "User;Group"
