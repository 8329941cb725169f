"""The collector is paused inside bulk schema calls and restored exactly as found afterwards."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from restlayer import _gc
from restlayer._typing import Self
from restlayer.errors import SchemaError
from restlayer.schema import Entity, MemoCache, denormalize, normalize


class Item(Entity):
    id: int = 0
    name: str = ""


class Probe(Entity):
    """Records whether the collector was enabled while the engine processed it."""

    id: int = 0
    seen: ClassVar[list[bool]] = []

    @classmethod
    def process(cls, input: Any, parent: Any, key: str | None, args: tuple[Any, ...]) -> Any:
        cls.seen.append(gc.isenabled())
        return dict(input)


@pytest.fixture
def gc_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_normalize_runs_with_the_collector_paused_and_restores_it(gc_enabled: None) -> None:
    Probe.seen.clear()
    normalize([Probe], [{"id": 1}, {"id": 2}])
    assert Probe.seen == [False, False]
    assert gc.isenabled()
    assert _gc.depth() == 0


def test_a_user_disabled_collector_stays_disabled_after_bulk_calls() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        out = normalize([Item], [{"id": 1, "name": "a"}])
        denormalize([Item], out.result, out.entities)
        MemoCache().denormalize([Item], out.result, out.entities)
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_collector_restored_when_the_call_raises(gc_enabled: None) -> None:
    with pytest.raises(SchemaError):
        normalize(Item, {"name": "no id"})
    assert gc.isenabled()
    assert _gc.depth() == 0


def test_nested_pauses_restore_only_at_the_outermost_exit(gc_enabled: None) -> None:
    _gc.pause()
    _gc.pause()
    _gc.resume()
    assert not gc.isenabled()
    _gc.resume()
    assert gc.isenabled()


def test_threads_share_one_pause_and_the_last_one_out_restores(gc_enabled: None) -> None:
    entered, release = threading.Event(), threading.Event()

    def worker() -> None:
        _gc.pause()
        entered.set()
        release.wait(10)
        _gc.resume()

    thread = threading.Thread(target=worker)
    thread.start()
    assert entered.wait(10)
    normalize(Item, {"id": 1})  # enters and leaves while the other thread holds a pause
    assert not gc.isenabled()
    release.set()
    thread.join(10)
    assert gc.isenabled()


class BuiltProbe(Entity):
    """Records whether the collector was enabled while an instance was built."""

    id: int = 0
    seen: ClassVar[list[bool]] = []

    @classmethod
    def from_json(cls, data: Any) -> Self:
        cls.seen.append(gc.isenabled())
        return super().from_json(data)


def test_denormalize_and_memo_rebuilds_run_with_the_collector_paused(gc_enabled: None) -> None:
    out = normalize([BuiltProbe], [{"id": 1}])
    BuiltProbe.seen.clear()
    denormalize([BuiltProbe], out.result, out.entities)
    MemoCache().denormalize([BuiltProbe], out.result, out.entities)
    assert BuiltProbe.seen == [False, False]
    assert gc.isenabled()
