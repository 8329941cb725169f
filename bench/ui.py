"""Solara hooks: unrelated re-renders and the delay from a store change to the re-render.

Run: `.venv/bin/python -m bench.ui [rounds]`. Renders without a server
(`solara.render`, as the hook tests do) a list component reading one user's
todos plus COMPONENTS item components, each watching one todo through
`use_cache`; the data is written straight into the store (no network). Then:
- one todo outside the list changes, `rounds` times: the list's extra renders
  are counted (target 0);
- one random item's todo changes, `rounds` times (default 50): the time from
  the write to that component's re-render is recorded (p50, p99).

Runs under reacton's fast renderer unless REACTON_FAST is set;
`REACTON_FAST=0 python -m bench.ui` measures the default renderer.
Last line: `ui: unrelated_rerenders=N rerender_p50_ms=T` (target T <= 50).
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import threading
import time
from typing import Any

os.environ.setdefault("REACTON_FAST", "1")  # this bench's choice, before reacton renders anything

import solara

from restlayer import Entity, resource
from restlayer.solara import ControllerProvider, use_cache
from restlayer.sync import Controller

COMPONENTS = 1000
TIMEOUT = 30.0


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


Todos = resource(path="/todos/:id", schema=Todo, url_prefix="http://127.0.0.1:9")


class Renders:
    """Render counts per component name, with a condition to wait on."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.cond = threading.Condition()

    def add(self, name: str) -> None:
        with self.cond:
            self.counts[name] = self.counts.get(name, 0) + 1
            self.cond.notify_all()

    def wait_for(self, name: str, count: int) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.counts.get(name, 0) >= count, timeout=TIMEOUT):
                raise SystemExit(f"bench.ui: {name} did not re-render within {TIMEOUT} s")


def run(rounds: int) -> tuple[int, list[float]]:
    renders = Renders()

    @solara.component  # type: ignore[untyped-decorator]
    def Item(id: int) -> Any:
        use_cache(Todos.get, id=id)
        renders.add(f"item{id}")
        return solara.Text("")

    @solara.component  # type: ignore[untyped-decorator]
    def TodoList() -> Any:
        use_cache(Todos.get_list, userId=1)
        renders.add("list")
        return solara.Text("")

    with Controller() as ctrl:
        mine = [{"id": i, "userId": 1, "title": f"todo {i}"} for i in range(1, 11)]
        ctrl.set_response(Todos.get_list, {"userId": 1}, mine)
        for i in range(11, COMPONENTS + 11):
            ctrl.set(Todo, {"id": i}, {"id": i, "userId": 2, "title": f"todo {i}"})
        items = [Item(i).key(f"i{i}") for i in range(11, COMPONENTS + 11)]
        _box, rc = solara.render(ControllerProvider(children=[TodoList(), *items], controller=ctrl), handle_error=False)
        try:
            before = renders.counts["list"]
            for n in range(rounds):  # unrelated changes, then one related to flush anything pending
                ctrl.set(Todo, {"id": 11}, {"id": 11, "title": f"unrelated {n}"})
                renders.wait_for("item11", 2 + n)
            unrelated = renders.counts["list"] - before
            delays = []
            for n in range(rounds):
                pick = random.randrange(12, COMPONENTS + 11)
                seen = renders.counts.get(f"item{pick}", 0)
                start = time.perf_counter()
                ctrl.set(Todo, {"id": pick}, {"id": pick, "title": f"changed {n}"})
                renders.wait_for(f"item{pick}", seen + 1)
                delays.append((time.perf_counter() - start) * 1000)
        finally:
            rc.close()
    return unrelated, delays


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    unrelated, delays = run(rounds)
    p50 = statistics.median(delays)
    p99 = sorted(delays)[min(len(delays) - 1, int(len(delays) * 0.99))]
    renderer = "fast" if os.environ.get("REACTON_FAST") == "1" else "default"
    print(f"{COMPONENTS} components, {rounds} rounds, {renderer} renderer: rerender p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    print(f"ui: unrelated_rerenders={unrelated} rerender_p50_ms={p50:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
