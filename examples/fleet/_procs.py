"""Start and talk to fleet workers (`examples.fleet.worker`) as real subprocesses."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class Worker:
    """One worker process; `send` a command, `receive` its next JSON line (bounded wait)."""

    def __init__(self, api: str, *extra: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "examples.fleet.worker", "--api", api, *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=env,
            bufsize=0,
        )
        self._buffer = b""

    def send(self, **command: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(command) + "\n").encode())

    def receive(self, timeout: float = 30.0) -> dict[str, Any]:
        """The next line the worker prints, as JSON (TimeoutError after `timeout` seconds)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise TimeoutError("worker did not answer")
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(f"worker exited with {self.process.wait()}")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, **command: Any) -> dict[str, Any]:
        self.send(**command)
        return self.receive()

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.send(op="quit")
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


def start_workers(count: int, api: str, *extra: str) -> list[Worker]:
    """`count` workers, each ready (connected to its store) before this returns."""
    workers = [Worker(api, *extra) for _ in range(count)]
    try:
        for worker in workers:
            ready = worker.receive(60)
            assert ready.get("ready"), ready
    except BaseException:
        for worker in workers:
            worker.close()
        raise
    return workers
