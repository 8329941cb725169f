"""One worker process of the fleet: a Controller on the shared store, driven by JSON lines on stdin.

`python -m examples.fleet.worker --api URL [--redis URL --namespace NS | --sqlite PATH] [--lock-ms MS]`
prints `{"ready": true, "online": ...}`, then answers each command line:

- `{"op": "read", "ids": [1, 2]}`: suspense-read those todos -> `{"titles": [...]}`
- `{"op": "watch", "id": 1, "title": "x"}`: later prints `{"seen": 1, "at": <epoch s>}` when todo 1 has that title
- `{"op": "patch", "id": 1, "title": "x"}`: PATCH it -> `{"patched": 1, "at": <sent>, "committed": <stored>}`
- `{"op": "get", "path": "/any/path"}`: suspense-read that path of the API -> `{"got": <its JSON>}`
- `{"op": "memo", "n": 10000}`: time n memo-hit reads of todo 1 -> `{"per_read_us": ...}`
- `{"op": "quit"}`
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from typing import Any

from restlayer import Controller, Entity, RestEndpoint, resource
from restlayer.core import SharedManager, SharedStore
from restlayer.stores import RedisStore, SQLiteStore


class Todo(Entity):
    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False


def emit(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


def make_store(args: argparse.Namespace) -> SharedStore | None:
    if args.redis:
        return RedisStore(args.redis, namespace=args.namespace)
    if args.sqlite:
        return SQLiteStore(args.sqlite)
    return None


def make_manager(args: argparse.Namespace) -> SharedManager | None:
    """The shared store's manager (`--lock-ms`: how long others wait for a fetching process that died)."""
    store = make_store(args)
    return None if store is None else SharedManager(store, lock_ms=args.lock_ms)


async def serve(args: argparse.Namespace) -> None:
    todos = resource(path="/todos/:id", schema=Todo, url_prefix=args.api)
    manager = make_manager(args)
    ctrl = Controller(shared=manager)
    online = await asyncio.wait_for(manager.wait_started(), 10) if manager is not None else False
    emit({"ready": True, "online": online})
    keep: list[Any] = []
    while True:
        line = await asyncio.to_thread(sys.stdin.readline)
        if not line:
            break
        command = json.loads(line)
        op = command["op"]
        if op == "quit":
            break
        if op == "read":
            found = await asyncio.gather(*(ctrl.suspense(todos.get, id=i) for i in command["ids"]))
            emit({"titles": [t.title for t in found]})
        elif op == "watch":
            keep.append(watch(ctrl, todos, command["id"], command["title"]))
            emit({"watching": command["id"]})
        elif op == "patch":
            at = time.time()
            await ctrl.fetch(todos.partial_update, {"id": command["id"]}, {"title": command["title"]})
            emit({"patched": command["id"], "at": at, "committed": time.time()})
        elif op == "get":
            got = await ctrl.suspense(RestEndpoint(path=command["path"], url_prefix=args.api))
            emit({"got": got})
        elif op == "memo":
            emit({"per_read_us": memo_reads(ctrl, todos, command["n"])})
    if manager is not None:
        await manager.flush()
    ctrl.close()
    if manager is not None:
        await manager.wait_closed()


def watch(ctrl: Controller, todos: Any, todo_id: int, title: str) -> Any:
    """Print when todo `todo_id` gets `title` (once)."""
    done = False

    def seen(todo: Any) -> None:
        nonlocal done
        if not done and todo is not None and todo.title == title:
            done = True
            emit({"seen": todo_id, "at": time.time()})

    return ctrl.watch(todos.get, id=todo_id, callback=seen)


def memo_reads(ctrl: Controller, todos: Any, n: int) -> float:
    ctrl.cache(todos.get, id=1)
    start = time.perf_counter()
    for _ in range(n):
        ctrl.cache(todos.get, id=1)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    if os.environ.get("FLEET_DEBUG"):  # decisions of the shared store on stderr
        logging.basicConfig(level=logging.DEBUG, format=f"%(created).3f {os.getpid()} %(name)s %(message)s")
        logging.getLogger("redis").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--api", required=True)
    parser.add_argument("--redis", default="")
    parser.add_argument("--namespace", default="fleet")
    parser.add_argument("--sqlite", default="")
    parser.add_argument("--lock-ms", type=int, default=30_000)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
