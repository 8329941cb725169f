"""1,000 pushed events per second for 5 s into one controller: none lost, none out of order, memory flat.

A real server on 127.0.0.1 (tests/streams/_script.py, ``/_stream/paced``) sends
the events over SSE at the rate, paced by its own clock: late ticks are sent at
once, so the events are the same however loaded the machine is, and only the
time to apply them varies (bounded by ``APPLY_TIMEOUT``).

Memory is counted in the interpreter's allocated blocks (every object up to
512 bytes is one, containers or not; counting costs nothing, unlike tracing
every allocation, which slows the burst several times on a loaded machine).
After a 1 s warm-up burst has filled the store and its caches, the 5 s burst
may leave at most ``BLOCK_SLACK`` more blocks alive (one leaked object per
5 events exceeds it), and the store's tables keep their sizes.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from examples.todo_api import LocalServer
from restlayer import All, Controller, Entity, RestEndpoint
from restlayer.streams import Backoff, Message, SSEStream, StreamManager, Writes
from tests.streams._script import PACED, Script, tick_pk

#: The load under test: 1,000 events a second for 5 seconds.
RATE = 1000
SECONDS = 5
#: Entities the ticks are spread over (each gets ~100 updates per burst, in a scrambled order).
ENTITIES = 50
#: The burst that fills the store and every cache before memory is measured (1 s at RATE).
WARMUP = RATE
#: How long applying a burst may take at most, however loaded the machine (its sending takes SECONDS).
APPLY_TIMEOUT = 120.0
#: Allocated blocks the measured burst may leave behind (measured: about 100).
BLOCK_SLACK = 1000
#: The entity a GET started before each burst (its reply held until the burst is applied) reads.
STALE_PK = 7


class Tick(Entity):
    id: int = 0
    seq: int = 0


@dataclass
class Order:
    """The `on=` handler: before writing a tick, checks the store holds the entity's previous tick.

    A lost event, or one applied out of order, leaves another `seq` stored than
    the one sent just before for that entity: each such case is a fault.
    """

    ctrl: Controller
    last: dict[int, int] = field(default_factory=dict)
    fetched_at: dict[int, float] = field(default_factory=dict)
    faults: list[str] = field(default_factory=list)

    def __call__(self, message: Message, writes: Writes) -> None:
        pk, seq = message.data["id"], message.data["seq"]
        stored = self.ctrl.get(Tick, {"id": pk})
        have = None if stored is None else stored.seq
        if have != self.last.get(pk):
            self.faults.append(f"tick {seq} of entity {pk}: stored seq {have}, expected {self.last.get(pk)}")
        metas = self.ctrl.get_state().entities_meta.get("Tick")
        meta = None if metas is None else metas.get(str(pk))
        fetched_at = 0 if meta is None else meta["fetched_at"]
        if fetched_at < self.fetched_at.get(pk, 0):
            self.faults.append(f"tick {seq} of entity {pk}: fetched_at went back to {fetched_at}")
        self.last[pk], self.fetched_at[pk] = seq, fetched_at
        writes.set(Tick, message.data)


@pytest.fixture
def paced_key() -> Iterator[str]:
    key = uuid.uuid4().hex
    yield key
    PACED.pop(key, None)


def latest(first_id: int, count: int) -> dict[int, int]:
    """Entity -> the seq of its last tick among ids first_id..first_id+count-1 (what the store must hold)."""
    return {tick_pk(n, ENTITIES): n for n in range(first_id, first_id + count)}


def blocks() -> int:
    """Memory blocks the interpreter holds after a full collection (one per live small object)."""
    gc.collect()
    return sys.getallocatedblocks()


def store_sizes(ctrl: Controller) -> tuple[int, int, int]:
    """Sizes of the store's tables: ticks, their meta records and endpoint results."""
    state = ctrl.get_state()
    ticks, metas = state.entities.get("Tick"), state.entities_meta.get("Tick")
    return len(ticks or ()), len(metas or ()), len(state.endpoints)


