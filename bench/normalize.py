"""Schema-engine benchmark on the JavaScript original's normalizr input (../shared/bench/data.json).

Run: `.venv/bin/python -m bench.normalize [--scaling] [--max-store N] [--min-time S]`.

The first block does the work of each case of the original's benchmark (the
side-by-side harness in ../shared/bench/vs-js runs the same cases against the
original itself): medians of >= 5 batches, with the min..max spread.
`--scaling` adds normalize at 1x/4x/16x the input, a one-entity write and a
memo read with 1k/100k/1M entities stored, the garbage-collector check (an
uncached denormalize with a big store alive vs an empty one, p99 of memo-hit
reads) and memory per stored entity.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._timing import median_ops
from restlayer.schema import Entity, MemoCache, _fast, denormalize, normalize

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "data.json"
NOW = time.time() * 1000
ACTION_META = {"fetched_at": NOW, "date": NOW, "expires_at": NOW + 10_000_000}
LATER_META = {"fetched_at": NOW + 1, "date": NOW + 1, "expires_at": NOW + 10_000_001}


class BuildTypeDescription(Entity):
    id: str = ""
    internalId: str = "bt17590"
    name: str = "Auto build with Scala 2.11"
    type: str = "regular"
    paused: bool = False
    projectId: str = "OpenSourceProjects_AbsaOSS_Commons"
    key = "BuildTypeDescription"


class ProjectWithBuildTypesDescription(Entity):
    id: str = ""
    internalId: str = "project3239"
    name: str = "AbsaOSS"
    parentProjectId: str = "OpenSourceProjects"
    archived: bool = False
    buildTypes: dict[str, Any] = {"buildType": []}
    key = "ProjectWithBuildTypesDescription"
    schema = {"buildTypes": {"buildType": [BuildTypeDescription]}}


ProjectSchema = {"project": [ProjectWithBuildTypesDescription]}
BuildTypeList = [BuildTypeDescription]
Case = Callable[[], object]


def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text())
    return data


def one_project_update(data: dict[str, Any]) -> dict[str, Any]:
    """The original's setOneEntity change: a project with 3 build types, renamed, first build type toggled."""
    src = next(p for p in data["project"] if len(p["buildTypes"]["buildType"]) == 3)
    return {
        **src,
        "name": src["name"] + " (renamed)",
        "buildTypes": {
            "buildType": [
                {**b, "paused": not b["paused"]} if i == 0 else b for i, b in enumerate(src["buildTypes"]["buildType"])
            ]
        },
    }


def alternating(memo: MemoCache, schema: Any, result: Any, a: Any, b: Any) -> Case:
    """Read through `memo` from two different-but-equivalent stores in turn (every read re-checks)."""
    first = memo.denormalize(schema, result, a)
    flip = [False]

    def run() -> object:
        flip[0] = not flip[0]
        out = memo.denormalize(schema, result, b if flip[0] else a)
        if out is not first:
            raise AssertionError("memo miss: the benchmark would measure the wrong work")
        return out

    return run


def js_cases(data: dict[str, Any]) -> dict[str, Case]:
    """The original benchmark's cases, doing the same work."""
    full = normalize(ProjectSchema, data, meta=ACTION_META)
    result, entities = full.result, full.entities
    same_a, same_b = (type(entities)(dict(entities.items())) for _ in range(2))
    extra = synthetic(0, "unrelated")
    base = normalize(BuildTypeDescription, extra, state=full, meta=ACTION_META)
    changed_a = normalize(BuildTypeDescription, {**extra, "name": "a"}, state=base, meta=LATER_META).entities
    changed_b = normalize(BuildTypeDescription, {**extra, "name": "b"}, state=base, meta=LATER_META).entities
    project = one_project_update(data)
    return {
        "normalizeLong": lambda: normalize(ProjectSchema, data, meta=ACTION_META),
        "denormalizeLong donotcache": lambda: denormalize(ProjectSchema, result, entities),
        "denormalizeLong (fresh MemoCache)": lambda: MemoCache().denormalize(ProjectSchema, result, entities),
        "withCache new entities object": alternating(MemoCache(), ProjectSchema, result, same_a, same_b),
        "memo read after unrelated change": alternating(MemoCache(), ProjectSchema, result, changed_a, changed_b),
        "setOneEntity": lambda: normalize(ProjectWithBuildTypesDescription, project, state=full, meta=LATER_META),
    }


def synthetic(i: int, name: str | None = None) -> dict[str, Any]:
    """Build type s{i} (the same rule as the side-by-side harness)."""
    return {
        "id": f"s{i}",
        "internalId": f"bt{i}",
        "name": name if name is not None else f"Build {i}",
        "type": "regular",
        "paused": i % 7 == 0,
        "projectId": f"P{i % 1000}",
    }


def scaled(data: dict[str, Any], k: int) -> dict[str, Any]:
    """data.json copied k times with unique ids."""
    return {
        "project": [
            {
                **p,
                "id": f"{p['id']}~{c}",
                "buildTypes": {
                    "buildType": [
                        {**b, "id": f"{b['id']}~{c}", "projectId": f"{b['projectId']}~{c}"}
                        for b in p["buildTypes"]["buildType"]
                    ]
                },
            }
            for c in range(k)
            for p in data["project"]
        ]
    }


