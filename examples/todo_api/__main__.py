"""``python -m examples.todo_api [--port N] [--db PATH]``: serve the example API."""

from __future__ import annotations

import argparse

from examples.todo_api.app import create_app
from examples.todo_api.db import TodoDB
from examples.todo_api.server import HOST, bind_socket, make_uvicorn_server


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, bind 127.0.0.1:port, print the URL and serve until Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m examples.todo_api", description=__doc__)
    parser.add_argument("--port", type=int, default=8000, help="port (0 = any free port)")
    parser.add_argument("--db", default=None, help="sqlite file (default: a temporary one)")
    args = parser.parse_args(argv)
    with TodoDB(args.db) as db:
        sock = bind_socket(args.port)
        try:
            port = sock.getsockname()[1]
            print(f"restlayer example API: http://{HOST}:{port}  (Ctrl-C to stop)", flush=True)
            make_uvicorn_server(create_app(db)).run(sockets=[sock])
        finally:
            sock.close()


if __name__ == "__main__":
    main()
