"""Polling: per-key schedule at the minimum subscribed frequency."""

from __future__ import annotations

from typing import Any

import pytest

from restlayer.core import Controller, SubscriptionManager
from restlayer.core.subscriptions import Poll
from restlayer.errors import ClosedError, ParamError, RestLayerError
from restlayer.rest import RestEndpoint
from tests.core._models import Clock, Recorder, polled, stored


def test_poll_schedule_arithmetic() -> None:
    poll = Poll(RestEndpoint(path="/k", poll_frequency=100), (), "k")
    assert poll.add(200, now=1000, last_fetch=None) and poll.next_due == 1000
    poll.polled(1000)
    assert poll.next_due == 1200
    assert poll.add(100, now=1050, last_fetch=1000) and poll.frequency == 100 and poll.next_due == 1150
    assert not poll.add(100, now=1060, last_fetch=1000)
    assert not poll.remove(100, now=1070)
    assert poll.remove(100, now=1080) and poll.frequency == 200
    assert poll.remove(200, now=1090) and not poll.active


def test_first_poll_waits_for_fresh_data() -> None:
    poll = Poll(RestEndpoint(path="/k", poll_frequency=100), (), "k")
    poll.add(200, now=1000, last_fetch=950)
    assert poll.next_due == 1150


async def test_subscribe_needs_poll_frequency(ctrl: Controller, res: Any) -> None:
    with pytest.raises(RestLayerError, match="poll_frequency"):
        await ctrl.subscribe(res.Todo.get, id=1)
    await ctrl.subscribe(res.Todo.get, None)  # None args: nothing


def subscriptions(ctrl: Controller) -> SubscriptionManager:
    """The controller's SubscriptionManager."""
    return next(m for m in ctrl.managers if isinstance(m, SubscriptionManager))


async def test_polling_follows_the_smallest_subscribed_frequency(
    rctrl: Controller, rec: Recorder, res: Any, clock: Clock
) -> None:
    slow = res.Todo.get.extend(poll_frequency=200)
    fast = res.Todo.get.extend(poll_frequency=100)
    key = slow.key({"id": 1})
    manager = subscriptions(rctrl)
    await rctrl.subscribe(slow, id=1)
    first = (await rec.wait_for(polled(key), count=2))[0]  # polls repeat on their own
    assert (first.data_expiry_length, first.error_expiry_length) == (100, 20)  # frequency / 2, / 10
    await rec.wait_for(stored(key))
    assert rctrl.get_state()["meta"][key]["expires_at"] - rctrl.get_state()["meta"][key]["date"] == 100
    clock.advance(10)
    await rctrl.subscribe(fast, id=1)
    assert manager.polls[key].frequency == 100 and manager.next_poll(key) == clock.now + 100
    seen = len(rec.matching(polled(key)))
    latest = (await rec.wait_for(polled(key), count=seen + 1))[-1]
    assert latest.data_expiry_length == 50
    await rctrl.unsubscribe(fast, id=1)
    assert manager.polls[key].frequency == 200 and manager.next_poll(key) is not None
    await rctrl.unsubscribe(slow, id=1)
    assert key not in manager.polls and manager.next_poll(key) is None


async def test_subscription_context_manager(rctrl: Controller, rec: Recorder, res: Any) -> None:
    ep = res.Todo.get.extend(poll_frequency=100)
    key = ep.key({"id": 2})
    async with rctrl.subscription(ep, id=2):
        await rec.wait_for(polled(key), count=2)
        assert subscriptions(rctrl).next_poll(key) is not None
    assert subscriptions(rctrl).next_poll(key) is None


async def test_subscribe_on_a_closed_controller_raises_and_schedules_nothing(res: Any) -> None:
    ctrl = Controller()
    ctrl.close()
    with pytest.raises(ClosedError):
        await ctrl.subscribe(res.Todo.get.extend(poll_frequency=100), id=1)
    assert subscriptions(ctrl).polls == {}


def test_polling_left_on_goes_on_when_the_controller_is_used_in_a_new_event_loop(
    rctrl: Controller, rec: Recorder, res: Any, clock: Clock
) -> None:
    """A subscription left on across two `asyncio.run` calls: its timer died with the first loop and
    nothing polled in the second; the first action in the new loop sets the timers there again."""
    import asyncio

    poller = res.Todo.get.extend(poll_frequency=100)
    key = poller.key({"id": 1})

    async def first() -> None:
        await rctrl.subscribe(poller, id=1)  # its first poll is due later; this loop then closes

    async def second() -> None:
        await rctrl.fetch(res.Todo.get, id=2)
        seen = len(rec.matching(polled(key)))
        clock.advance(1_000)
        await rec.wait_for(polled(key), count=seen + 1, timeout=5)
        await rctrl.unsubscribe(poller, id=1)

    asyncio.run(first())
    asyncio.run(second())
    assert key not in subscriptions(rctrl).polls


def test_a_subscription_manager_serves_one_controller() -> None:
    """A SubscriptionManager given to a second Controller is refused: it polls for one controller's store."""
    manager = SubscriptionManager()
    first = Controller(managers=[manager])
    with pytest.raises(ParamError, match="SubscriptionManager already serves another Controller"):
        Controller(managers=[manager])
    first.close()
