"""Closing streams and GraphQL subscriptions under `python -X dev`: no task left behind, no warning about it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid

from examples.todo_api import LocalServer
from tests.streams._script import GQL_CONNECTS, GQL_SCRIPTS

SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, warnings
    warnings.simplefilter("error")
    from restlayer import Controller, Entity
    from restlayer.streams import SSEStream, StreamManager, WebSocketStream

    class Todo(Entity):
        id: int = 0
        title: str = ""

    async def main(base: str) -> None:
        ws = base.replace("http://", "ws://")
        on = {"todos.updated": Todo, "subscribed": lambda m, w: None}
        sse = SSEStream(base + "/events", on=on)
        socket = WebSocketStream(ws + "/ws", on=on, on_open=lambda last: [{"type": "subscribe", "lastEventId": last}])
        async with StreamManager(Controller(), [sse, socket]):
            await sse.until(lambda s: s.connected)
            await socket.until(lambda s: s.applied == 1)
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        print("left:", len(others))

    asyncio.run(main(sys.argv[1]))
    """
)

#: What `-X dev` prints when something is left open or never awaited.
SYMPTOMS = ("Task was destroyed", "never awaited", "ResourceWarning", "unclosed", "Unclosed", "Traceback")


def test_closing_streams_under_dev_mode_leaves_no_task_and_no_warning(api: LocalServer) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", SCRIPT, api.url], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "left: 0"
    assert [s for s in SYMPTOMS if s in done.stderr] == [], done.stderr


GQL_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys, warnings
    warnings.simplefilter("error")
    from restlayer import Controller, Entity
    from restlayer.graphql import GQLEndpoint
    from restlayer.streams import Backoff

    class Todo(Entity):
        id: int = 0
        title: str = ""

    QUERY = "subscription { todoChanged { id title } }"

    class Parked:
        '''A backoff sleep that never ends: the subscription waits to reconnect until cancelled.'''
        def __init__(self):
            self.waiting = asyncio.Event()
        async def __call__(self, seconds):
            self.waiting.set()
            await asyncio.Event().wait()

    async def main(base, resumed, parked_key):
        gql = GQLEndpoint(base + "/graphql")
        ws = base.replace("http://", "ws://") + "/_stream/gql?key="
        quick = Backoff(initial=0.01, jitter=0)
        sub = gql.subscription(QUERY, {"todoChanged": Todo}, ws_url=ws + resumed, backoff=quick)
        seen = []
        async with sub.events(Controller()) as events:
            async for data in events:
                seen.append(data["todoChanged"].title)
                if len(seen) == 2:
                    break
        parked = Parked()
        sub = gql.subscription(QUERY, {"todoChanged": Todo}, ws_url=ws + parked_key, backoff=Backoff(sleep=parked))

        async def consume():
            async with sub.events(Controller()) as events:
                async for data in events:
                    seen.append(data["todoChanged"].title)

        task = asyncio.ensure_future(consume())
        await asyncio.wait_for(parked.waiting.wait(), 30)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        print("seen:", ",".join(seen), "left:", len(others))

    asyncio.run(main(*sys.argv[1:]))
    """
)


def test_closing_a_reconnected_or_reconnecting_subscription_under_dev_mode_leaves_no_task_and_no_warning(
    script_server: LocalServer,
) -> None:
    def frame(title: str) -> str:
        return json.dumps({"id": "1", "type": "next", "payload": {"data": {"todoChanged": {"id": 1, "title": title}}}})

    resumed, parked = uuid.uuid4().hex, uuid.uuid4().hex
    GQL_SCRIPTS[resumed] = ([frame("a"), "DROP", frame("b")], [])
    GQL_SCRIPTS[parked] = ([frame("c"), "DROP"], [])
    try:
        done = subprocess.run(
            [sys.executable, "-X", "dev", "-c", GQL_SCRIPT, script_server.url, resumed, parked],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        for key in (resumed, parked):
            GQL_SCRIPTS.pop(key, None)
            GQL_CONNECTS.pop(key, None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "seen: a,b,c left: 0"
    assert [s for s in SYMPTOMS if s in done.stderr] == [], done.stderr
    assert "reconnecting in" in done.stderr  # both were dropped once and logged it
