"""The shapes of MemoCache's instance-cache entries (compact entries, same results and invalidation).

An entity without nested members whose stored record has exactly its fields, in order,
shares the record's dict, and the instance alone is its cache entry (it read that record
alone); every other entity keeps a (record, instance, deps) entry. Each test runs on the
engine this run uses, on the plan executor run from its Python source, and on the general
engine alone, and some mix them on one MemoCache.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from restlayer.schema import Entity, MemoCache, NormalizedResult, _exec, _fast, denormalize, normalize
from restlayer.schema._base import compile_schema
from restlayer.schema._denormalize import Dep, DepItem, DepRun, Unvisit, deps_valid, expand_deps
from restlayer.schema._fast import dep_groups, groups_valid
from tests._present import present

from ._models import meta


class Leaf(Entity):
    id: str = ""
    name: str = ""
    key = "EntryLeaf"


class Branch(Entity):
    id: str = ""
    leaf: Leaf | None = None
    key = "EntryBranch"
    schema = {"leaf": Leaf}


@pytest.fixture(autouse=True, params=["as run", "executor", "general"])
def engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test on this run's engine, on the executor from source, and with the fast path off."""
    before = _fast.engine()
    if request.param == "executor":
        _fast.use_engine("executor")
    if request.param == "general":
        with _fast.disabled():
            yield "general"
    else:
        yield _fast.engine()
    _fast.use_engine(before)


def leaves() -> NormalizedResult:
    """Leaf 1 (exactly its fields), 2 (fields in another order), 3 (a default filled in)."""
    return normalize([Leaf], [{"id": "1", "name": "a"}, {"name": "b", "id": "2"}, {"id": "3"}], meta=meta(1000))


def test_an_instance_sharing_its_record_is_its_own_entry(engine: str) -> None:
    state = leaves()
    memo = MemoCache()
    read = present(memo.denormalize([Leaf], state.result, state.entities))
    table = state.entities["EntryLeaf"]
    entries = memo._entities[Leaf]
    if engine == "general":  # the general engine copies: every entry is a tuple
        assert all(isinstance(entry, tuple) for entry in entries.values())
        assert vars(read[0]) is not table["1"]
    else:
        assert entries["1"] is read[0] and vars(read[0]) is table["1"]
        assert isinstance(entries["2"], tuple) and entries["2"][1] is read[1]  # its own dict, in class order
        assert isinstance(entries["3"], tuple) and vars(read[2]) == {"id": "3", "name": ""}
        assert list(vars(read[1])) == ["id", "name"]
    assert read == [Leaf(id="1", name="a"), Leaf(id="2", name="b"), Leaf(id="3")]
    with pytest.raises(AttributeError, match="immutable"):
        read[0].name = "changed"  # type: ignore[misc]


def test_a_compact_entry_is_shared_by_reads_until_its_record_changes() -> None:
    state = leaves()
    memo = MemoCache()
    first = present(memo.denormalize([Leaf], state.result, state.entities))
    one = memo.denormalize_detail(Leaf, "1", state.entities)
    assert one.data is first[0]
    assert one.deps == [("EntryLeaf", "1", state.entities["EntryLeaf"], state.entities["EntryLeaf"]["1"])]
    changed = normalize(Leaf, {"id": "1", "name": "A"}, state=state, meta=meta(2000))
    table = changed.entities["EntryLeaf"]
    again = present(memo.denormalize([Leaf], state.result, changed.entities))
    assert again is not first and again[0] is not first[0] and again[0].name == "A"
    assert again[1] is first[1] and again[2] is first[2]
    one = memo.denormalize_detail(Leaf, "1", changed.entities)
    assert one.data is again[0]
    assert one.deps == [("EntryLeaf", "1", table, table["1"])]  # the table it was read from this time
    assert memo.denormalize_detail(Leaf, "1", state.entities).data == first[0]  # the older store reads the old data


def test_a_compact_entry_holds_for_every_engine_sharing_the_memo() -> None:
    """Entries made by one engine are read by the other (the general engine runs what the fast path cannot)."""
    state = leaves()
    memo = MemoCache()
    fast = present(memo.denormalize([Leaf], state.result, state.entities))
    with _fast.disabled():
        general = present(memo.denormalize([Leaf], list(state.result), state.entities))
        pair = memo.denormalize_detail(Leaf, "1", state.entities)
    assert general[0] is fast[0] and general[1] is fast[1]
    assert pair.refs == [("EntryLeaf", "1")]
    other = MemoCache()
    with _fast.disabled():
        made = present(other.denormalize([Leaf], state.result, state.entities))
    assert present(other.denormalize(Leaf, "1", state.entities)) is made[0]
    assert present(other.denormalize([Leaf], list(state.result), state.entities))[2] is made[2]


