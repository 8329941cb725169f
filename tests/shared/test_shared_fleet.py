"""Real worker processes on one Redis: one upstream request per key for the fleet; an edit reaches every worker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from examples.fleet._procs import Worker, start_workers
from examples.redis_server import RedisServer
from tests.core._models import gets


@pytest.fixture
def fleet(api: Any, redis_server: RedisServer, namespace: str) -> Iterator[list[Worker]]:
    workers = start_workers(4, api.url, "--redis", redis_server.url, "--namespace", namespace)
    yield workers
    for worker in workers:
        worker.close()


def test_four_processes_reading_the_same_keys_fetch_each_once(fleet: list[Worker], api: Any) -> None:
    assert all(w.ask(op="memo", n=1) for w in fleet)  # every worker answers
    ids = list(range(1, 7))
    for worker in fleet:
        worker.send(op="read", ids=ids)
    answers = [worker.receive() for worker in fleet]
    assert all(a["titles"] == answers[0]["titles"] for a in answers) and len(answers[0]["titles"]) == 6
    per_key = [len(gets(api, f"/todos/{i}")) for i in ids]
    assert per_key == [1] * 6


def test_an_edit_in_one_process_reaches_every_other(fleet: list[Worker]) -> None:
    writer, *others = fleet
    for worker in fleet:
        worker.ask(op="read", ids=[1])
    for worker in others:
        assert worker.ask(op="watch", id=1, title="edited by the fleet") == {"watching": 1}
    sent = writer.ask(op="patch", id=1, title="edited by the fleet")
    seen = [worker.receive() for worker in others]
    assert all(s["seen"] == 1 and s["at"] >= sent["at"] for s in seen)
    assert all(w.ask(op="read", ids=[1])["titles"] == ["edited by the fleet"] for w in fleet)


def test_without_redis_each_process_fetches_on_its_own(api: Any) -> None:
    workers = start_workers(2, api.url)
    try:
        for worker in workers:
            worker.ask(op="read", ids=[1, 2])
    finally:
        for worker in workers:
            worker.close()
    assert len(gets(api, "/todos/1")) == 2
