"""Schema-engine benchmark on the JS original's normalizr input (../shared/bench/data.json).

Run: `.venv/bin/python -m bench.normalize`. Prints ops/s for each case the
original measures, plus the ratios the project targets:
normalize within 4x of a plain recursive copy, primed-memo denormalize at least
100x faster than uncached, and a one-entity update costing the same in a
100,000-entity store as in a 1,000-entity store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench._timing import ops_per_sec, row
from restlayer.schema import Entity, MemoCache, denormalize, normalize

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "data.json"


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


class Small(Entity):
    id: int = 0
    name: str = ""


def plain_copy(value: Any) -> Any:
    """The floor for any normalizer in Python: visit and copy every dict and list."""
    if isinstance(value, dict):
        return {k: plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_copy(v) for v in value]
    return value


def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text())
    return data


def store_of(size: int) -> Any:
    return normalize([Small], [{"id": i, "name": f"n{i}"} for i in range(size)])


def main() -> None:
    data = load()
    normalized = normalize(ProjectSchema, data)
    entities, result = normalized.entities, normalized.result
    update = {"project": [dict(data["project"][2], name="renamed")]}

    primed = MemoCache()
    first = primed.denormalize(ProjectSchema, result, entities)
    assert primed.denormalize(ProjectSchema, result, entities) is first

    small_1k, small_100k = store_of(1_000), store_of(100_000)
    one = {"id": 5, "name": "changed"}

    print(f"data.json: {len(data['project'])} projects, "
          f"{len(entities['BuildTypeDescription'])} build types")
    rates = {
        "plain recursive copy (floor)": ops_per_sec(lambda: plain_copy(data)),
        "normalize into an empty store": ops_per_sec(lambda: normalize(ProjectSchema, data)),
        "denormalize, no cache": ops_per_sec(lambda: denormalize(ProjectSchema, result, entities)),
        "denormalize, fresh MemoCache": ops_per_sec(
            lambda: MemoCache().denormalize(ProjectSchema, result, entities)),
        "denormalize, primed MemoCache": ops_per_sec(
            lambda: primed.denormalize(ProjectSchema, result, entities)),
        "normalize one project update into the full store": ops_per_sec(
            lambda: normalize(ProjectSchema, update, state=normalized)),
        "normalize one entity into a 1,000-entity store": ops_per_sec(
            lambda: normalize(Small, one, state=small_1k)),
        "normalize one entity into a 100,000-entity store": ops_per_sec(
            lambda: normalize(Small, one, state=small_100k)),
    }
    for name, rate in rates.items():
        row(name, rate)
    copy_rate = rates["plain recursive copy (floor)"]
    print("ratios:")
    print(f"  normalize cost / plain copy cost: "
          f"{copy_rate / rates['normalize into an empty store']:.2f}x (target <= 4)")
    print(f"  primed memo / uncached denormalize: "
          f"{rates['denormalize, primed MemoCache'] / rates['denormalize, no cache']:.0f}x (target >= 100)")
    small_ratio = (rates["normalize one entity into a 1,000-entity store"]
                   / rates["normalize one entity into a 100,000-entity store"])
    print(f"  one-entity update, 100k store cost / 1k store cost: {small_ratio:.2f}x (target <= 1.5)")


if __name__ == "__main__":
    main()
