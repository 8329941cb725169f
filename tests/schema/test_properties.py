"""Property tests: normalize then denormalize gives the input back; renormalizing is idempotent."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from restlayer.schema import Collection, Entity, MemoCache, Values, denormalize, normalize, to_plain


class PUser(Entity):
    id: int = 0
    username: str = ""
    admin: bool = False


class PTodo(Entity):
    id: int = 0
    title: str = ""
    completed: bool = False
    tags: list[str] = []
    author: PUser | None = None
    schema = {"author": PUser}


class PNote(Entity):
    id: str = ""
    body: str = ""


class PMember(Entity):
    """A user with a nested list of notes (another table, so there is no cycle)."""

    id: int = 0
    username: str = ""
    notes: list[PNote] = []
    pinned: PNote | None = None
    schema = {"notes": [PNote], "pinned": PNote}


TEXT = st.text(max_size=8)
IDS = st.integers(min_value=0, max_value=30)


@st.composite
def world(draw: st.DrawFn) -> dict[str, dict[Any, dict[str, Any]]]:
    """One consistent record per entity id, every declared field present."""
    users = {i: {"id": i, "username": draw(TEXT), "admin": draw(st.booleans())} for i in draw(st.sets(IDS, max_size=5))}
    user_ids = sorted(users)
    todos = {}
    for i in draw(st.sets(IDS, max_size=8)):
        with_author = draw(st.booleans())
        author = users[draw(st.sampled_from(user_ids))] if user_ids and with_author else None
        todos[i] = {
            "id": i,
            "title": draw(TEXT),
            "completed": draw(st.booleans()),
            "tags": draw(st.lists(TEXT, max_size=3)),
            "author": author,
        }
    notes = {
        s: {"id": s, "body": draw(TEXT)}
        for s in draw(st.sets(st.text(alphabet="abcdef", min_size=1, max_size=3), max_size=6))
    }
    return {"users": users, "todos": todos, "notes": notes}


@st.composite
def case(draw: st.DrawFn) -> tuple[Any, Any, tuple[Any, ...]]:
    """(schema, data, args) for one of several schema shapes over a consistent world."""
    w = draw(world())
    todos = list(w["todos"].values())
    notes = list(w["notes"].values())
    pick_todos = draw(st.lists(st.sampled_from(todos), max_size=6)) if todos else []
    shape = draw(st.sampled_from(["list", "object", "values", "collection", "members", "single"]))
    if shape == "list":
        return [PTodo], pick_todos, ()
    if shape == "object":
        return {"results": [PTodo], "next": None}, {"results": pick_todos, "next": draw(st.none() | TEXT)}, ()
    if shape == "values":
        return Values(PTodo), {str(t["id"]): t for t in pick_todos}, ()
    if shape == "collection":
        args = ({"userId": draw(IDS)},)
        return Collection([PTodo]), pick_todos, args
    if shape == "single" and todos:
        return PTodo, draw(st.sampled_from(todos)), ()
    members = []
    for i in draw(st.sets(IDS, max_size=4)):
        chosen = draw(st.lists(st.sampled_from(notes), max_size=4)) if notes else []
        with_pin = draw(st.booleans())
        pinned = draw(st.sampled_from(notes)) if notes and with_pin else None
        members.append({"id": i, "username": draw(TEXT), "notes": chosen, "pinned": pinned})
    return [PMember], members, ()


@settings(max_examples=150, deadline=None)
@given(case())
def test_roundtrip_to_plain(c: tuple[Any, Any, tuple[Any, ...]]) -> None:
    schema, data, args = c
    r = normalize(schema, data, args=args)
    out = denormalize(schema, r.result, r.entities, args)
    assert to_plain(out) == data
    memo = MemoCache()
    memoized = memo.denormalize(schema, r.result, r.entities, args)
    assert memoized == out
    assert memo.denormalize(schema, r.result, r.entities, args) is memoized


@settings(max_examples=150, deadline=None)
@given(case())
def test_renormalize_is_idempotent(c: tuple[Any, Any, tuple[Any, ...]]) -> None:
    schema, data, args = c
    r = normalize(schema, data, args=args)
    snapshot = r.entities.to_dict()
    r2 = normalize(schema, data, args=args, state=r)
    assert r2.entities == r.entities
    assert r2.result == r.result
    assert r.entities.to_dict() == snapshot  # the first state is untouched
    assert to_plain(denormalize(schema, r2.result, r2.entities, args)) == data
