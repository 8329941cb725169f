"""NetworkManager: deduplication per key, side effects never shared, per-caller cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

from restlayer.core import Controller
from tests.core._models import gets


async def test_two_concurrent_gets_one_request(ctrl: Controller, res: Any, api: Any) -> None:
    a, b = await asyncio.gather(ctrl.fetch(res.Todo.get, {"id": 1}), ctrl.fetch(res.Todo.get, id=1))
    assert a == b and len(gets(api, "/todos/1")) == 1


async def test_100_concurrent_suspense_one_request(ctrl: Controller, res: Any, api: Any) -> None:
    results = await asyncio.gather(*(ctrl.suspense(res.Todo.get, id=3) for _ in range(100)))
    assert len(gets(api, "/todos/3")) == 1
    assert all(r is results[0] for r in results)


async def test_pushes_are_never_deduplicated(ctrl: Controller, res: Any, api: Any) -> None:
    await asyncio.gather(
        ctrl.fetch(res.PlainTodo.get_list.push, {"title": "a"}),
        ctrl.fetch(res.PlainTodo.get_list.push, {"title": "a"}),
    )
    assert len(gets(api, "/todos", "POST")) == 2


async def test_later_fetch_after_settle_sends_again(ctrl: Controller, res: Any, api: Any) -> None:
    await ctrl.fetch(res.Todo.get, id=1)
    await ctrl.fetch(res.Todo.get, id=1)
    assert len(gets(api, "/todos/1")) == 2


async def test_cancelling_one_caller_keeps_the_shared_request(ctrl: Controller, res: Any, api: Any) -> None:
    first = asyncio.ensure_future(ctrl.fetch(res.slow, {"ms": 150}))
    second = asyncio.ensure_future(ctrl.fetch(res.slow, {"ms": 150}))
    await asyncio.sleep(0.03)
    first.cancel()
    assert await second == {"slept": 150}
    assert first.cancelled()
    assert len(gets(api, "/_test/slow")) == 1
    assert ctrl.get_response(res.slow, {"ms": 150}).data == {"slept": 150}


async def test_cancelling_every_caller_cancels_the_request(ctrl: Controller, res: Any) -> None:
    task = asyncio.ensure_future(ctrl.fetch(res.slow, {"ms": 200}))
    await asyncio.sleep(0.03)
    task.cancel()
    await asyncio.sleep(0.25)
    assert ctrl.get_state()["endpoints"] == {}
    manager = next(m for m in ctrl.managers if type(m).__name__ == "NetworkManager")
    assert not manager.in_flight(res.slow.key({"ms": 200}))  # type: ignore[attr-defined]
