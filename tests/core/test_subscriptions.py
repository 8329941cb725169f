"""Polling: per-key schedule at the minimum subscribed frequency."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from restlayer.core import Controller
from restlayer.core.subscriptions import Poll
from restlayer.errors import RestLayerError
from tests.core._models import gets


def test_poll_schedule_arithmetic() -> None:
    poll = Poll(None, (), "k")
    assert poll.add(200, now=1000, last_fetch=None) and poll.next_due == 1000
    poll.polled(1000)
    assert poll.next_due == 1200
    assert poll.add(100, now=1050, last_fetch=1000) and poll.frequency == 100 and poll.next_due == 1150
    assert not poll.add(100, now=1060, last_fetch=1000)
    assert not poll.remove(100, now=1070)
    assert poll.remove(100, now=1080) and poll.frequency == 200
    assert poll.remove(200, now=1090) and not poll.active


def test_first_poll_waits_for_fresh_data() -> None:
    poll = Poll(None, (), "k")
    poll.add(200, now=1000, last_fetch=950)
    assert poll.next_due == 1150


async def test_subscribe_needs_poll_frequency(ctrl: Controller, res: Any) -> None:
    with pytest.raises(RestLayerError, match="poll_frequency"):
        await ctrl.subscribe(res.Todo.get, id=1)
    await ctrl.subscribe(res.Todo.get, None)  # None args: nothing


async def test_polling_frequencies(ctrl: Controller, res: Any, api: Any) -> None:
    slow = res.Todo.get.extend(poll_frequency=200)
    fast = res.Todo.get.extend(poll_frequency=100)
    await ctrl.subscribe(slow, id=1)
    await asyncio.sleep(0.45)
    n_slow = len(gets(api, "/todos/1"))
    assert 2 <= n_slow <= 4  # ~0, 200, 400 ms
    meta = ctrl.get_state()["meta"][slow.key({"id": 1})]
    assert meta["expires_at"] - meta["date"] == 100  # frequency / 2
    await ctrl.subscribe(fast, id=1)
    api.clear_requests()
    await asyncio.sleep(0.45)
    assert 3 <= len(gets(api, "/todos/1")) <= 6  # ~every 100 ms
    await ctrl.unsubscribe(fast, id=1)
    api.clear_requests()
    await asyncio.sleep(0.45)
    assert 1 <= len(gets(api, "/todos/1")) <= 3  # back to 200 ms
    await ctrl.unsubscribe(slow, id=1)
    await asyncio.sleep(0.05)
    api.clear_requests()
    await asyncio.sleep(0.3)
    assert len(gets(api, "/todos/1")) == 0


async def test_subscription_context_manager(ctrl: Controller, res: Any, api: Any) -> None:
    ep = res.Todo.get.extend(poll_frequency=100)
    async with ctrl.subscription(ep, id=2):
        await asyncio.sleep(0.25)
    count = len(gets(api, "/todos/2"))
    assert count >= 2
    await asyncio.sleep(0.25)
    assert len(gets(api, "/todos/2")) == count
