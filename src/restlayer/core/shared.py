"""One store for many processes: a `SharedStore` backend behind every controller write.

The controller keeps reading its own in-process store (reads never wait on the
backend). `SharedManager`, a manager given the backend, adds three things:

- write-through: each committed response, `set`, invalidation and expiry is
  queued as one `Write` (rows as JSON) and the backend stores and announces it
  atomically;
- propagation: announced patches from other processes are merged into the
  local store (later-started request wins), so watchers see them as local changes;
- read-through with one request per key for the fleet: a fetch of a key the
  process lacks (or holds stale) first looks in the backend, then takes the
  key's lock and sends the request, or waits for the holder's announcement.

When the backend is unreachable the controller works locally, logs once and
rejoins (expiring its local data, a coarse resync) when the backend is back,
handing over first the writes it made meanwhile (a bounded number).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, NamedTuple, Protocol

from restlayer._time import length_ms
from restlayer.core import _actions as act
from restlayer.core._patch import EntityRow, IndexRow, Meta, Patch, merge_patch
from restlayer.core._read import read_response
from restlayer.core._versions import KNOWN, row_keys, schema_fingerprint, unversioned, versioned
from restlayer.core.endpoint import keys_pages_as_one
from restlayer.core.expiry import ExpiryStatus
from restlayer.core.manager import Manager, Next
from restlayer.errors import ClosedError, ParamError, ResetError, SharedStoreError
from restlayer.schema import INVALID, MemoCache
from restlayer.schema._normalize import written_by

if TYPE_CHECKING:
    from restlayer.core._state import State
    from restlayer.core.controller import Controller

log = logging.getLogger("restlayer.shared")
Ref = tuple[str, str]


class Snapshot(NamedTuple):
    """What a backend holds for one endpoint key: the response as fetched, its meta, its entities now."""

    response: object
    meta: Meta
    entities: tuple[EntityRow, ...] = ()
    expired: bool = False


@dataclass(frozen=True)
class Write:
    """One atomic backend write: `patch` (stored and announced), the raw responses, lock releases.

    `responses` maps an endpoint key to (the response as fetched, the entities it
    references), what a read-through needs; `now` (ms) dates the key lifetimes.
    """

    patch: Patch
    responses: Mapping[str, tuple[object, tuple[Ref, ...]]] = field(default_factory=dict)
    unlock: tuple[tuple[str, str], ...] = ()
    now: float = 0
    clear: bool = False


class SharedStore(Protocol):
    """A store backend shared by processes (Redis) or across runs (a SQLite file).

    Every method raises `SharedStoreError` when the backend cannot be reached; a
    malformed stored value is logged and read as absent.
    """

    async def open(self, on_patch: Callable[[Patch], None]) -> None:
        """Connect; from now on announcements (other processes' patches) go to `on_patch`."""

    async def run(self) -> None:
        """Deliver announcements until the connection drops (raises); returns at once if none ever come."""

    async def write(self, write: Write) -> None:
        """Store and announce `write` atomically (rows older than the stored ones are skipped)."""

    async def read(self, key: str) -> Snapshot | None:
        """The stored response of endpoint `key` with its entities' current rows, or None."""

    async def rows(self, refs: Sequence[Ref]) -> list[EntityRow]:
        """The current rows of the entities `refs` name (those stored; the rest left out)."""

    async def keys(self) -> list[str]:
        """Every stored endpoint key (for `invalidate_all` and `expire_all`)."""

    async def lock(self, key: str, ttl_ms: int) -> str | None:
        """Take the fleet-wide lock of `key` for at most `ttl_ms`: a token, or None when held elsewhere."""

    async def extend(self, key: str, token: str, ttl_ms: int) -> bool:
        """Keep holding `key`'s lock for `ttl_ms` more (while its request runs); False when no longer held."""

    async def close(self) -> None:
        """Disconnect (the backend can be opened again)."""


#: A write, a write built when its turn comes, or a barrier (a future set once every earlier item is handed over).
Queued = Write | Callable[[], Awaitable[Write]] | asyncio.Future[None]
#: The open manager of each store in use (by `id`): a store serves one controller at a time.
_ATTACHED: weakref.WeakValueDictionary[int, SharedManager] = weakref.WeakValueDictionary()
_ATTEMPTS = 8  # rounds of read / lock / wait before a waiter fetches without the lock
_FILL_ROUNDS = 4  # levels of entities a read-through looks for beyond its snapshot's rows
_MISSED_MAX = 1000  # writes kept while the backend is unreachable, handed over when it is back
_MISSED_TRIES = 3  # rejoins in a row a kept write may fail on before it is dropped (it may be what fails)
_FIRST_DELAY_S, _MAX_DELAY_S = 0.05, 2.0  # pauses between connection attempts, doubling up to the longest
_STABLE_S = 10.0  # a connection up this long was healthy: after it drops, reconnecting starts fast again


class SharedManager(Manager):
    """Connects a controller to a `SharedStore`: write-through, propagation, read-through, one request per key.

    `lock_ms` (milliseconds or a `datetime.timedelta`) bounds how long other processes wait
    for a dead fetching process before fetching themselves (a live one extends its lock every
    `lock_ms / 3`);
    `clear_on_reset` makes `reset_entire_store` clear the shared store too, and
    invalidate the keys it held in the other processes (otherwise a reset is local).
    """

    def __init__(self, store: SharedStore, *, lock_ms: int | timedelta = 30_000, clear_on_reset: bool = False) -> None:
        self.store = store
        # whole milliseconds, as Redis takes them
        self.lock_ms = math.ceil(length_ms(lock_ms, "SharedManager: lock_ms", zero_ok=False))
        self.clear_on_reset = clear_on_reset
        self.online = False
        self._controller: Controller | None = None
        self._replaying = False
        self._reported = False
        self._refusing = False  # a refusal was logged and no write succeeded since
        self._ever_offline = False
        self._started = False
        self._closed = False
        self._first = asyncio.Event()
        self._online_event = asyncio.Event()
        self._kick = asyncio.Event()
        self._queue: asyncio.Queue[Queued] = asyncio.Queue()
        # writes made while the backend was unreachable, in order, handed over first when it is back;
        # `_overflowed`: older ones were dropped, so every shared key is expired before the rest
        self._missed: deque[Write | Callable[[], Awaitable[Write]]] = deque()
        self._overflowed = False
        self._tries = 0  # rejoins in a row on which the oldest kept write failed
        self._given_up = False  # the store refused to open for good: nothing is kept for it
        self._pending: dict[str, list[act.Fetch]] = {}
        self._waiters: dict[str, list[asyncio.Future[str]]] = {}
        # endpoint key -> the token of its fleet lock, held by whichever request of the key replies next (the
        # locked fetch may have joined a request already in flight, whose reply is then the one committed)
        self._tokens: dict[str, tuple[str, str]] = {}  # endpoint key -> (its store key, the lock's token)
        self._held: set[tuple[str, str]] = set()  # locks (store key, token) this process holds until written
        # endpoint key -> the fingerprint of the schema this controller stored it with (what an invalidation names)
        self._endpoint_fps: dict[str, str] = {}
        # entity key -> the fingerprints of the schemas this controller stored its rows with
        self._row_fps: dict[str, set[str]] = {}
        self._tasks: set[asyncio.Future[None]] = set()
        self._closing: asyncio.Task[None] | None = None
        self.received = 0
        self._arrivals = asyncio.Condition()

    # ----- lifecycle --------------------------------------------------------------------------
    def init(self, controller: Controller) -> None:
        """Remember the controller; connect now when a loop runs (else on the first action).

        A store (and a manager) serves one controller until that one is closed: a second
        would open the store again, taking its connection and subscription over from the
        first, back and forth. `ParamError` then, before anything is connected.
        """
        holder = _ATTACHED.get(id(self.store))
        taken = holder is not None and holder is not self and not holder._closed
        if taken or (self._controller is not None and self._controller is not controller):
            raise ParamError(
                f"{self.store!r} is already the shared store of another Controller: "
                "give each Controller its own store object (the same URL and namespace)"
            )
        _ATTACHED[id(self.store)] = self
        self._controller = controller
        self._ensure_started()

    def _ensure_started(self) -> None:
        if self._started or self._closed:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._started = True
        self._spawn(self._keep_connected())
        self._spawn(self._write_loop())

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait_started(self) -> bool:
        """Wait for the first connection attempt; whether the backend is reachable."""
        self._ensure_started()
        await self._first.wait()
        return self.online

    async def wait_online(self) -> None:
        """Wait until the backend is reachable (bound it with `asyncio.wait_for`)."""
        self._ensure_started()
        await self._online_event.wait()

    async def wait_received(self, count: int) -> None:
        """Wait until `count` announcements in all have been applied (bound it with `asyncio.wait_for`)."""
        async with self._arrivals:
            await self._arrivals.wait_for(lambda: self.received >= count)

    async def _announce_arrival(self) -> None:
        async with self._arrivals:
            self._arrivals.notify_all()

    async def flush(self) -> None:
        """Wait until every queued write has been handed to the backend."""
        await self._queue.join()

    async def settle(self, timeout: float = 10.0) -> None:
        """Before the controller closes: `flush`, waiting at most `timeout` s (what is left then is dropped, logged)."""
        if self._closed:
            return
        try:
            await asyncio.wait_for(self.flush(), timeout)
        except asyncio.TimeoutError:
            log.warning("closing with %d shared-store writes not handed over", self._queue.qsize())

    def cleanup(self) -> None:
        """Stop connecting and writing; the backend is closed in the background."""
        if not self._closed:
            self._report_missed_lost()
        self._closed = True
        self._drop_pending(ClosedError)
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(RuntimeError):
            self._closing = asyncio.get_running_loop().create_task(self._close_store())

    async def wait_closed(self) -> None:
        """After `Controller.close()`: wait until the backend's connections are closed."""
        if self._closing is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._closing), 10)
            except asyncio.TimeoutError:
                log.warning("the shared store's connections did not close within 10 s")

    def _report_missed_lost(self) -> None:
        """Warn, with their count, about the writes kept while the backend was unreachable, closing unwritten.

        Closing hands the queued writes over, but those kept for the rejoin only go when the
        backend is back: the other processes (or the next run) will not see these changes.
        """
        if self._missed:
            log.warning(
                "closing while the shared store is unreachable: %d writes kept for it are lost "
                "(the other processes and later runs will not see those changes)",
                len(self._missed),
            )

    async def _close_store(self) -> None:
        with contextlib.suppress(SharedStoreError):
            await self.store.close()

    async def _keep_connected(self) -> None:
        """Open the backend, run its announcements, reopen after a failure (with backoff).

        The pause doubles from one failed opening, or short-lived connection, to the next: a
        backend that accepts connections but fails every write (dropping the connection of a call
        too large for it, say) would otherwise be reconnected at once, again and again, expiring
        the local data and warning at each rejoin.
        """
        delay = _FIRST_DELAY_S
        while not self._closed:
            try:
                await self.store.open(self._on_patch)
            except ParamError as exc:  # a store that can never open (another program's file): say so, stop
                self._refused(exc)
                return
            except Exception as exc:  # SharedStoreError, or a backend's own bug: either way, work locally
                _raise_if_cancelling(exc)
                if not isinstance(exc, SharedStoreError) and not self._reported:  # once, like the warning
                    log.exception("opening the shared store %r failed unexpectedly", self.store)
                self._went_offline(exc)
                self._first.set()
                await asyncio.sleep(delay)
                delay = min(delay * 2, _MAX_DELAY_S)
                continue
            if self._closed:  # closed while opening (some clients swallow the cancellation)
                await self._close_store()
                return
            _raise_if_cancelling()
            loop = asyncio.get_running_loop()
            opened_at = loop.time()
            self._came_online()
            if not await self._run_until_dropped():
                return
            if loop.time() - opened_at >= _STABLE_S:
                delay = _FIRST_DELAY_S
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY_S)

    async def _run_until_dropped(self) -> bool:
        """Run the backend's announcements; True when the connection dropped (reconnect)."""
        self._kick.clear()
        runner = asyncio.ensure_future(self.store.run())
        kicked = asyncio.ensure_future(self._kick.wait())
        try:
            await asyncio.wait({runner, kicked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            kicked.cancel()
            if not runner.done():
                runner.cancel()
        if runner.done() and not runner.cancelled() and runner.exception() is None:
            return False  # a backend without announcements: stay open
        error = runner.exception() if runner.done() and not runner.cancelled() else None
        self._went_offline(error or SharedStoreError("connection dropped"))
        await self._close_store()
        return True

    def _refused(self, error: ParamError) -> None:
        """The store refused to open for good: work on the local store only, without retrying."""
        log.error("the shared store %r cannot be used, working on the local store only: %s", self.store, error)
        self._reported = True  # said above: no "unreachable ... until it is back" warning
        self._given_up = True
        self._missed.clear()
        self._went_offline(error)
        self._first.set()

    def _went_offline(self, error: BaseException) -> None:
        self.online = False
        self._held.clear()
        self._online_event.clear()
        for key in list(self._waiters):  # no announcement will come: their fetches go out now, not after lock_ms
            self._wake(key, "offline")
        self._ever_offline = True
        if not self._reported:
            self._reported = True
            log.warning("shared store unreachable (%s); working on the local store until it is back", error)
        self._kick.set()

    def _failed(self, error: SharedStoreError) -> None:
        """A store call failed: refused by a store that answered, or the store is unreachable (offline).

        A refusal (Redis out of memory, a read-only replica) skips that one operation: going
        offline would reconnect at once and expire the local data after every write, with
        two warnings each time, while nothing was missed.
        """
        if not error.refused:
            self._went_offline(error)
        elif not self._refusing:
            self._refusing = True
            log.warning("the shared store refused a write (%s); changes stay local until it accepts them", error)

    def _came_online(self) -> None:
        rejoined = self._ever_offline
        self.online = True
        self._reported = False
        self._online_event.set()
        self._first.set()
        if rejoined:
            log.warning("shared store reachable again; local data expired to re-read it")
            self._replay(act.ExpireAll(lambda key: True))
        if self._missed or self._overflowed:  # wake the write loop: the missed writes go first
            self._enqueue(asyncio.get_running_loop().create_future())

    # ----- announcements ----------------------------------------------------------------------
    def _on_patch(self, stored: Patch) -> None:
        """Merge an announced patch locally (this version's rows only), then wake whoever waits for its keys."""
        patch = self._from_store(stored)
        if patch.entities or patch.endpoints or patch.indexes or patch.invalidated or patch.expired:
            self._replay(act.Merge(patch))
        for key, _, _ in patch.endpoints:
            self._wake(key, "written")
        for key in patch.released:
            self._wake(key, "released")
        self.received += 1
        self._spawn(self._announce_arrival())

    def _wake(self, key: str, how: str) -> None:
        for waiter in self._waiters.pop(key, ()):
            if not waiter.done():
                waiter.set_result(how)

    def _replay(self, action: act.Action) -> None:
        """Dispatch an action that came from the backend (not written back to it)."""
        if self._controller is None:
            return
        self._replaying = True
        try:
            self._controller.dispatch(action)
        finally:
            self._replaying = False

    # ----- the middleware ---------------------------------------------------------------------
    def middleware(self, controller: Controller, action: act.Action, next: Next) -> None:
        """Read-through on fetches; write-through after every committed change."""
        self._ensure_started()
        if self._replaying or not self._started:
            next(action)
            return
        self._remember(action)
        if isinstance(action, act.Fetch):
            connecting = not self._first.is_set()
            if (self.online or connecting) and _shareable(action) and not _fresh(controller, action.key):
                self._read_through(controller, action, next)
            else:
                next(action)
            return
        if isinstance(action, act.Reset):
            self._drop_pending()
            self._release_locks(controller)
        before = controller.get_committed_state()
        next(action)
        self._write_through(controller, action, before)

    def _remember(self, action: act.Action) -> None:
        """Keep the schema fingerprint of each endpoint key this controller stores (dropped with the key)."""
        if isinstance(action, (act.Fetch, act.SetResponse)):
            self._endpoint_fps[action.key] = _endpoint_fp(action.endpoint)
            self._learn(action.endpoint.schema)
        elif isinstance(action, act.Set):
            self._learn(action.schema)
        elif isinstance(action, act.GC):
            for key in action.endpoint_keys:
                self._endpoint_fps.pop(key, None)
        elif isinstance(action, act.Reset):
            self._endpoint_fps.clear()

    def _learn(self, schema: object) -> None:
        """Remember which version of each entity key `schema` stores (only those are taken from the store)."""
        for key, fp in row_keys(schema).items():
            self._row_fps.setdefault(key, set()).add(fp)

    def _row_key(self, store_key: str) -> str | None:
        """The local entity key of a stored row's key, or None when another version wrote it.

        Once this controller stored rows of a key, only its own versions of it; before, any
        version this program defines (a file loaded at start, before anything was fetched).
        """
        parsed = unversioned(store_key)
        own = None if parsed is None else self._row_fps.get(parsed[0])
        if parsed is None or own is None:
            return KNOWN.row(store_key)
        return parsed[0] if parsed[1] in own else None

    def _endpoint_key(self, store_key: str) -> str | None:
        """The local endpoint key of a stored endpoint key, or None when another version wrote it."""
        parsed = unversioned(store_key)
        own = None if parsed is None else self._endpoint_fps.get(parsed[0])
        if parsed is None or own is None:
            return KNOWN.endpoint(store_key)
        return parsed[0] if parsed[1] == own else None

    def _from_store(self, patch: Patch) -> Patch:
        """A patch read from the store under local keys, keeping only the rows this version wrote.

        A row or endpoint key under a fingerprint of no schema this program defines was
        written by another version (or program): left out, the local version fetches its own.
        """
        row, endpoint = self._row_key, self._endpoint_key
        return Patch(
            entities=tuple((k, pk, rec, meta) for key, pk, rec, meta in patch.entities if (k := row(key)) is not None),
            endpoints=tuple(
                (k, result, meta) for key, result, meta in patch.endpoints if (k := endpoint(key)) is not None
            ),
            indexes=tuple(
                (k, name, value, pk) for key, name, value, pk in patch.indexes if (k := row(key)) is not None
            ),
            invalidated=self._local_keys(patch.invalidated),
            expired=self._local_keys(patch.expired),
            released=self._local_keys(patch.released),
        )

    def _local_keys(self, store_keys: Sequence[str]) -> tuple[str, ...]:
        """The local endpoint keys of `store_keys` this version wrote (each once, in order)."""
        return tuple(dict.fromkeys(key for k in store_keys if (key := self._endpoint_key(k)) is not None))

    def _store_keys(self, key: str) -> tuple[str, ...]:
        """The store keys of endpoint key `key`: under the fingerprint this controller stored it with, or
        (a key it does not hold) under each fingerprint of the endpoints this version defines."""
        fp = self._endpoint_fps.get(key)
        return (versioned(key, fp),) if fp is not None else tuple(versioned(key, f) for f in sorted(KNOWN.endpoints))

    def _write_through(self, controller: Controller, action: act.Action, before: State) -> None:
        """Queue the write of what `action` changed (`before`: the committed state it was applied to)."""
        if isinstance(action, act.SetResponse):
            self._response_written(controller, action, before)
        elif not self._may_write():
            return
        elif isinstance(action, act.Set):
            meta = {"fetched_at": action.date, "date": action.date, "expires_at": action.expires_at}
            rows, indexes, _ = _touched(
                before, controller.get_committed_state(), action.schema, action.value, action.args, meta
            )
            patch = _to_store(Patch(entities=rows, indexes=indexes), action.schema, None)
            self._enqueue(Write(patch, now=controller.now()))
        elif isinstance(action, act.Invalidate):
            keys = tuple(store_key for key in action.keys for store_key in self._store_keys(key))
            self._enqueue(Write(Patch(invalidated=keys), now=controller.now()))
        elif isinstance(action, (act.InvalidateAll, act.ExpireAll)):
            self._enqueue(self._matching(controller, action))
        elif isinstance(action, act.Reset) and self.clear_on_reset:
            self._enqueue(self._cleared(controller))

    def _cleared(self, controller: Controller) -> Callable[[], Awaitable[Write]]:
        """The write clearing the shared store, announcing every endpoint key it held as invalidated.

        The other processes hold copies of those keys: told nothing, they would go on serving
        what the reset dropped until it expired (and hand it on through their next writes).
        Invalidated, not reset, there: their own requests in flight are not failed.
        """

        async def build() -> Write:
            keys = tuple(sorted(await self.store.keys()))  # read before the clear deletes them
            return Write(Patch(invalidated=keys), clear=True, now=controller.now())

        return build

    def _matching(
        self, controller: Controller, action: act.InvalidateAll | act.ExpireAll
    ) -> Callable[[], Awaitable[Write]]:
        """A write of every local or shared key passing the action's test (the shared keys read later)."""
        state = controller.get_committed_state()
        local = [k for key in state.meta if action.test_key(key) for k in self._store_keys(key)]
        invalidate = isinstance(action, act.InvalidateAll)

        async def build() -> Write:
            stored = [key for key in await self.store.keys() if (k := self._endpoint_key(key)) and action.test_key(k)]
            keys = sorted({*local, *stored})
            patch = Patch(invalidated=tuple(keys)) if invalidate else Patch(expired=tuple(keys))
            return Write(patch, now=controller.now())

        return build

    def _response_written(self, controller: Controller, action: act.SetResponse, before: State) -> None:
        """Queue a committed response (or just release the key's lock when nothing was stored)."""
        held = self._tokens.pop(action.key, None) if action.fetch is not None else None
        unlock = () if held is None else (held,)
        released = () if held is None else (held[0],)
        state = controller.get_committed_state()
        stored = state.meta.get(action.key)
        ok = (
            not action.aborted
            and not action.error
            and stored is not None
            and stored.get("error") is None
            and stored.get("fetched_at") == action.fetched_at
            and stored.get("date") == action.date
        )
        if not ok or not self._may_write():
            if unlock and self._may_write():
                self._enqueue(Write(Patch(released=released), unlock=unlock, now=controller.now()))
            return
        meta = {"fetched_at": action.fetched_at, "date": action.date, "expires_at": action.expires_at}
        try:
            rows, indexes, refs = _touched(before, state, action.endpoint.schema, action.response, action.args, meta)
        except Exception:  # the reducer stored it, so this does not happen; never break the caller
            log.exception("could not share %s", action.key)
            return
        schema = action.endpoint.schema
        fp = _endpoint_fp(action.endpoint)
        patch = _to_store(
            Patch(entities=rows, endpoints=((action.key, state.endpoints.get(action.key), meta),), indexes=indexes),
            schema,
            fp,
        )
        patch = replace(patch, released=released)
        response = (action.response, _refs_to_store(refs, schema))
        self._enqueue(Write(patch, {versioned(action.key, fp): response}, unlock, controller.now()))

    # ----- writing ----------------------------------------------------------------------------
    def _may_write(self) -> bool:
        """Whether changes are queued for the backend: unless it refused to open for good.

        While it is unreachable they are kept (`_missed`) and handed over when it is back:
        dropped, the other processes would keep the rows they replaced as fresh, and the
        backend would hand them to every process reading through.
        """
        return not self._given_up

    def _enqueue(self, item: Queued) -> None:
        self._queue.put_nowait(item)

    async def _write_loop(self) -> None:
        """Hand queued writes to the backend in order; while offline they are kept for the rejoin.

        A write failing with an error the backend does not turn into `SharedStoreError`
        (a bug of its own) is logged and skipped: the loop must go on, or every later
        write would be lost and every read-through waiting its turn would wait forever.
        """
        await self._first.wait()
        while not self._closed:
            item = await self._queue.get()
            try:
                if isinstance(item, asyncio.Future):
                    await self._hand_over_missed()  # a read-through waiting on it must find them stored
                    if not item.done():
                        item.set_result(None)
                elif not await self._write_online(item):
                    self._miss(item)
            except Exception:
                log.exception("a shared-store write failed unexpectedly; skipped")
            finally:
                self._queue.task_done()
            _raise_if_cancelling()

    async def _write_online(self, item: Write | Callable[[], Awaitable[Write]]) -> bool:
        """Hand `item` over after the writes missed while offline; False when the backend is unreachable."""
        return await self._hand_over_missed() and self.online and await self._write_one(item)

    async def _hand_over_missed(self) -> bool:
        """Hand over, in order, the writes kept while the backend was unreachable; False when it is again."""
        if self.online and self._overflowed and self._controller is not None:
            if not await self._write_one(self._matching(self._controller, act.ExpireAll(lambda key: True))):
                return False
            self._overflowed = False
        while self.online and self._missed:
            if not await self._hand_over_oldest():
                return False
        return self.online

    async def _hand_over_oldest(self) -> bool:
        """Hand over the oldest kept write; False (still kept) when the backend is unreachable again.

        A write that fails on `_MISSED_TRIES` rejoins in a row (one Redis drops the connection
        for, too large for its query buffer, say), or fails unexpectedly, is dropped and every
        shared key expired instead (`_overflowed`): kept, it would hold back every later write
        and take the store offline again at each rejoin, for good.
        """
        missed = self._missed[0]
        if isinstance(missed, Write) and self._controller is not None:  # key lifetimes dated from now
            missed = replace(missed, now=self._controller.now())
        try:
            written: bool | None = await self._write_one(missed)
        except Exception:
            log.exception("a shared-store write kept while offline failed unexpectedly; dropped")
            written = None
        if written is False:
            self._tries += 1
            if self._tries < _MISSED_TRIES:
                return False
            log.warning("dropped a shared-store write that failed on %d reconnections in a row", self._tries)
        self._missed.popleft()
        self._tries = 0
        if not written:
            self._overflowed = True  # the dropped write's keys (and all others) are expired in the store
        return self.online

    def _miss(self, item: Write | Callable[[], Awaitable[Write]]) -> None:
        """Keep a write the backend could not take, for when it is back (at most `_MISSED_MAX`).

        Lock releases are left out (the locks went with the connection). Past the limit the
        oldest are dropped and `_overflowed` set: every shared key is then expired first.
        """
        if self._given_up or self._closed:
            return
        if isinstance(item, Write):
            item = replace(item, patch=replace(item.patch, released=()), unlock=())
            if not item.patch and not item.clear:
                return
        if len(self._missed) >= _MISSED_MAX:
            self._missed.popleft()
            self._overflowed = True
        self._missed.append(item)

    async def _write_one(self, item: Write | Callable[[], Awaitable[Write]]) -> bool:
        """Hand one write to the backend; False when it turned out unreachable (the write is to be kept).

        A write the backend refused, or one holding a value JSON cannot, is skipped (True).
        """
        if isinstance(item, Write):
            self._held.difference_update(item.unlock)
        write = item if isinstance(item, Write) else await self._built(item)
        if write is None:
            return self.online
        try:
            await self.store.write(write)
        except SharedStoreError as exc:
            _raise_if_cancelling(exc)
            self._failed(exc)
            if not exc.refused:
                return False
            await self._release_unwritten(write)
            return True
        except (TypeError, ValueError, RecursionError) as exc:
            if _encodes(write):  # the values are JSON: the store itself failed
                log.exception("the shared store %r failed to write; skipped", self.store)
            else:  # a value JSON cannot hold: kept local only
                log.warning("not shared (not JSON): %s", exc)
            await self._release_unwritten(write)
            return True
        self._refusing = False  # stored: a later refusal is a new one, worth a warning
        return True

    async def _release_unwritten(self, write: Write) -> None:
        """Release the locks a write that was not stored would have released (others need not wait them out)."""
        if not write.unlock:
            return
        release = Write(Patch(released=tuple(k for k, _ in write.unlock)), unlock=write.unlock, now=write.now)
        try:
            await self.store.write(release)
        except Exception as exc:  # the failure was just logged; a release failing too changes nothing more
            _raise_if_cancelling(exc)
            log.debug("releasing the locks of an unwritten write failed", exc_info=True)

    async def _built(self, build: Callable[[], Awaitable[Write]]) -> Write | None:
        """The write `build` makes, or None when it fails.

        A failure is logged and only this write is skipped: it runs the caller's
        `test_key` on the backend's keys, and an exception there must not end the
        write loop (every later write, and every read-through waiting its turn, with it).
        """
        try:
            return await build()
        except SharedStoreError as exc:
            _raise_if_cancelling(exc)
            self._failed(exc)
        except Exception:
            log.exception("a shared-store write could not be built (a test_key raised?); skipped")
        return None

    # ----- read-through -----------------------------------------------------------------------
    def _read_through(self, controller: Controller, action: act.Fetch, next: Next) -> None:
        waiting = self._pending.get(action.key)
        if waiting is not None:
            waiting.append(action)
            return
        self._pending[action.key] = [action]
        written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._enqueue(written)
        store_key = versioned(action.key, _endpoint_fp(action.endpoint))
        self._spawn(self._resolve(controller, (action.key, store_key), next, written))

    async def _resolve(
        self, controller: Controller, keys: tuple[str, str], next: Next, written: asyncio.Future[None]
    ) -> None:
        """Serve the key's waiting fetches from the backend, or send them on to the network.

        `keys`: the endpoint key and its store key (named by the endpoint schema's fingerprint).

        The backend is read once `written` is set: after every write queued before the
        fetch (an `invalidate_all` just before it must not leave the old copy to be read).
        Cancelled (the controller closed) while serving them from a snapshot, their
        callers get `ClosedError`; the ones still waiting were failed by `cleanup`.
        """
        key, store_key = keys
        try:
            await self._first.wait()
            await written
            found = await self._find(controller, key, store_key) if self.online else None
        except SharedStoreError as exc:
            self._failed(exc)
            found = None
        except Exception:  # a backend's own bug: its callers must still be answered, from the network
            log.exception("reading %s from the shared store failed unexpectedly; fetching it", key)
            found = None
        actions = self._pending.pop(key, [])
        log.debug("read-through of %s: %s", key, type(found).__name__)
        if not actions:  # a reset dropped them
            if isinstance(found, str):
                self._enqueue(Write(Patch(released=(store_key,)), unlock=((store_key, found),), now=controller.now()))
            return
        if isinstance(found, Snapshot):
            try:
                if await self._use(controller, actions, found):
                    return
            except asyncio.CancelledError:
                _fail(actions, ClosedError)
                raise
        if isinstance(found, str):
            self._tokens[key] = (store_key, found)
            self._held.add((store_key, found))
            self._spawn(self._keep_lock(store_key, found))
        for action in actions:
            next(action)

    async def _keep_lock(self, key: str, token: str) -> None:
        """Extend the lock until the write releasing it is done (a dead process stops extending)."""
        while True:
            await asyncio.sleep(self.lock_ms / 3000)
            if (key, token) not in self._held or not self.online or self._closed:
                return
            try:
                extended = await self.store.extend(key, token, self.lock_ms)
                _raise_if_cancelling()
                log.debug("lock of %s extended: %s", key, extended)
                if not extended:
                    return
            except SharedStoreError as exc:
                _raise_if_cancelling(exc)
                self._failed(exc)
                return

    async def _find(self, controller: Controller, key: str, store_key: str) -> Snapshot | str | None:
        """A usable snapshot, the lock's token (fetch it), or None (fetch without the lock)."""
        for _ in range(_ATTEMPTS):
            snapshot = await self.store.read(store_key)
            if _usable(snapshot, controller.now()):
                return snapshot
            with self._waiting(key) as waiter:
                token = await self.store.lock(store_key, self.lock_ms)
                log.debug("lock of %s: %s", store_key, token)
                if token is not None:
                    snapshot = await self.store.read(store_key)
                    if _usable(snapshot, controller.now()):
                        unlock = ((store_key, token),)
                        await self.store.write(Write(Patch(released=(store_key,)), unlock=unlock))
                        return snapshot
                    return token
                try:
                    how = await asyncio.wait_for(asyncio.shield(waiter), self.lock_ms / 1000)
                except asyncio.TimeoutError:
                    continue  # the holder died (its lock expires) or is slow (it extends the lock): look again
                if how == "offline":
                    return None  # the backend is gone: fetch without it
                if how == "released":
                    continue  # the holder is done (failed, or found the data): look again
        return None

    @contextlib.contextmanager
    def _waiting(self, key: str) -> Iterator[asyncio.Future[str]]:
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(key, []).append(waiter)
        try:
            yield waiter
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None and waiter in waiters:
                waiters.remove(waiter)
                if not waiters:
                    del self._waiters[key]

    async def _use(self, controller: Controller, actions: list[act.Fetch], snapshot: Snapshot) -> bool:
        """Store a backend snapshot as if this process had fetched it, then answer the callers.

        False (nothing stored, nobody answered: fetch it) when the endpoint's schema cannot
        read the stored response, e.g. one written by another app or version.
        """
        first = actions[0]
        reset = controller.resets
        meta = snapshot.meta
        self._replay(
            act.SetResponse(
                first.endpoint,
                first.args,
                first.key,
                snapshot.response,
                meta["fetched_at"],
                meta["date"],
                meta["expires_at"],
            )
        )
        if not _holds(controller.get_committed_state(), first.key, meta):
            log.warning("ignored the shared copy of %s: its response does not fit the endpoint's schema", first.key)
            return False
        entities = self._from_store(Patch(entities=snapshot.entities)).entities
        if entities:
            self._replay(act.Merge(Patch(entities=entities)))
        try:
            await self._add_missing(controller, first, reset)
        except SharedStoreError as exc:
            _raise_if_cancelling(exc)
            self._failed(exc)
        except Exception:  # a backend's own bug: the snapshot is stored, answer with it
            log.exception("reading the entities of %s from the shared store failed unexpectedly", first.key)
        dropped = controller.resets != reset
        if not dropped and _reads_deleted(controller, first):
            log.debug("the shared copy of %s names an entity deleted since; fetching it", first.key)
            return False
        for action in actions:
            if action.future is not None and not action.future.done():
                if dropped:  # a reset came while the rows were read: like a request in flight, dropped
                    action.future.set_exception(ResetError())
                else:
                    action.future.set_result(snapshot.response)
        return True

    async def _add_missing(self, controller: Controller, fetch: act.Fetch, reset: int) -> None:
        """Read from the backend the entities the stored snapshot names but lacks, and store them.

        A snapshot holds the rows its response referenced when it was written; a stored
        list another process grew since (a push) names entities beyond those. `reset` is the
        controller's reset count when the snapshot was stored: rows arriving after a later reset are
        dropped, like the reply of a request in flight, so the emptied store stays empty.
        """
        asked: set[Ref] = set()
        for _ in range(_FILL_ROUNDS):  # each round reaches one level deeper (an entity that names more)
            detail = read_response(MemoCache(), fetch.endpoint, fetch.args, controller.get_committed_state())[1]
            missing = [] if detail is None else [(k, pk) for k, pk, _, record in detail.deps if record is None]
            missing = [ref for ref in dict.fromkeys(missing) if ref not in asked]
            if not missing:
                return
            asked.update(missing)
            rows = await self.store.rows(_refs_to_store(tuple(missing), fetch.endpoint.schema))
            if not rows or controller.resets != reset:
                return
            self._replay(act.Merge(self._from_store(Patch(entities=tuple(rows)))))

    def _release_locks(self, controller: Controller) -> None:
        """Reset: the requests holding fleet locks are dropped and will write nothing, so release the locks now."""
        tokens, self._tokens = self._tokens, {}
        for store_key, token in tokens.values():
            if (store_key, token) in self._held:
                unlock = ((store_key, token),)
                self._enqueue(Write(Patch(released=(store_key,)), unlock=unlock, now=controller.now()))

    def _drop_pending(self, error: type[ResetError | ClosedError] = ResetError) -> None:
        """Reset or close: fetches waiting on the backend fail (`error`) like in-flight requests do."""
        pending, self._pending = self._pending, {}
        for actions in pending.values():
            _fail(actions, error)


def _endpoint_fp(endpoint: object) -> str:
    """The fingerprint of an endpoint's schema (recorded as this version's): names its key in the store."""
    return KNOWN.note(getattr(endpoint, "schema", None))


def _to_store(patch: Patch, schema: object, endpoint_fp: str | None) -> Patch:
    """`patch` (written with `schema`) under store keys: each row key and endpoint key named by its fingerprint.

    Another version of the program (an entity's fields or nested members changed)
    names its rows by other fingerprints: neither takes the other's rows as its own.
    """
    fps = row_keys(schema)
    KNOWN.note(schema)

    def row_key(key: str) -> str:
        return versioned(key, fps.get(key) or schema_fingerprint(schema))

    def endpoint_key(key: str) -> str:
        return key if endpoint_fp is None else versioned(key, endpoint_fp)

    return Patch(
        entities=tuple((row_key(key), pk, record, meta) for key, pk, record, meta in patch.entities),
        endpoints=tuple((endpoint_key(key), result, meta) for key, result, meta in patch.endpoints),
        indexes=tuple((row_key(key), name, value, pk) for key, name, value, pk in patch.indexes),
        invalidated=tuple(endpoint_key(key) for key in patch.invalidated),
        expired=tuple(endpoint_key(key) for key in patch.expired),
        released=tuple(endpoint_key(key) for key in patch.released),
    )


def _refs_to_store(refs: tuple[Ref, ...], schema: object) -> tuple[Ref, ...]:
    """Entity refs (key, pk) of rows written or read with `schema`, under their store keys."""
    fps = row_keys(schema)
    return tuple((versioned(key, fps.get(key) or schema_fingerprint(schema)), pk) for key, pk in refs)


def _fail(actions: Sequence[act.Fetch], error: type[ResetError | ClosedError]) -> None:
    """Give every caller of `actions` still waiting `error` (a read-through that will never answer)."""
    for action in actions:
        if action.future is not None and not action.future.done():
            action.future.set_exception(error())


def _encodes(write: Write) -> bool:
    """Whether every value `write` carries is JSON, what a store keeps (as the stores encode: NaN allowed).

    Tells a value that cannot be shared (the caller's data) from a store failing on a
    write that holds nothing but JSON (a bug of the store, to be reported as such).
    """
    try:
        json.dumps([write.patch.to_json(), [response for response, _ in write.responses.values()]])
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def _raise_if_cancelling(error: BaseException | None = None) -> None:
    """Re-raise a cancellation that the backend's client swallowed or turned into a connection error.

    Some clients (redis-py) answer a cancellation in the middle of a call that way; a
    task that then went on looping would never end, and `asyncio.run` would wait for
    it forever. (Python 3.11+, where tasks count cancellation requests.)
    """
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    if cancelling is not None and cancelling():
        raise asyncio.CancelledError from error


def _fresh(controller: Controller, key: str) -> bool:
    """Whether the local store holds a usable, unexpired result for `key` (an explicit refetch)."""
    state = controller.get_committed_state()
    meta = state.meta.get(key)
    return (
        meta is not None
        and key in state.endpoints
        and not meta.get("invalidated")
        and meta.get("error") is None
        and controller.now() <= meta.get("expires_at", 0)
    )


def _reads_deleted(controller: Controller, fetch: act.Fetch) -> bool:
    """Whether the stored result of `fetch` reads as invalid: a shared copy naming an entity deleted
    after it was fetched (a newer row of `None`). The process that deleted it holds the same rows and
    fetches the key again (`suspense` then raises the 404): served as is, the copy would answer `None`."""
    response = read_response(MemoCache(), fetch.endpoint, fetch.args, controller.get_committed_state())[0]
    return response.expiry_status == ExpiryStatus.INVALID


def _holds(state: State, key: str, meta: Meta) -> bool:
    """Whether `state` stores the response of `key` that `meta` dates (storing it did not fail)."""
    stored = state.meta.get(key)
    return (
        key in state.endpoints
        and stored is not None
        and stored.get("error") is None
        and stored.get("fetched_at") == meta["fetched_at"]
        and stored.get("date") == meta["date"]
    )


def _usable(snapshot: Snapshot | None, now: float) -> bool:
    return snapshot is not None and not snapshot.expired and now <= snapshot.meta["expires_at"]


def _shareable(action: act.Fetch) -> bool:
    """Whether the shared copy of the fetch's key may answer it: not a side effect, nor a page
    (whose key names its list: the copy is the list, not the page asked for)."""
    return not action.endpoint.side_effect and not keys_pages_as_one(action.endpoint)


def _touched(
    before: State, state: State, schema: object, value: object, args: tuple[object, ...], meta: Meta
) -> tuple[tuple[EntityRow, ...], tuple[IndexRow, ...], tuple[Ref, ...]]:
    """The committed rows (in `state`) of every entity `value` wrote over `before`, its index entries, their refs.

    Normalized over `before` (the state it was stored in), not alone: a push or a remove
    also rewrites the stored collections it lands in.
    """
    written = written_by(schema, value, args, before, meta)
    rows: list[EntityRow] = []
    refs: list[Ref] = []
    for key, table in written.rows.items():
        stored, stored_meta = state.entities.get(key), state.entities_meta.get(key)
        for pk in table:
            record = None if stored is None else stored.get(pk)
            row_meta = None if stored_meta is None else stored_meta.get(pk)
            if record is None or row_meta is None:
                continue
            refs.append((key, pk))
            rows.append((key, pk, None if record is INVALID else record, _meta3(row_meta)))
    indexes: list[IndexRow] = [
        (key, field_name, value_text, None if pk is INVALID else pk)
        for key, fields in written.indexes.items()
        for field_name, values in fields.items()
        for value_text, pk in values.items()
    ]
    return tuple(rows), tuple(indexes), tuple(refs)


def _meta3(meta: Mapping[str, float]) -> Meta:
    return {"fetched_at": meta["fetched_at"], "date": meta["date"], "expires_at": meta["expires_at"]}


__all__ = ["Patch", "SharedManager", "SharedStore", "Snapshot", "Write", "merge_patch"]
