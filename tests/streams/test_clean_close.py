"""Closing streams under `python -X dev`: no task left behind, no warning about it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from examples.todo_api import LocalServer

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
