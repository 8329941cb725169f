"""A real `redis-server` process on a free 127.0.0.1 port (tests, the fleet benchmark and example)."""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import socket
import subprocess
import tempfile
import threading
import time

INSTALL_HINT = "redis-server is not installed: `apt-get install redis-server` (python3 dev.py setup does it as root)"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """`redis-server` without persistence, started and stopped on demand (the port stays the same)."""

    def __init__(self, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError(INSTALL_HINT)
        self.binary = binary
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="restlayer-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        """Start the server and wait for its "Ready to accept connections" line."""
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
                "--loglevel",
                "notice",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            bufsize=0,
        )
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        seen = b""
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while time.monotonic() < deadline and selector.select(deadline - time.monotonic()):
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                seen += chunk
                if b"Ready to accept connections" in seen:
                    self._drain(fd)
                    return
        self.stop()
        raise RuntimeError(f"redis-server on port {self.port} did not start: {seen[-500:].decode(errors='replace')}")

    def _drain(self, fd: int) -> None:
        """Keep reading the server's log in the background so a full pipe never blocks it."""

        def run() -> None:
            with contextlib.suppress(OSError):
                while os.read(fd, 65536):
                    pass

        threading.Thread(target=run, daemon=True).start()

    def stop(self) -> None:
        """Kill the server (as a crash would) and wait for it to exit."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def require_redis() -> str | None:
    """None when redis-server exists; else the reason to skip (under CI=true a missing server fails)."""
    if shutil.which("redis-server") is not None:
        return None
    if os.environ.get("CI", "").lower() == "true":
        raise RuntimeError("CI=true but " + INSTALL_HINT)
    return INSTALL_HINT


__all__ = ["INSTALL_HINT", "RedisServer", "free_port", "require_redis"]
