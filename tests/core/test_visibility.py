"""What the cache did, made visible: DEBUG log lines, soft failures through `last_error`, `State.to_dict()`."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from restlayer import NetworkError
from restlayer.core import Controller
from tests.core._models import Recorder, stored


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("restlayer")]


async def test_debug_log_shows_requests_joins_store_reads_and_writes(
    ctrl: Controller, res: Any, api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="restlayer")
    listed, _joined = await asyncio.gather(
        ctrl.fetch(res.Todo.get_list, userId=1), ctrl.fetch(res.Todo.get_list, userId=1)
    )
    await ctrl.fetch_if_stale(res.Todo.get_list, userId=1)
    key = res.Todo.get_list.key({"userId": 1})
    lines = _lines(caplog)
    assert lines.count(f"request GET {api.url}/todos?userId=1") == 1
    assert f"fetch {key} joined the request in flight" in lines
    assert f"stored {key} ({len(listed) + 1} entities)" in lines  # the todos plus their list (a Collection)
    assert f"read {key} served from the store" in lines
    assert all(r.levelno == logging.DEBUG for r in caplog.records), "normal operation logged above DEBUG"


async def test_suspense_answered_from_the_store_logs_one_line(
    ctrl: Controller, res: Any, caplog: pytest.LogCaptureFixture
) -> None:
    await ctrl.fetch(res.Todo.get, id=1)
    caplog.set_level(logging.DEBUG, logger="restlayer")
    await ctrl.suspense(res.Todo.get, id=1)
    assert _lines(caplog) == [f"read {res.Todo.get.key({'id': 1})} served from the store"]


async def test_soft_failure_keeps_old_data_and_shows_through_last_error(
    ctrl: Controller, res: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="restlayer")
    ctrl.set_response(res.status, {"code": 503}, {"old": True})
    assert ctrl.last_error(res.status, code=503) is None
    with pytest.raises(NetworkError) as failed:
        await ctrl.fetch(res.status, code=503)
    assert ctrl.get_error(res.status, code=503) is None  # soft: readers keep the old data...
    assert ctrl.cache(res.status, code=503) == {"old": True}
    assert ctrl.last_error(res.status, code=503) is failed.value  # ...and can still tell it is stale
    key = res.status.key({"code": 503})
    assert any(line.startswith(f"fetch {key} failed under the soft policy") for line in _lines(caplog))
    ctrl.set_response(res.status, {"code": 503}, {"old": False})
    assert ctrl.last_error(res.status, code=503) is None


async def test_a_failed_poll_is_visible_while_the_old_data_shows(rctrl: Controller, rec: Recorder, res: Any) -> None:
    ctrl = rctrl
    polled = res.status.extend(poll_frequency=100)
    ctrl.set_response(polled, {"code": 500}, {"old": True})
    async with ctrl.subscription(polled, code=500):
        await rec.wait_for(stored(polled.key({"code": 500})))  # the first poll's failure was stored
    error = ctrl.last_error(polled, code=500)
    assert isinstance(error, NetworkError) and error.status == 500
    assert ctrl.dle(polled, code=500).data == {"old": True}
    assert ctrl.dle(polled, code=500).error is None


async def test_state_to_dict_is_plain_json(ctrl: Controller, res: Any) -> None:
    await ctrl.fetch(res.Todo.get, id=1)
    ctrl.set_error(res.raw, {"id": 2}, NetworkError("gone", status=410))
    await ctrl.fetch(res.Todo.delete, id=3)
    state = ctrl.get_state().to_dict()
    assert json.loads(json.dumps(state, allow_nan=False)) == state
    assert state["entities"]["Todo"]["1"]["id"] == 1
    assert state["entities"]["Todo"]["3"] == "INVALID"
    assert state["endpoints"][res.Todo.get.key({"id": 1})] == "1"
    error = state["meta"][res.raw.key({"id": 2})]["error"]
    assert error == {"error": "NetworkError", "message": "gone", "status": 410}
    assert state["optimistic"] == [] and isinstance(state["last_reset"], (int, float))


def test_to_dict_turns_odd_values_into_text() -> None:
    from restlayer._pmap import PMap
    from restlayer.core._state import EMPTY_STATE

    odd = {"expires_at": float("inf"), "at": complex(1, 2), "tags": {"a"}}  # values no fetch stores
    state = EMPTY_STATE.evolve(meta=PMap({"k": odd}))  # type: ignore[dict-item]
    assert state.to_dict()["meta"] == {"k": {"expires_at": "inf", "at": "(1+2j)", "tags": ["a"]}}