def test_an_embedded_compact_entry_invalidates_its_embedder() -> None:
    state = normalize([Branch], [{"id": "b", "leaf": {"id": "1", "name": "a"}}], meta=meta(1000))
    memo = MemoCache()
    leaf = present(memo.denormalize(Leaf, "1", state.entities))
    branch = present(memo.denormalize(Branch, "b", state.entities))
    assert branch.leaf is leaf
    assert memo.denormalize(Branch, "b", state.entities) is branch
    changed = normalize(Leaf, {"id": "1", "name": "A"}, state=state, meta=meta(2000))
    renewed = present(memo.denormalize(Branch, "b", changed.entities))
    assert renewed is not branch and renewed.leaf is not leaf and present(renewed.leaf).name == "A"
    assert present(memo.denormalize(Leaf, "1", changed.entities)) is renewed.leaf


def test_prune_keeps_current_compact_entries_and_drops_stale_ones() -> None:
    state = leaves()
    memo = MemoCache()
    first = present(memo.denormalize([Leaf], state.result, state.entities))
    changed = normalize(Leaf, {"id": "1", "name": "A"}, state=state, meta=meta(2000))
    gone = normalize(Leaf, {"id": "9"}, state=changed, meta=meta(2000))
    memo.prune(gone.entities)
    assert set(memo._entities[Leaf]) == {"2", "3"}
    again = present(memo.denormalize([Leaf], state.result, gone.entities))
    assert again[1] is first[1] and again[2] is first[2] and again[0] is not first[0]
    memo.prune({})
    assert memo._entities == {}


def test_a_one_off_read_shares_and_caches_its_instances_too() -> None:
    state = normalize([Leaf], [{"id": "1", "name": "a"}, {"id": "1", "name": "a"}])
    read = present(denormalize([Leaf], ["1", "1"], state.entities))
    assert read[0] is read[1]  # one instance per read for one pk
    unvisit = Unvisit(state.entities)
    assert unvisit.slots(Leaf) is unvisit.slots(Leaf) and unvisit.cache == {Leaf: {}}


def runs_of(deps: list[Dep], split: list[bool]) -> list[DepItem]:
    """`deps` with consecutive reads of one table merged into `DepRun`s (`split`: reads kept single)."""
    out: list[DepItem] = []
    for i, dep in enumerate(deps):
        key, pk, table, record = dep
        if split[i % len(split)]:
            out.append(dep)
            continue
        last = out[-1] if out else None
        if not isinstance(last, DepRun) or last.key != key or last.table is not table:
            last = DepRun(key, table)
            out.append(last)
        last.pks.append(pk)
        last.records.append(record)
    return out


@settings(max_examples=200)
@given(
    deps=st.lists(
        st.tuples(st.sampled_from("ab"), st.sampled_from("123"), st.integers(0, 2), st.integers(0, 3)), max_size=8
    ),
    now=st.dictionaries(st.sampled_from("abc"), st.integers(0, 2)),
    split=st.lists(st.booleans(), min_size=1, max_size=4),
    start=st.integers(0, 2),
)
def test_runs_of_reads_check_as_the_single_reads_do(
    deps: list[Any], now: dict[str, int], split: list[bool], start: int
) -> None:
    records = [{"v": i} for i in range(3)] + [None]
    table_versions = [{pk: records[(int(pk) + v) % 4] for pk in "123"} for v in range(3)]
    recorded: list[Dep] = [(key, pk, table_versions[t], records[r]) for key, pk, t, r in deps]
    entities = {key: table_versions[v] for key, v in now.items()}
    merged = runs_of(recorded, split)
    assert expand_deps(merged) == recorded
    plain = deps_valid(entities, list(recorded))
    assert deps_valid(entities, merged) == plain
    assert _exec.deps_valid(entities, merged, 0) == plain
    assert groups_valid(entities, dep_groups(merged)) == plain
    assert expand_deps(merged) == recorded  # grouping borrows a run's lists, never changes them
    if merged and (not isinstance(merged[0], DepRun) or len(merged[0].pks) == 1):  # the check from an offset
        assert deps_valid(entities, merged, min(start, 1)) == deps_valid(entities, list(recorded), min(start, 1))


def test_a_list_of_plain_entities_records_its_reads_as_runs(engine: str) -> None:
    state = normalize([Leaf], [{"id": "1", "name": "a"}, {"name": "b", "id": "2"}, {"id": "3"}], meta=meta(1000))
    table = state.entities["EntryLeaf"]
    pks = ["1", "9", "2", "3", "1"] * 2
    detail = MemoCache().denormalize_detail([Leaf], pks, state.entities)
    assert detail.deps == [("EntryLeaf", pk, table, table.get(pk)) for pk in pks]
    assert detail.refs == [("EntryLeaf", pk) for pk in ["1", "9", "2", "3"]]
    assert [x.id for x in detail.data] == ["1", "2", "3", "1"] * 2 and detail.data[0] is detail.data[3]
    for items, runs in ((["1", "2", "3"] * 3, ["DepRun", "tuple", "tuple"] * 3), (["1", "1", "1"], ["tuple"] * 3)):
        unvisit = Unvisit(state.entities, checking=True)
        _fast.denormalize_with(unvisit, compile_schema([Leaf]), items)
        kinds = [type(dep).__name__ for dep in unvisit.deps]
        # "2" and "3" need their own instance dict: each is a read of its own between runs;
        # a list shorter than RUN_MIN records single reads
        assert kinds == (["tuple"] * len(items) if engine == "general" else runs)
