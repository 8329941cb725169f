"""MemoCache's re-check of a table derived from the one it read: only the keys changed since are looked at.

Entity tables (`OrderedPMap`) remember their recent ancestors weakly, with the keys changed since
each; these tests compare that shortcut with the plain check of every recorded read.
"""

from __future__ import annotations

import gc
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from restlayer._pmap import OrderedPMap, changed_between
from restlayer.schema import Entity, MemoCache, normalize
from restlayer.schema._denormalize import Dep, deps_valid
from restlayer.schema._fast import dep_groups, groups_valid
from tests._present import present

RECORDS = [{"v": i} for i in range(4)]
PKS = "123456"

# One step: (version to start from, operation, pk, record index).
steps = st.lists(
    st.tuples(
        st.integers(0, 20), st.sampled_from(["set", "delete", "update"]), st.sampled_from(PKS), st.integers(0, 3)
    ),
    max_size=12,
)


def versions_from(ops: list[tuple[int, str, str, int]]) -> list[OrderedPMap[str, Any]]:
    """A tree of table versions: each step derives a new one from an earlier one."""
    out: list[OrderedPMap[str, Any]] = [OrderedPMap({pk: RECORDS[i % 4] for i, pk in enumerate(PKS[:4])})]
    for start, op, pk, r in ops:
        base = out[start % len(out)]
        if op == "set":
            out.append(base.set(pk, RECORDS[r]))
        elif op == "delete":
            out.append(base.delete(pk))
        else:
            out.append(base.update({pk: RECORDS[r], PKS[(PKS.index(pk) + 1) % len(PKS)]: RECORDS[(r + 1) % 4]}))
    return out


@settings(max_examples=300)
@given(ops=steps, read_from=st.integers(0, 20), now=st.integers(0, 20), pks=st.lists(st.sampled_from(PKS), max_size=6))
def test_re_check_through_table_lineage_agrees_with_checking_every_read(
    ops: list[tuple[int, str, str, int]], read_from: int, now: int, pks: list[str]
) -> None:
    versions = versions_from(ops)
    table = versions[read_from % len(versions)]
    recorded: list[Dep] = [("T", pk, table, table.get(pk)) for pk in pks]
    entities = {"T": versions[now % len(versions)]}
    assert groups_valid(entities, dep_groups(recorded)) == deps_valid(entities, recorded)


def test_siblings_of_one_version_know_the_keys_either_changed() -> None:
    base = OrderedPMap({"1": RECORDS[0], "2": RECORDS[1], "3": RECORDS[2]})
    a, b = base.set("1", RECORDS[3]), base.set("2", RECORDS[3])
    assert set(changed_between(a, b) or ()) == {"1", "2"}
    assert changed_between(base, a) == ("1",)
    assert changed_between(OrderedPMap({"1": RECORDS[0]}), a) is None  # unrelated: unknown


def test_lineage_holds_no_ancestor_alive_and_a_lost_one_falls_back_to_the_full_check() -> None:
    first = OrderedPMap({"1": RECORDS[0], "2": RECORDS[1]})
    middle = first.set("1", RECORDS[2])
    last = middle.set("2", RECORDS[3])
    recorded: list[Dep] = [("T", "1", middle, RECORDS[2]), ("T", "2", middle, RECORDS[1])]
    assert groups_valid({"T": last}, dep_groups(recorded)) is False  # "2" changed since
    del first
    gc.collect()
    assert last._lineage[-1][0]() is None  # the first version is gone: only weakly held
    assert groups_valid({"T": last.set("2", RECORDS[1])}, dep_groups(recorded)) is True


class LineageItem(Entity):
    id: str = ""
    name: str = ""
    key = "LineageItem"


def test_memo_read_after_an_unrelated_write_is_the_same_object_and_a_related_one_is_not() -> None:
    items = [{"id": str(i), "name": f"n{i}"} for i in range(100)]
    state = normalize([LineageItem], items)
    memo = MemoCache()
    ids = state.result[:10]
    first = present(memo.denormalize([LineageItem], ids, state.entities))
    unrelated = normalize(LineageItem, {"id": "50", "name": "changed"}, state=state)
    assert memo.denormalize([LineageItem], ids, unrelated.entities) is first
    related = normalize(LineageItem, {"id": "3", "name": "changed"}, state=unrelated)
    again = present(memo.denormalize([LineageItem], ids, related.entities))
    assert again is not first and again[3].name == "changed"