async def burst(
    ctrl: Controller,
    stream: SSEStream,
    other: httpx.AsyncClient,
    server: LocalServer,
    key: str,
    *,
    first_id: int,
    count: int,
) -> Tick | None:
    """Hold a GET of STALE_PK, have the server push `count` ticks, wait until the last one is read; the GET's result."""
    stale = RestEndpoint(path="/_stream/paced/stale", url_prefix=server.url, schema=Tick, client=other)
    held = asyncio.ensure_future(ctrl.fetch(stale, key=key, id=STALE_PK))
    last_id = str(first_id + count - 1)
    try:
        body = {"first_id": first_id, "count": count, "rate": RATE, "entities": ENTITIES}
        (await other.post(f"{server.url}/_stream/paced/burst", params={"key": key}, json=body)).raise_for_status()
        await stream.until(lambda s: s.last_event_id == last_id, timeout=APPLY_TIMEOUT)
        (await other.post(f"{server.url}/_stream/paced/release", params={"key": key})).raise_for_status()
        return await asyncio.wait_for(held, APPLY_TIMEOUT)
    finally:
        held.cancel()


async def test_a_thousand_events_a_second_for_five_seconds_are_all_applied_in_order_and_memory_stays_flat(
    script_server: LocalServer, paced_key: str
) -> None:
    ctrl = Controller()
    order = Order(ctrl)
    stream = SSEStream(
        f"{script_server.url}/_stream/paced?key={paced_key}", on={"tick": order}, backoff=Backoff(jitter=0)
    )
    total = RATE * SECONDS
    # the held GET waits for a whole burst: the client reads that long
    patient = httpx.Timeout(10.0, read=APPLY_TIMEOUT)
    async with StreamManager(ctrl, [stream]), httpx.AsyncClient(timeout=patient) as other:
        await stream.until(lambda s: s.connected)
        await burst(ctrl, stream, other, script_server, paced_key, first_id=1, count=WARMUP)
        before, sizes_before = blocks(), store_sizes(ctrl)
        got = await burst(ctrl, stream, other, script_server, paced_key, first_id=WARMUP + 1, count=total)
        after, sizes_after = blocks(), store_sizes(ctrl)
    assert order.faults == []
    assert (stream.applied, stream.ignored, stream.connects) == (WARMUP + total, 0, 1)
    final = latest(WARMUP + 1, total)
    assert len(final) == ENTITIES
    assert {t.id: t.seq for t in ctrl.get(All(Tick)) or []} == final
    # The GET started before the burst answered seq 0 after it: the pushed ticks, fetched later, win.
    assert got == Tick(id=STALE_PK, seq=final[STALE_PK])
    assert sizes_after == sizes_before == (ENTITIES, ENTITIES, 1)
    assert after - before < BLOCK_SLACK, f"the burst of {total} events left {after - before} more blocks allocated"
    assert stream.last_event_id == str(WARMUP + total)


#: Frames of a burst sent at once, and the most a stream may take in a row without letting other tasks run.
ONE_CHUNK = 20_000
MOST_IN_A_ROW = 500


@pytest.mark.parametrize("data", ["1", ""], ids=["messages", "id-only frames"])
async def test_a_burst_arriving_at_once_lets_other_tasks_run_while_it_is_taken(
    script_server: LocalServer, script: Callable[..., tuple[str, Script]], data: str
) -> None:
    """Tens of thousands of small frames read in a few chunks: taking them must not block the event loop
    (a UI, other streams, fetches) until the last one is taken."""
    frames = "".join(f"id: {i}\ndata: {data}\n\n" for i in range(1, ONE_CHUNK + 1))
    query, _ = script([], tail=frames)
    stream = SSEStream(f"{script_server.url}/_stream/sse{query}", on=lambda message, writes: None)
    in_a_row: list[int] = []

    async def another_task() -> None:
        """Records how many frames the stream took since this task last ran."""
        last = 0
        for _ in range(10 * ONE_CHUNK):  # bounded: cancelled long before, once the stream took them all
            now = int(stream.last_event_id or 0)
            in_a_row.append(now - last)
            last = now
            await asyncio.sleep(0)

    other = asyncio.ensure_future(another_task())
    try:
        async with StreamManager(Controller(), [stream]):
            await stream.until(lambda s: s.last_event_id == str(ONE_CHUNK), timeout=APPLY_TIMEOUT)
    finally:
        other.cancel()
    assert stream.applied == (ONE_CHUNK if data else 0)
    assert max(in_a_row) <= MOST_IN_A_ROW, f"{max(in_a_row)} frames taken without another task running"
