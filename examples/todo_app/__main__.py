"""Serve the todo app: `python -m examples.todo_app [--api URL] [--port N]`.

Without `--api` the example API is started in the background on a free port.
The app is served by Solara on 127.0.0.1; once it listens, the line
`todo app: http://127.0.0.1:PORT/` is printed (tests wait for it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from examples.todo_api.server import HOST, LocalServer, bind_socket


def serve(api: str, port: int) -> None:
    """Run Solara's server for examples.todo_app.app on a socket bound up front (blocks)."""
    sock = bind_socket(port)
    url = f"http://{HOST}:{sock.getsockname()[1]}/"
    os.environ.update(
        RESTLAYER_TODO_API=api,
        SOLARA_APP="examples.todo_app.app",
        SERVER_NAME=HOST,
        SERVER_PORT=str(sock.getsockname()[1]),
    )
    os.environ.setdefault("REACTON_FAST", "1")  # the app's choice: re-render only what changed
    import uvicorn
    from solara.server.starlette import app

    config = uvicorn.Config(app, host=HOST, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    original_startup = server.startup

    async def startup(sockets: list[object] | None = None) -> None:
        await original_startup(sockets=sockets)  # type: ignore[arg-type]
        print(f"todo app: {url}", flush=True)

    server.startup = startup  # type: ignore[method-assign]
    server.run(sockets=[sock])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.todo_app", description=__doc__)
    parser.add_argument("--api", help="URL of a running example API (default: start one)")
    parser.add_argument("--port", type=int, default=8765, help="port of the app (0: any free port)")
    options = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        api = options.api
        if api is None:
            api = stack.enter_context(LocalServer()).url
            print(f"example API: {api}", flush=True)
        serve(api.rstrip("/"), options.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
