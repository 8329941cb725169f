"""Invalidate."""

from __future__ import annotations

import pytest

from restlayer.errors import SchemaError
from restlayer.schema import INVALID, Invalidate, Union, denormalize, normalize

from ._models import Group, Todo, User, meta


def user_store() -> object:
    return normalize(User, {"id": "1", "username": "a"}, meta=meta(1000))


def test_invalidate_marks_deleted_with_incoming_meta() -> None:
    """Check: normalize(Invalidate(User), {"id": "1"}, state=<User 1 stored>, meta=m)."""
    store = user_store()
    m = meta(2000)
    r = normalize(Invalidate(User), {"id": "1"}, state=store, meta=m)
    assert r.result == "1"
    assert r.entities["User"]["1"] is INVALID
    assert r.entities_meta["User"]["1"] == m
    assert denormalize(User, "1", r.entities) is None
    # the old state still holds the user
    assert store.entities["User"]["1"] == {"id": "1", "username": "a"}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("value", "pk"), [("1", "1"), (1, "1"), (0, "0")])
def test_invalidate_primitive_is_the_pk(value: object, pk: str) -> None:
    r = normalize(Invalidate(User), value, state=user_store())
    assert r.result == pk
    assert r.entities["User"][pk] is INVALID


@pytest.mark.parametrize("value", [{}, {"id": None}, "", None, "undefined", {"id": "undefined"}])
def test_invalidate_without_pk_raises_400(value: object) -> None:
    with pytest.raises(SchemaError) as info:
        normalize(Invalidate(User), value)
    assert info.value.status == 400


def test_invalidate_union() -> None:
    schema = Invalidate(Union({"users": User, "groups": Group}, "type"))
    r = normalize(schema, {"id": "4", "type": "groups"})
    assert r.result == {"id": "4", "schema": "groups"}
    assert r.entities["Group"]["4"] is INVALID


MEMBERS = Union({"users": User, "groups": Group}, "type")


@pytest.mark.parametrize("reply", [{"id": 4}, "4", 4], ids=["params without the type", "pk text", "pk number"])
def test_invalidate_union_without_its_type_deletes_the_one_member_storing_that_pk(reply: object) -> None:
    """A delete's reply (or, for a 204, its params) rarely names the type: it failed after the server deleted."""
    state = normalize([MEMBERS], [{"id": 4, "type": "groups"}, {"id": 5, "type": "users"}])
    r = normalize(Invalidate(MEMBERS), reply, state=state)
    assert r.result == {"id": "4", "schema": "groups"}
    assert r.entities["Group"]["4"] is INVALID and r.entities["User"]["5"] is not INVALID


@pytest.mark.parametrize("stored", [[], [{"id": 4, "type": "groups"}, {"id": 4, "type": "users"}]], ids=["none", "two"])
def test_invalidate_union_without_its_type_and_no_single_member_storing_the_pk_raises(stored: list[object]) -> None:
    state = normalize([MEMBERS], stored)
    with pytest.raises(SchemaError, match="could not pick a Union member") as info:
        normalize(Invalidate(MEMBERS), {"id": 4}, state=state)
    assert info.value.status == 400


def test_reply_to_request_started_before_delete_keeps_marker() -> None:
    store = normalize(Invalidate(User), {"id": "1"}, meta=meta(5000))
    r = normalize(User, {"id": "1", "username": "back"}, state=store, meta=meta(10))
    assert r.entities["User"]["1"] is INVALID
    assert r.entities_meta["User"]["1"]["fetched_at"] == 5000  # still stamped with the delete's start
    assert denormalize(User, "1", r.entities) is None


def test_reply_to_request_started_after_delete_replaces_marker() -> None:
    store = normalize(Invalidate(User), {"id": "1"}, meta=meta(5000))
    r = normalize(User, {"id": "1", "username": "back"}, state=store, meta=meta(5000))
    assert r.entities["User"]["1"] == {"id": "1", "username": "back"}
    assert denormalize(User, "1", r.entities) == User.from_json({"id": "1", "username": "back"})


def test_invalidate_inside_object() -> None:
    r = normalize({"deleted": Invalidate(Todo)}, {"deleted": {"id": 3}})
    assert r.result == {"deleted": "3"}
    assert r.entities["Todo"]["3"] is INVALID
