"""The store's persistent maps: a bulk update (most of a table rewritten) agrees with per-key inserts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from restlayer._pmap import EMPTY, OrderedPMap, PMap, changed_between

KEYS = [str(i) for i in range(150)]

# One step on the table: (operation, first key, how many keys, value).
steps = st.lists(
    st.tuples(st.sampled_from(["set", "delete", "update"]), st.integers(0, 149), st.integers(1, 149), st.integers()),
    max_size=8,
)


def apply_ops(ops: list[tuple[str, int, int, int]]) -> tuple[OrderedPMap[str, int], dict[str, int]]:
    """A table built by `ops` (some bulk, some per key) and the plain dict it must equal, in insertion order."""
    table: OrderedPMap[str, int] = OrderedPMap()
    model: dict[str, int] = {}
    for op, start, count, value in ops:
        if op == "set":
            table = table.set(KEYS[start], value)
            model[KEYS[start]] = value
        elif op == "delete":
            table = table.delete(KEYS[start])
            model.pop(KEYS[start], None)
        else:
            changes = {KEYS[(start + i) % len(KEYS)]: value + i for i in range(count)}
            table = table.update(changes)
            model.update(changes)
    return table, model


@settings(max_examples=300)
@given(ops=steps)
def test_updates_large_and_small_keep_items_and_insertion_order(ops: list[tuple[str, int, int, int]]) -> None:
    table, model = apply_ops(ops)
    assert dict(table.items()) == model
    assert table.in_order() == list(model)
    assert len(table) == len(model) and all(table.get(k) == v for k, v in model.items())


def test_a_bulk_update_leaves_the_earlier_version_as_it_was() -> None:
    base: OrderedPMap[str, int] = OrderedPMap({k: 0 for k in KEYS[:100]}).delete("5").set("5", 1)
    changes = {k: 2 for k in reversed(KEYS[50:150])}
    new = base.update(changes)
    assert dict(base.items()) == {**{k: 0 for k in KEYS[:100] if k != "5"}, "5": 1}
    assert base.in_order() == [k for k in KEYS[:100] if k != "5"] + ["5"]
    assert new.in_order() == [k for k in KEYS[:100] if k != "5"] + ["5"] + list(reversed(KEYS[100:150]))
    assert new["5"] == 1 and new["60"] == 2 and new["0"] == 0 and new.set("0", 3)["0"] == 3 and new["0"] == 0
    assert changed_between(base, new) is None  # too many keys changed to list them: readers check all


def test_a_plain_map_bulk_update_is_a_new_equal_map() -> None:
    base: PMap[str, int] = EMPTY.update({k: 0 for k in KEYS[:3]}).update({k: 1 for k in KEYS[:100]})
    new = base.update({k: 2 for k in KEYS[50:150]})
    assert base == {k: 1 for k in KEYS[:100]}
    assert new == {**{k: 1 for k in KEYS[:50]}, **{k: 2 for k in KEYS[50:150]}}
    assert new.delete("0") == {**{k: 1 for k in KEYS[1:50]}, **{k: 2 for k in KEYS[50:150]}} and "0" in new
