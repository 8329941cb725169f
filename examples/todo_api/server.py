"""``LocalServer``: the example API under uvicorn on 127.0.0.1, in a background thread.

Used by the test fixtures and the demo. The listening socket is bound before the
thread starts (port 0 = any free port), so ``.url`` is known up front and there
is no race on the port.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Sequence
from types import TracebackType

import uvicorn
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from examples.todo_api.app import create_app
from examples.todo_api.db import TodoDB
from examples.todo_api.recording import RequestLog

HOST = "127.0.0.1"


def bind_socket(port: int = 0) -> socket.socket:
    """A listening TCP socket on 127.0.0.1 (only loopback, never all interfaces).

    ``proto=IPPROTO_TCP`` matters: asyncio only sets TCP_NODELAY on accepted
    sockets whose proto says TCP; without it every keep-alive request pays the
    ~40 ms Nagle/delayed-ACK penalty.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((HOST, port))
        sock.listen(128)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def make_uvicorn_server(app: Starlette) -> uvicorn.Server:
    """A quiet uvicorn server for ``app`` (no access log, short graceful shutdown)."""
    config = uvicorn.Config(
        app,
        host=HOST,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
    )
    return uvicorn.Server(config)


class LocalServer:
    """Runs the example API on ``http://127.0.0.1:<port>`` until :meth:`stop`.

    ``routes`` are extra Starlette routes matched before the API's own. When no
    ``db`` is given a temporary one is created and closed on stop.

        with LocalServer() as server:
            httpx.get(f"{server.url}/todos")
    """

    def __init__(
        self,
        *,
        db: TodoDB | None = None,
        routes: Sequence[BaseRoute] = (),
        port: int = 0,
        startup_timeout: float = 10.0,
    ) -> None:
        self._owns_db = db is None
        self.db: TodoDB = db if db is not None else TodoDB()
        self.app: Starlette = create_app(self.db, extra_routes=routes)
        self._port = port
        self._startup_timeout = startup_timeout
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self.port: int = port
        self._stopped = False

    # -- state -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL without trailing slash, e.g. ``http://127.0.0.1:54321``."""
        if self._server is None:
            raise RuntimeError("LocalServer is not running")
        return f"http://{HOST}:{self.port}"

    @property
    def requests(self) -> RequestLog:
        """Every request received since the last :meth:`clear_requests`, oldest first."""
        log: RequestLog = self.app.state.requests
        return log

    def clear_requests(self) -> None:
        """Forget the recorded requests (the ``total`` counter keeps counting)."""
        self.requests.clear()

    def reset(self) -> None:
        """Restore the seed data and clear the recorded requests."""
        self.db.reset()
        self.clear_requests()

    @property
    def running(self) -> bool:
        """True between a successful :meth:`start` and :meth:`stop`."""
        return self._thread is not None and self._thread.is_alive()

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> LocalServer:
        """Bind, start serving in a daemon thread and wait until uvicorn is up."""
        if self._server is not None or self._stopped:
            raise RuntimeError("a LocalServer can be started only once")
        self._sock = bind_socket(self._port)
        self.port = self._sock.getsockname()[1]
        server = make_uvicorn_server(self.app)
        self._server = server
        sock = self._sock
        self._thread = threading.Thread(
            target=lambda: server.run(sockets=[sock]),
            name=f"restlayer-todo-api:{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("example API server failed to start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Ask uvicorn to exit, join its thread, release the socket (and the temp db)."""
        server, thread, sock = self._server, self._thread, self._sock
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout=10)
            if thread.is_alive():  # pragma: no cover - only if a request hangs
                if server is not None:
                    server.force_exit = True
                thread.join(timeout=5)
        if sock is not None:
            sock.close()
        self._server = self._thread = self._sock = None
        self._stopped = True
        if self._owns_db:
            self.db.close()
            self._owns_db = False

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