def store_of(n: int) -> Any:
    rows = [synthetic(i) for i in range(n)]
    store = normalize(BuildTypeList, rows, meta=ACTION_META)
    del rows
    gc.collect()
    return store


def report(name: str, fn: Case, min_time: float) -> float:
    median, low, high = median_ops(fn, min_time=min_time)
    print(f"  {name:<52} {median:>12,.1f} ops/s  ({low:,.1f}..{high:,.1f})")
    return median


def scaling(data: dict[str, Any], sizes: list[int], min_time: float) -> None:
    print("normalize by input size:")
    base = 0.0
    for k in (1, 4, 16):
        payload = scaled(data, k)
        rate = report(f"normalize x{k}", lambda p=payload: normalize(ProjectSchema, p, meta=ACTION_META), min_time)
        base = base or rate
        print(f"    time per input copy vs x1: {base / rate / k:.2f}")
    print("store size (one-entity write; memo read of 100 entities after an unrelated change):")
    for n in sizes:
        store = store_of(n)
        updates = [synthetic((j * 7919) % n, f"changed {j}") for j in range(64)]
        count = [0]

        def set_one(s: Any = store, u: list[Any] = updates, c: list[int] = count) -> object:
            c[0] += 1
            return normalize(BuildTypeDescription, u[c[0] & 63], state=s, meta=LATER_META)

        report(f"setOne store={n:,}", set_one, min_time)
        ids = store.result[:100]
        other = synthetic(n - 1)
        a = normalize(BuildTypeDescription, {**other, "name": "a"}, state=store, meta=LATER_META).entities
        b = normalize(BuildTypeDescription, {**other, "name": "b"}, state=store, meta=LATER_META).entities
        report(f"memo after change store={n:,}", alternating(MemoCache(), BuildTypeList, ids, a, b), min_time)
        del store, a, b
    gc_pauses(data, max(sizes), min_time)
    memory_per_entity(100_000)


def gc_pauses(data: dict[str, Any], n: int, min_time: float) -> None:
    """Uncached denormalize of data.json with an n-entity store alive vs none; p99 of memo hits."""
    full = normalize(ProjectSchema, data, meta=ACTION_META)
    read = lambda: denormalize(ProjectSchema, full.result, full.entities)  # noqa: E731
    print(f"collector (automatic collection {'on' if gc.isenabled() else 'off'}):")
    empty = report("denormalize donotcache, empty store alive", read, min_time)
    big = store_of(n)
    loaded = report(f"denormalize donotcache, {n:,}-entity store alive", read, min_time)
    print(f"    time with the big store / without: {empty / loaded:.2f} (target <= 1.2)")
    memo = MemoCache()
    ids = big.result[:100]
    memo.denormalize(BuildTypeList, ids, big.entities)
    times = []
    for _ in range(10_000):
        start = time.perf_counter()
        memo.denormalize(BuildTypeList, ids, big.entities)
        times.append(time.perf_counter() - start)
    times.sort()
    print(
        f"    memo-hit reads with the big store alive: p50 {times[5000] * 1e6:.1f} us, "
        f"p99 {times[9900] * 1e6:.1f} us, max {times[-1] * 1e3:.2f} ms (target p99 < 1 ms)"
    )
    started = time.perf_counter()
    gc.collect()
    print(f"    one explicit full collection with the big store alive: {(time.perf_counter() - started) * 1e3:.0f} ms")


def memory_per_entity(n: int) -> None:
    """Bytes held per stored entity vs the same rows as parsed JSON."""
    text = json.dumps([synthetic(i) for i in range(n)])
    gc.collect()
    tracemalloc.start()
    rows = json.loads(text)
    parsed = tracemalloc.get_traced_memory()[0]
    store = normalize(BuildTypeList, rows, meta=ACTION_META)
    del rows
    gc.collect()
    stored = tracemalloc.get_traced_memory()[0]
    memo = MemoCache()
    memo.denormalize(BuildTypeList, store.result, store.entities)
    read = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(
        f"memory per entity ({n:,} entities): parsed JSON {parsed / n:.0f} B, store {stored / n:.0f} B "
        f"({stored / parsed:.2f}x), store + one memoized read of all {read / n:.0f} B ({read / parsed:.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scaling", action="store_true", help="add the input/store-size, GC and memory cases")
    parser.add_argument("--max-store", type=int, default=1_000_000)
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds of timed batches per case")
    opts = parser.parse_args()
    data = load()
    print(f"schema engine: {_fast.engine()} (RESTLAYER_PURE=1 for the pure-Python one)")
    print(f"data.json: {len(data['project'])} projects (median ops/s of >= 5 batches, min..max in parentheses)")
    for name, fn in js_cases(data).items():
        report(name, fn, opts.min_time)
    if opts.scaling:
        sizes = [s for s in (1_000, 100_000, 1_000_000) if s <= opts.max_store]
        scaling(data, sizes, opts.min_time)


if __name__ == "__main__":
    main()
