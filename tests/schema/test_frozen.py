"""Stored data is read-only: nothing a caller holds aliases the store (lists and dicts are frozen copies)."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

from restlayer.core import Controller
from restlayer.errors import ReadOnlyError, SchemaError
from restlayer.rest import RestEndpoint
from restlayer.schema import Entity, MemoCache, denormalize, normalize
from tests._present import present, record


class Tagged(Entity):
    id: int = 0
    tags: list[str] = []
    extra: dict[str, Any] = {}


def test_entity_list_field_cannot_change_the_store_or_old_snapshots() -> None:
    r = normalize(Tagged, {"id": 1, "tags": ["a"], "extra": {"k": [1]}})
    snapshot = r.entities
    t: Any = denormalize(Tagged, "1", r.entities)
    with pytest.raises(TypeError, match="read-only"):
        t.tags.append("oops")
    with pytest.raises(TypeError, match="read-only"):
        t.extra["k"].append(2)
    with pytest.raises(TypeError, match="read-only"):
        t.extra["new"] = 1
    assert snapshot["Tagged"]["1"]["tags"] == ["a"]
    assert present(MemoCache().denormalize(Tagged, "1", r.entities)).tags == ["a"]


def test_caller_input_is_copied_not_referenced() -> None:
    data: Any = {"id": 1, "tags": ["a"], "extra": {"k": [1]}}
    r = normalize(Tagged, data)
    data["tags"].append("later")
    data["extra"]["k"].append(2)
    assert r.entities["Tagged"]["1"]["tags"] == ["a"]
    assert present(denormalize(Tagged, "1", r.entities)).extra == {"k": [1]}


def test_dict_schema_literal_members_and_schemaless_results_are_frozen() -> None:
    page: Any = {"results": [{"id": 1}], "meta": {"pages": [1, 2]}}
    r = normalize({"results": [Tagged], "meta": None}, page)
    page["meta"]["pages"].append(3)
    assert r.result["meta"] == {"pages": [1, 2]}
    raw: Any = {"a": [1, {"b": [2]}]}
    stored: Any = normalize(None, raw).result
    raw["a"][1]["b"].append(3)
    assert stored == {"a": [1, {"b": [2]}]}
    with pytest.raises(TypeError):
        stored["a"][1]["b"].append(3)


def test_frozen_values_still_behave_as_plain_data() -> None:
    value: Any = normalize(None, {"a": [1, (2, [3])], "b": {"c": None}}).result
    assert isinstance(value, dict) and isinstance(value["a"], list)
    assert value == {"a": [1, (2, [3])], "b": {"c": None}}
    assert json.loads(json.dumps(value)) == {"a": [1, [2, [3]]], "b": {"c": None}}
    copied = copy.deepcopy(value)
    copied["a"].append(4)  # copies are plain and mutable
    assert type(copied) is dict and type(copy.copy(value["a"])) is list
    assert type(pickle.loads(pickle.dumps(value))) is dict
    for change in (
        lambda: value["a"].extend([1]),
        lambda: value["a"].sort(),
        lambda: value.pop("a"),
        lambda: value.update({}),
        lambda: value["a"].__setitem__(0, 1),
    ):
        with pytest.raises(TypeError):
            change()


def test_controller_values_do_not_alias_the_store() -> None:
    """A dict given to set_response, and what get_response returns, never share memory with the store."""
    ctrl = Controller()
    try:
        ep = RestEndpoint(path="/things/:id", url_prefix="http://127.0.0.1:9")
        sent: Any = {"id": 1, "items": ["a"]}
        ctrl.set_response(ep, {"id": 1}, sent)
        sent["items"].append("later")
        got = ctrl.get_response(ep, {"id": 1}).data
        assert got == {"id": 1, "items": ["a"]}
        with pytest.raises(TypeError):
            got["items"].append("oops")
        tagged = RestEndpoint(path="/tagged/:id", url_prefix="http://127.0.0.1:9", schema=Tagged)
        ctrl.set_response(tagged, {"id": 1}, {"id": 1, "tags": ["a"]})
        before = ctrl.get_state()
        with pytest.raises(TypeError):
            present(ctrl.get(Tagged, {"id": 1})).tags.append("oops")
        assert record(before, "Tagged", "1")["tags"] == ["a"]
    finally:
        ctrl.close()


def test_deep_plain_data_is_stored_and_self_containing_data_is_refused() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(5_000):
        node.append([])
        node = node[0]
    stored = normalize(Tagged, {"id": 1, "extra": {"deep": deep}}).entities["Tagged"]["1"]["extra"]["deep"]
    levels = 0
    while stored:
        with pytest.raises(TypeError):
            stored.append(1)
        stored, levels = stored[0], levels + 1
    assert levels == 5_000
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(SchemaError, match="contains itself"):
        normalize(Tagged, {"id": 1, "extra": loop})
    with pytest.raises(SchemaError, match="contains itself"):
        normalize(None, [loop])


@pytest.mark.parametrize("case", ["new", "refetch", "older reply", "twice in one reply"])
def test_no_write_path_keeps_or_changes_the_callers_dict(case: str) -> None:
    """A stored record is never the caller's dict, its lists are frozen copies, the caller's dict stays as it was."""
    stored = normalize([Tagged], [{"id": 1, "tags": ["old"], "extra": {}}], meta={"fetched_at": 10})
    row: Any = {"id": 1, "tags": ["a"]}
    rows = [row, {"id": 1, "tags": ["a"]}] if case == "twice in one reply" else [row]
    state = None if case == "new" else stored
    fetched_at = 5 if case == "older reply" else 20
    r = normalize([Tagged], rows, state=state, meta={"fetched_at": fetched_at})
    kept = r.entities["Tagged"]["1"]
    assert row == {"id": 1, "tags": ["a"]} and type(row["tags"]) is list
    assert kept is not row and kept["tags"] is not row["tags"]
    assert kept["tags"] == (["old"] if case == "older reply" else ["a"])
    with pytest.raises(TypeError, match="read-only"):
        kept["tags"].append("x")
    row["tags"].append("later")
    assert r.entities["Tagged"]["1"]["tags"] == (["old"] if case == "older reply" else ["a"])


class Project(Entity):
    id: str = ""
    members: list[Tagged] = []
    roles: dict[str, Tagged] = {}


def test_memoized_results_are_read_only_so_no_reader_changes_another_ones(each_engine: str) -> None:
    """A memoized read is one object for every reader: a list or dict a reader changed in place
    changed what every later read returned (a `sort()` of one reader reordered everyone's list)."""
    from restlayer.schema import All, Values

    stored = normalize(
        [Project],
        [{"id": "p", "members": [{"id": i} for i in range(10)], "roles": {"lead": {"id": 1}}}],
    )
    members = [Tagged] * 1  # the list shorthand, long enough for the run-length read of plain entities
    rows = normalize(members, [{"id": i} for i in range(10)], state=stored)
    memo = MemoCache()

    def read(schema: Any, input: Any) -> Any:
        if isinstance(schema, All):
            return memo.query(schema, (), rows)
        return memo.denormalize(schema, input, rows.entities)

    cases: list[tuple[Any, Any]] = [
        (members, rows.result),
        ([Project], stored.result),
        (Values(Tagged), {"a": "1", "b": "2"}),
        ({"first": Tagged, "all": [Tagged]}, {"first": "1", "all": ["1", "2"]}),
        (All(Tagged), None),
    ]
    for schema, input in cases:
        got = read(schema, input)
        before = copy.deepcopy(got)
        containers = [got]
        if isinstance(got, list) and got and isinstance(got[0], Project):
            containers += [got[0].members, got[0].roles]
        for container in containers:
            with pytest.raises(TypeError, match="read-only"):
                container.clear()
        again = read(schema, input)
        assert again is got and again == before
    plain = present(denormalize(members, rows.result, rows.entities))  # not shared, read-only all the same: one rule
    with pytest.raises(TypeError, match="read-only"):
        plain.sort(key=lambda t: -t.id)
    mine = list(plain)
    mine.sort(key=lambda t: -t.id)  # a copy is the caller's own
    assert [t.id for t in mine][:2] == [9, 8]


async def test_a_fetched_list_refuses_changes_and_every_later_read_is_unchanged(api: Any) -> None:
    """`ctrl.fetch` returns the read every `get`/`cache`/watcher shares: it is read-only."""
    ctrl = Controller()
    try:
        get_list = RestEndpoint(path="/todos", url_prefix=api.url, schema=[Tagged])
        todos = await ctrl.fetch(get_list)
        count = len(todos)
        with pytest.raises(TypeError, match="read-only"):
            todos.append(todos[0])
        with pytest.raises(TypeError, match="read-only"):
            todos.sort(key=lambda t: -t.id)
        with pytest.raises(TypeError, match="read-only"):
            todos.pop()
        assert ctrl.cache(get_list) is todos and len(todos) == count
        assert sorted(todos, key=lambda t: -t.id)[0].id == max(t.id for t in todos)  # sorted() copies
    finally:
        ctrl.close()


class _Defaulted(Entity):
    id: int = 0
    tags: list[str] = []
    extra: dict[str, list[int]] = {"k": [1]}


def test_a_mutable_default_in_a_read_is_read_only_and_not_shared_with_later_reads(each_engine: str) -> None:
    r = normalize([_Defaulted], [{"id": 1}])  # no tags or extra stored: the read fills in the defaults
    memo = MemoCache()
    read: Any = memo.denormalize([_Defaulted], r.result, r.entities)
    with pytest.raises(ReadOnlyError):
        read[0].tags.append("oops")
    with pytest.raises(ReadOnlyError):
        read[0].extra["k"].append(2)
    again: Any = memo.denormalize([_Defaulted], r.result, r.entities)
    assert again[0].tags == [] and again[0].extra == {"k": [1]}
    assert _Defaulted.tags == [] and _Defaulted.extra == {"k": [1]}
    assert present(denormalize(_Defaulted, "1", r.entities)).tags == []
