"""Expiry: statuses, ExpiryStatus ordering, invalid_if_stale and poll-free expiry arithmetic."""

from __future__ import annotations

from typing import Any

from restlayer.core import ExpiryStatus, Response
from restlayer.core._read import expiry_status, needs_fetch
from tests.core._models import Clock


def test_enum_values_and_order() -> None:
    assert (ExpiryStatus.INVALID, ExpiryStatus.INVALIDATE_IF_STALE, ExpiryStatus.VALID) == (1, 2, 3)
    assert ExpiryStatus.INVALID < ExpiryStatus.VALID


def test_status_rules() -> None:
    assert expiry_status(False, False, None) == ExpiryStatus.VALID
    assert expiry_status(True, False, None) == ExpiryStatus.INVALID
    assert expiry_status(True, False, {"error": ValueError()}) == ExpiryStatus.INVALIDATE_IF_STALE
    assert expiry_status(False, True, None) == ExpiryStatus.INVALIDATE_IF_STALE
    assert expiry_status(False, False, {"invalidated": True}) == ExpiryStatus.INVALID


def test_needs_fetch() -> None:
    assert needs_fetch(Response(1, ExpiryStatus.VALID, 10), now=11)
    assert not needs_fetch(Response(1, ExpiryStatus.VALID, 10), now=10)
    assert needs_fetch(Response(1, ExpiryStatus.INVALID, 100), now=10)


async def test_zero_expiry_is_stale_at_once(cctrl: Any, res: Any, clock: Clock) -> None:
    ep = res.Todo.get.extend(data_expiry_length=0)
    await cctrl.fetch(ep, id=1)
    response = cctrl.get_response(ep, id=1)
    assert response.expires_at == clock.now and response.expiry_status == ExpiryStatus.VALID
    clock.advance(1)
    assert needs_fetch(cctrl.get_response(ep, id=1), clock.now)


async def test_invalid_if_stale_status(cctrl: Any, res: Any) -> None:
    ep = res.Todo.get.extend(invalid_if_stale=True)
    await cctrl.fetch(ep, id=1)
    assert cctrl.get_response(ep, id=1).expiry_status == ExpiryStatus.INVALIDATE_IF_STALE


async def test_prev_expires_at_recorded(cctrl: Any, res: Any, clock: Clock) -> None:
    await cctrl.fetch(res.Todo.get, id=1)
    first = cctrl.get_state()["meta"][res.Todo.get.key({"id": 1})]["expires_at"]
    clock.advance(10)
    await cctrl.fetch(res.Todo.get, id=1)
    assert cctrl.get_state()["meta"][res.Todo.get.key({"id": 1})]["prev_expires_at"] == first
