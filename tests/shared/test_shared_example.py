"""`python -m examples.fleet` against the fixtures' redis-server: one request per todo, one edit seen by all."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import redis

from examples.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]


def test_fleet_example_prints_one_request_per_todo_and_the_edit_reaching_every_worker(
    redis_server: RedisServer,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "examples.fleet", "--redis", redis_server.url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "FAIL" not in out
    assert "upstream GET requests: 6 (without the shared store: 24)" in out
    seen = re.findall(r"worker (\d) saw it [\d.]+ ms after it was stored", out)
    assert seen == ["2", "3", "4"]
    assert "OK   every worker now reads the new title" in out
    assert "OK   no worker fetched it again" in out
    client = redis.Redis.from_url(redis_server.url)
    try:  # it ran on the given server, not one of its own
        assert any(client.scan_iter(match="rl:{fleet-*}:r:*"))
    finally:
        client.close()
