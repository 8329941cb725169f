"""MemoCache over cyclic data: after any sequence of writes, a memoized read holds the same data as a plain one.

Users own todos whose author is a user again (a cycle), and todos carry tags below the
cycle; random writes change any of them, by a nested reply or one entity at a time.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from restlayer.schema import Entity, MemoCache, denormalize, normalize

from ._models import CycleTag, CycleTodo, CycleUser

ids = st.integers(1, 3)
names = st.sampled_from(["a", "b", "c"])
tags = st.builds(lambda i, n: {"id": i, "name": n}, ids, names)
todos = st.builds(lambda i, t, a, g: {"id": i, "title": t, "author": a, "tag": g}, ids, names, ids, tags)
users = st.builds(lambda i, n, ts: {"id": i, "name": n, "todos": ts}, ids, names, st.lists(todos, max_size=3))
entity_writes = (
    st.tuples(st.just(CycleUser), users) | st.tuples(st.just(CycleTodo), todos) | st.tuples(st.just(CycleTag), tags)
)
writes = st.lists(entity_writes, min_size=1, max_size=6)


def unrolled(value: object, depth: int = 0) -> object:
    """The data of `value`, cycles unrolled to a fixed depth (identity plays no part)."""
    if depth > 6:
        return "..."
    if isinstance(value, Entity):
        return (type(value).__name__, {k: unrolled(v, depth + 1) for k, v in sorted(value.__dict__.items())})
    if isinstance(value, list):
        return [unrolled(v, depth + 1) for v in value]
    return value


@settings(max_examples=60)
@given(writes)
def test_memoized_reads_of_cyclic_data_match_plain_reads(steps: list[tuple[type[Entity], dict[str, Any]]]) -> None:
    memo = MemoCache()
    state = None
    for n, (schema, data) in enumerate(steps):
        state = normalize(schema, data, state=state, meta={"fetched_at": n, "date": n, "expires_at": 10**9})
        for cls in (CycleUser, CycleTodo, CycleTag):
            for pk in map(str, range(1, 4)):
                memoized = memo.denormalize(cls, pk, state.entities)
                assert unrolled(memoized) == unrolled(denormalize(cls, pk, state.entities)), (cls.key, pk, n)
