"""`python -m examples.fleet [--redis URL]`: four worker processes share one store through Redis.

Starts a redis-server on a free 127.0.0.1 port (unless `--redis` names one),
the example API and four workers; every worker reads the same six todos, then
one worker edits a todo and the others see the edit. Prints the upstream
request count and each worker's view of the edit; exits non-zero if a claim fails.
"""

from __future__ import annotations

import argparse
import secrets
import sys

from examples.fleet._procs import start_workers
from examples.redis_server import RedisServer
from examples.todo_api import LocalServer

IDS = [1, 2, 3, 4, 5, 6]


def check(claim: str, ok: bool) -> None:
    print(f"    {'OK  ' if ok else 'FAIL'} {claim}")
    if not ok:
        raise SystemExit(f"fleet example failed: {claim}")


def run(redis_url: str) -> None:
    with LocalServer() as api:
        workers = start_workers(4, api.url, "--redis", redis_url, "--namespace", "fleet-" + secrets.token_hex(4))
        try:
            print(f"[1] four workers each read todos {IDS}")
            for worker in workers:
                worker.send(op="read", ids=IDS)
            titles = [worker.receive()["titles"] for worker in workers]
            sent = len(api.requests.matching("GET"))
            print(f"    upstream GET requests: {sent} (without the shared store: {len(IDS) * len(workers)})")
            check("each todo was fetched once for the whole fleet", sent == len(IDS))
            check("every worker read the same titles", all(t == titles[0] for t in titles))

            print("[2] worker 1 renames todo 1; the others are watching it")
            writer, *others = workers
            for worker in others:
                worker.ask(op="watch", id=1, title="renamed by worker 1")
            edit = writer.ask(op="patch", id=1, title="renamed by worker 1")
            for number, worker in enumerate(others, start=2):
                delay_ms = (worker.receive()["at"] - edit["committed"]) * 1000
                print(f"    worker {number} saw it {delay_ms:.1f} ms after it was stored")
            answers = [w.ask(op="read", ids=[1])["titles"][0] for w in workers]
            check("every worker now reads the new title", set(answers) == {"renamed by worker 1"})
            check("no worker fetched it again", len(api.requests.matching("GET")) == sent)
        finally:
            for worker in workers:
                worker.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis", help="use this Redis (redis://host:port/db) instead of starting one")
    args = parser.parse_args()
    if args.redis:
        run(args.redis)
        return 0
    server = RedisServer()
    server.start()
    try:
        run(server.url)
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
