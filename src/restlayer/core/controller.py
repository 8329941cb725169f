"""`Controller`: the one normalized store every call reads and writes.

Reads are synchronous and answered from the store through one shared
`MemoCache`; only what does I/O is a coroutine. Every change is an action that
runs through the managers (middleware) and then the pure reducer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple, cast, overload

from restlayer._args import merge_keywords
from restlayer._typing import A, E, P, Self, T
from restlayer.core import _actions as act
from restlayer.core._optimistic import apply_optimistic
from restlayer.core._read import (
    INF,
    Refs,
    bind_arguments,
    deletes,
    empty_form,
    needs_fetch,
    read_error,
    read_response,
    refs_of,
    same_data,
    skips,
)
from restlayer.core._reducer import apply
from restlayer.core._state import EMPTY_STATE, State
from restlayer.core._watch import Watcher, Watchers, changed
from restlayer.core.endpoint import Endpoint
from restlayer.core.expiry import DATA_EXPIRY, DLE, ERROR_EXPIRY, ExpiryStatus, Response, expiry_length
from restlayer.core.gc import GCPolicy
from restlayer.core.manager import Manager, build_chain
from restlayer.core.network import DEFAULT_MAX_CONCURRENT_REQUESTS, NetworkManager
from restlayer.core.shared import SharedManager, SharedStore
from restlayer.core.subscriptions import SubscriptionManager
from restlayer.errors import ClosedError, ParamError, ResetError, RestLayerError
from restlayer.schema import MemoCache, Schema, SchemaLike
from restlayer.schema._base import compile_schema
from restlayer.schema._collection import check_args_key

Clock = Callable[[], float]
_log = logging.getLogger("restlayer")
#: `refetch_overtaken(endpoint, args)`: what to refetch, `(endpoint, args)`, after a mutation was overtaken.
Refetch = Callable[[Endpoint[object], tuple[object, ...]], "tuple[Endpoint[object], tuple[object, ...]] | None"]


#: A polling fetch's (data_expiry_length, error_expiry_length, error_policy).
_Polling = tuple[float, float, Callable[[BaseException], str | None]]


def _soft(error: BaseException) -> str:
    """Polling's error policy: every failure is soft (the stored data stays)."""
    return "soft"


def _wall_clock() -> float:
    return time.time() * 1000


#: The hooks the controller calls on a manager (subclassing `Manager` is the usual way to have them).
_MANAGER_HOOKS = ("init", "middleware", "cleanup")
#: The methods of the `SharedStore` protocol (a backend of your own need not subclass it).
_STORE_METHODS = ("open", "run", "write", "read", "rows", "keys", "lock", "extend", "close")


def _has_methods(value: object, names: Sequence[str]) -> bool:
    return all(callable(getattr(value, name, None)) for name in names)


def _given_managers(managers: object) -> list[Manager]:
    """`managers=` as a list, each a manager; ParamError for anything else (not a TypeError later)."""
    if managers is None:
        return []
    if isinstance(managers, (str, bytes, Mapping)) or _has_methods(managers, _MANAGER_HOOKS):
        raise ParamError(f"Controller: managers must be a list of managers, not {managers!r}")
    try:
        chosen = list(cast(Sequence[Manager], managers))
    except TypeError:
        raise ParamError(f"Controller: managers must be a list of managers, not {managers!r}") from None
    for manager in chosen:
        if not _has_methods(manager, _MANAGER_HOOKS):
            raise ParamError(
                f"Controller: managers must be Manager objects (init, middleware, cleanup), not {manager!r}"
            )
    return chosen


def _check_options(clock: object, gc_policy: object, refetch_overtaken: object, shared: object) -> None:
    """Refuse options of the wrong kind when the controller is built.

    Left unchecked they failed far from the mistake: a bare TypeError at the first fetch
    (`clock`), an AttributeError at construction or close (`gc_policy`, `shared`).
    """
    for name, value in (("clock", clock), ("refetch_overtaken", refetch_overtaken)):
        if value is not None and not callable(value):
            raise ParamError(f"Controller: {name} must be callable or None, not {value!r}")
    if gc_policy is not None and not isinstance(gc_policy, GCPolicy):
        raise ParamError(f"Controller: gc_policy must be a GCPolicy or None, not {gc_policy!r}")
    if shared is not None and not isinstance(shared, SharedManager) and not _has_methods(shared, _STORE_METHODS):
        raise ParamError(f"Controller: shared must be a SharedStore (RedisStore, SQLiteStore, ...), not {shared!r}")


def _with_defaults(
    managers: Sequence[Manager] | None,
    max_concurrent_requests: int | None,
    shared: SharedStore | SharedManager | None,
) -> list[Manager]:
    """The given managers, the shared store's, plus a NetworkManager and SubscriptionManager unless given."""
    chosen = _given_managers(managers)
    if shared is not None:
        chosen.append(shared if isinstance(shared, SharedManager) else SharedManager(shared))
    if not any(isinstance(m, NetworkManager) for m in chosen):
        chosen.append(NetworkManager(max_concurrent_requests))
    if not any(isinstance(m, SubscriptionManager) for m in chosen):
        chosen.append(SubscriptionManager())
    return chosen


def _run_policy(
    policy: Callable[[BaseException], str | None] | None, error: BaseException, name: str
) -> tuple[str | None, RestLayerError | None]:
    """`policy(error)`, or (None, an error naming the policy) when the policy itself raises.

    No policy (an endpoint's `error_policy=None`) keeps no data on any error: (None, None).
    """
    if policy is None:
        return None, None
    label = getattr(policy, "__qualname__", repr(policy))
    try:
        decided = policy(error)
    except Exception as exc:
        failure = RestLayerError(
            f"error_policy {label} of {name} raised {type(exc).__name__}: {exc} "
            f"(while handling {type(error).__name__}: {error})"
        )
        failure.__cause__ = exc
        return None, failure
    if decided is not None and decided != "soft":  # "Soft" or "keep" would silently count as hard
        failure = RestLayerError(
            f"error_policy {label} of {name} returned {decided!r}: it must return 'soft' or None "
            f"(while handling {type(error).__name__}: {error})"
        )
        failure.__cause__ = error
        return None, failure
    return decided, None


def _read_once(value: object) -> bool:
    """Whether a fetch's `value` can be read only once (an async iterator, as a `content="stream"` body is):
    no data to keep in the store, which would hand it spent to every later reader."""
    return isinstance(value, AsyncIterator)


class Controller:
    """The store plus every way to read, fetch and change it.

    `managers`: middleware over every action (a NetworkManager and a
    SubscriptionManager are added unless given); `clock`: a callable returning
    milliseconds (for expiry tests); `gc_policy`: a `GCPolicy` to bound memory;
    `max_concurrent_requests`: how many requests the default NetworkManager
    sends at once (the rest wait their turn; `None`: no limit);
    `refetch_overtaken(endpoint, args) -> (endpoint, args) | None`: called when a
    mutation's reply lands after a later-started write of the same entities
    (so the store shows the later one, which the server may have applied
    first); the returned read is refetched in the background.
    `shared`: a store backend shared with other processes or runs (see `SharedManager`).
    """

    def __init__(
        self,
        *,
        managers: Sequence[Manager] | None = None,
        clock: Clock | None = None,
        gc_policy: GCPolicy | None = None,
        max_concurrent_requests: int | None = DEFAULT_MAX_CONCURRENT_REQUESTS,
        refetch_overtaken: Refetch | None = None,
        shared: SharedStore | SharedManager | None = None,
    ) -> None:
        _check_options(clock, gc_policy, refetch_overtaken, shared)
        self.now: Clock = clock or _wall_clock
        self.memo = MemoCache()
        # Reads of another state than the one readers see (optimistic guesses read the store under
        # them, the overtaken check the committed one) have their own memo: a read replaces the
        # cached instance of a pk, and must not replace the one readers were given.
        self._side_memo = MemoCache()
        self.managers = _with_defaults(managers, max_concurrent_requests, shared)
        self.closed = False
        self._wakeups: set[asyncio.Event] = set()  # `live()` iterators waiting for a change
        self.refetch_overtaken = refetch_overtaken
        self.gc_policy = gc_policy
        self._state: State = EMPTY_STATE
        self._resets = 0  # how many resets were committed (a fetch dropped by one is retried by readers)
        self._view: State | None = EMPTY_STATE
        self._overlay: tuple[State, State] | None = None  # the last (state, view) with optimistic guesses
        self._failures: weakref.WeakKeyDictionary[act.SetResponse, BaseException] = weakref.WeakKeyDictionary()
        self._unsent: dict[str, _Unsent] = {}  # per key: the last request that could not be built
        self._watchers = Watchers(self._read_watched, self._hold, self._unhold, self._meta_of)
        self._dispatch = build_chain(self, self.managers, self._commit)
        for manager in self.managers:
            manager.init(self)
        if gc_policy is not None:
            gc_policy.init(self)

    # ----- the store --------------------------------------------------------------------
    def dispatch(self, action: act.Action) -> None:
        """Send an action through the managers to the store."""
        self._dispatch(action)

    def _commit(self, action: act.Action) -> None:
        """The end of the manager chain: reduce, then tell the watchers."""
        state, failure = apply(self._state, action)
        if failure is not None and isinstance(action, act.SetResponse):
            self._failures[action] = failure
        if state is self._state:
            return
        previous, self._state = self._state, state
        self._view = None
        if isinstance(action, act.SetResponse):
            self._forget_replaced(action, previous, state)
        if isinstance(action, act.Reset):
            self._resets += 1
            self._unsent.clear()
            self.memo.clear()
            self._side_memo.clear()
        elif isinstance(action, act.GC):
            self.memo.prune(state.entities)  # what stays keeps its identity; the memory of the rest is returned
            self._side_memo.prune(state.entities)
            self._forget_unsent(action.endpoint_keys)
        if len(self._watchers):
            self._watchers.notify()

    def _failure_of(self, action: act.SetResponse) -> BaseException | None:
        """The error storing `action` failed with (taken: asked once), or None."""
        return self._failures.pop(action, None) if self._failures else None  # empty: no weakref made

    def _forget_replaced(self, action: act.SetResponse, before: State, after: State) -> None:
        """Let the memo drop its read of a result this response replaced (else it stays until evicted)."""
        old = before.endpoints.get(action.key)
        if old is not None and old is not after.endpoints.get(action.key):
            self.memo.forget(action.endpoint.schema, old)

    def _current(self) -> State:
        """The committed state with pending optimistic updates applied (cached until the next change)."""
        view = self._view
        if view is None:
            state = self._state
            if state.optimistic:
                view = apply_optimistic(self._side_memo, state, self._overlay)
                self._overlay = (state, view)
            else:
                view, self._overlay = state, None
            self._view = view
        return view

    @property
    def resets(self) -> int:
        """How many times the store was reset: a manager that awaits compares it before and after
        to know whether a reset came meanwhile (comparing reset times misses two in one instant)."""
        return self._resets

    def get_state(self) -> State:
        """A read-only snapshot of the store, pending optimistic updates applied; never changes later."""
        return self._current()

    def get_committed_state(self) -> State:
        """The store without pending optimistic updates (what responses actually wrote)."""
        return self._state

    def close(self) -> None:
        """Stop polling, garbage collection and in-flight requests; their callers get `ClosedError`.

        Later fetches raise `ClosedError`; reads of the store keep working.
        """
        self.closed = True
        for event in self._wakeups:
            event.set()
        for manager in self.managers:
            manager.cleanup()
        if self.gc_policy is not None:
            self.gc_policy.cleanup()

    def on_close(self, event: asyncio.Event) -> Callable[[], None]:
        """Set `event` when this controller closes (at once when it is closed already).

        For long waits outside the managers (a GraphQL subscription's socket) to end on
        `close()` like `live()` does. Returns the function that stops telling `event`.
        """
        if self.closed:
            event.set()
        self._wakeups.add(event)
        return lambda: self._wakeups.discard(event)

    async def __aenter__(self) -> Self:  # a subclass of the app's own stays itself
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Leaving `async with Controller() as ctrl:` closes it and this loop's shared HTTP client.

        Requests other controllers still have on that client finish first (the last one closes it).

        A shared store first gets every queued write (bounded), then its connections are closed.
        """
        from restlayer.rest import aclose

        shared = [m for m in self.managers if isinstance(m, SharedManager)]
        for manager in shared:
            await manager.settle()
        self.close()
        for manager in shared:
            await manager.wait_closed()
        await aclose()

    # ----- arguments ------------------------------------------------------------------------
    @staticmethod
    def _bind(
        endpoint: Endpoint[object], args: tuple[object, ...], kwargs: dict[str, object]
    ) -> tuple[object, ...] | None:
        """Canonical args, or None for "don't fetch" (`ctrl.dle(ep, None)`)."""
        return None if skips(args, kwargs) else bind_arguments(endpoint, args, kwargs)

    # ----- reads --------------------------------------------------------------------------------
    def _read(self, endpoint: Endpoint[T], args: tuple[object, ...]) -> tuple[Response[T], Refs]:
        """The Response and, only when garbage collection counts references, the entities read."""
        response, detail = read_response(self.memo, endpoint, args, self._current())
        return response, (refs_of(detail) if self.gc_policy is not None else [])

    def _read_watched(
        self, endpoint: Endpoint[object], args: tuple[object, ...]
    ) -> tuple[Response[object], Refs, Callable[[], bool]]:
        """`_read` plus a test telling a watcher whether a later store still holds what this read saw."""
        state = self._current()
        response, detail = read_response(self.memo, endpoint, args, state)
        same = same_data(endpoint, args, state, detail)
        refs = refs_of(detail) if self.gc_policy is not None else []
        return response, refs, lambda: same(self._current())

    def _meta_of(self, key: str) -> object:
        """The metadata entry of store key `key` as readers see it (None when absent).

        While a request for the key could not be built, that failure instead: `dle`
        shows it, so a UI watching the key must read again when it comes or goes.
        """
        unsent = self._unsent_of(key)
        return self._current().meta.get(key) if unsent is None else unsent

    def _forget_unsent(self, keys: Iterable[str]) -> None:
        """Drop the unbuildable-request records of keys the garbage collector swept.

        Such a record lives outside the store, so the sweep's removal of the key's
        `endpoints` and `meta` left it behind: with it, every key whose request once
        failed to build stayed in memory for good. The sweep only takes keys no
        reader holds; a later read builds the request again (nothing is sent when it
        fails again) and records the failure anew.
        """
        for key in keys:
            self._unsent.pop(key, None)

    def _unsent_of(self, key: str) -> _Unsent | None:
        """The record of the last request for `key` that could not be built, while it still applies.

        It applies until the store's metadata of the key changes (a reply, an error, an
        invalidation, `set_response`...): a newer outcome replaces it.
        """
        unsent = self._unsent.get(key)
        if unsent is not None and self._state.meta.get(key) is not unsent.meta:
            del self._unsent[key]
            return None
        return unsent

    @overload
    def get_response(self, endpoint: Endpoint[T], skip: None, /) -> Response[T]: ...
    @overload
    def get_response(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> Response[T]: ...
    @overload
    def get_response(self, endpoint: Endpoint[T, [P]], params: P | None, /) -> Response[T]: ...
    def get_response(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> Response[T]:
        """`Response(data, expiry_status, expires_at)` of the stored result; never fetches."""
        bound = self._bind(endpoint, args, kwargs)
        if bound is None:
            return Response(None, ExpiryStatus.VALID, INF)
        return read_response(self.memo, endpoint, bound, self._current())[0]

    @overload
    def get(self, schema: type[E], *args: object, **kwargs: object) -> E | None: ...
    @overload
    def get(self, schema: Schema[T], *args: object, **kwargs: object) -> T | None: ...
    @overload
    def get(self, schema: list[type[E]], *args: object, **kwargs: object) -> list[E] | None: ...
    @overload
    def get(self, schema: list[Schema[T]], *args: object, **kwargs: object) -> list[T] | None: ...
    @overload
    def get(self, schema: Mapping[str, object], *args: object, **kwargs: object) -> dict[str, Any] | None: ...
    @overload
    def get(self, schema: SchemaLike, *args: object, **kwargs: object) -> Any: ...
    def get(self, schema: SchemaLike, *args: object, **kwargs: object) -> object:
        """Denormalized read of any schema (Entity, Collection, Query, All, dict) from the store."""
        return self.memo.query(schema, merge_keywords(args, kwargs), self._current())

    @overload
    def get_error(self, endpoint: Endpoint[object], skip: None, /) -> BaseException | None: ...
    @overload
    def get_error(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> BaseException | None: ...
    @overload
    def get_error(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> BaseException | None: ...
    def get_error(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> BaseException | None:
        """The stored error, unless its policy is soft and data is still stored."""
        bound = self._bind(endpoint, args, kwargs)
        return None if bound is None else read_error(endpoint, bound, self._current())

    @overload
    def last_error(self, endpoint: Endpoint[object], skip: None, /) -> BaseException | None: ...
    @overload
    def last_error(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> BaseException | None: ...
    @overload
    def last_error(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> BaseException | None: ...
    def last_error(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> BaseException | None:
        """The error of the call's latest fetch, even one `get_error` hides (a soft failure, e.g. of a poll).

        While a soft failure keeps the old data showing, this tells that the data
        could not be refreshed; a later successful fetch clears it.
        """
        bound = self._bind(endpoint, args, kwargs)
        if bound is None:
            return None
        key = endpoint.key(*bound)
        unsent = self._unsent_of(key)
        if unsent is not None:
            return unsent.error
        meta = self._current().meta.get(key)
        return None if meta is None else meta.get("error")

    # ----- fetching -----------------------------------------------------------------------------
    def _new_fetch(
        self,
        endpoint: Endpoint[object],
        args: tuple[object, ...],
        *,
        future: asyncio.Future[object] | None = None,
        background: bool = False,
        polling: _Polling | None = None,
    ) -> act.Fetch:
        """The `"fetch"` action of a call, its expiry lengths resolved (polling's when polling)."""
        if polling is None:
            data, error, policy = endpoint.data_expiry_length, endpoint.error_expiry_length, None
        else:
            data, error, policy = polling
        key = endpoint.key(*args)
        check_args_key(endpoint.schema, args)  # a list key its args cannot name: refused before sending
        return act.Fetch(
            endpoint,
            args,
            key,
            self.now(),
            future,
            background,
            data_expiry_length=expiry_length(data, DATA_EXPIRY, "data_expiry_length"),
            error_expiry_length=expiry_length(error, ERROR_EXPIRY, "error_expiry_length"),
            error_policy=policy,
        )

    async def _fetch(self, endpoint: Endpoint[object], args: tuple[object, ...]) -> object:
        """Dispatch a fetch and wait for its processed value (shared with concurrent callers)."""
        if self.closed:
            raise ClosedError(f"The controller is closed: cannot fetch {endpoint.name}")
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.dispatch(self._new_fetch(endpoint, args, future=future))
        return await future

    def _start(self, endpoint: Endpoint[object], args: tuple[object, ...], polling: _Polling | None = None) -> bool:
        """Start a background fetch nobody awaits; False when none can start (no running loop, or closed)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        if self.closed:
            return False
        self.dispatch(self._new_fetch(endpoint, args, background=True, polling=polling))
        return True

    # ----- the manager API: what managers call to act on the store ------------------------------
    def poll(self, endpoint: Endpoint[object], args: tuple[object, ...], frequency: float) -> None:
        """Start one background polling fetch of `endpoint(*args)` (bound args): short expiry, soft errors."""
        self._start(endpoint, args, (frequency / 2, frequency / 10, _soft))

    def resolve(
        self, fetch: act.Fetch, *, value: object = None, error: BaseException | None = None, unread: bool = False
    ) -> BaseException | None:
        """Store the outcome of a `"fetch"` action: its reply `value`, or the `error` the request raised.

        A `value` read once (an async iterator: a `content="stream"` body) is its caller's alone and
        stored as `None`: kept, every later read would get it spent, and it would hold its connection.

        Returns the error its callers must get instead of `value` when storing
        failed (the reply did not match the schema, or the error policy raised).
        `unread`: every caller was cancelled while the request ran on (a mutation);
        the garbage collector is told of the stored outcome as a caller's own read
        would have told it, or nothing would ever let it be swept.
        """
        ep, date = fetch.endpoint, self.now()
        failure: BaseException | None
        if error is not None:
            policy, failure = _run_policy(fetch.error_policy or ep.error_policy, error, ep.name)
            action = act.SetResponse(
                ep,
                fetch.args,
                fetch.key,
                error,
                fetch.fetched_at,
                date,
                date + fetch.error_expiry_length,
                True,
                policy,
                fetch,
            )
            self.dispatch(action)
        else:
            stored = None if _read_once(value) else value
            action = act.SetResponse(
                ep, fetch.args, fetch.key, stored, fetch.fetched_at, date, date + fetch.data_expiry_length, fetch=fetch
            )
            self.dispatch(action)
            failure = self._failure_of(action)
            if failure is None and self.refetch_overtaken is not None and ep.side_effect:
                self._refetch_if_overtaken(fetch)
        if _log.isEnabledFor(logging.DEBUG):
            self._log_outcome(fetch, error, action.error_policy, failure)
        if unread and self.gc_policy is not None and not self.closed:
            self._touch(ep, fetch.args)
        return failure

    def _log_outcome(
        self, fetch: act.Fetch, error: BaseException | None, policy: str | None, failure: BaseException | None
    ) -> None:
        """One DEBUG line per committed fetch: stored (with its entity count) or failed."""
        if error is None and failure is None:
            refs = refs_of(read_response(self.memo, fetch.endpoint, fetch.args, self._current())[1])
            _log.debug("stored %s (%d entities)", fetch.key, len(refs))
        elif policy == "soft":
            _log.debug("fetch %s failed under the soft policy, stored data kept: %s", fetch.key, error)

    def _refetch_if_overtaken(self, fetch: act.Fetch) -> None:
        """A mutation whose entities hold a later-started write: refetch what `refetch_overtaken` names."""
        state = self._state
        detail = read_response(self._side_memo, fetch.endpoint, fetch.args, state)[1]
        tables = state.entities_meta
        for key, pk in refs_of(detail):
            table = tables.get(key)
            meta = None if table is None else table.get(pk)
            if meta is not None and meta["fetched_at"] > fetch.fetched_at:
                break
        else:
            return
        try:
            target = self.refetch_overtaken(fetch.endpoint, fetch.args) if self.refetch_overtaken else None
            if target is not None:
                endpoint, args = target
                self._start(endpoint, endpoint.bind(*args))
        except Exception:
            _log.exception("refetch_overtaken failed after %s", fetch.key)

    def abort(self, fetch: act.Fetch, *, unsent: BaseException | None = None) -> None:
        """Forget a `"fetch"` action whose request was cancelled: only its optimistic update goes.

        `unsent`: the error (a `ParamError`) the request could not be built with. It is
        never stored, but readers must not show the key as loading forever: `dle` and
        `last_error` give it (and `dle` does not retry before `error_expiry_length`, nor
        within `UNSENT_RETRY_FLOOR`) until the key's stored state changes. A fetch nobody
        awaits (a background read, a poll) also logs it, as nobody else would see it.
        """
        now = self.now()
        if unsent is not None:
            retry_after = now + max(fetch.error_expiry_length, UNSENT_RETRY_FLOOR)
            self._unsent[fetch.key] = _Unsent(unsent, retry_after, self._state.meta.get(fetch.key))
            if fetch.background:
                _log.warning("the request for %s could not be built: %s", fetch.key, unsent)
        self.dispatch(
            act.SetResponse(
                fetch.endpoint, fetch.args, fetch.key, None, fetch.fetched_at, now, now, fetch=fetch, aborted=True
            )
        )

    def _fetched(self, endpoint: Endpoint[object], args: tuple[object, ...], value: object) -> object:
        """A fetch's return: the store's read of the result (what `cache` gives now, same object).

        A deleting endpoint (its schema holds `Invalidate`) reads as nothing, so it
        returns its processed reply (the data naming what was deleted) instead; so
        does a body read once (`content="stream"`), which the store does not keep.
        """
        response, refs = self._read(endpoint, args)
        if self.gc_policy is not None:
            self.gc_policy.touch(endpoint.key(*args), refs)
        return value if deletes(endpoint.schema) or _read_once(value) else response.data

    async def fetch(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T:
        """Send the request (GETs of one key share it), store the result, return the stored read of it.

        Cancelling the caller ends its wait; a read's request is cancelled with its last
        caller, but a mutation's (`side_effect`) runs on and its reply is stored (the server
        may have applied it), its optimistic update staying until then.
        """
        bound = bind_arguments(endpoint, args, kwargs)
        try:
            value = await self._fetch(endpoint, bound)
        except Exception:
            if self.gc_policy is not None and not self.closed:  # a failed fetch's stored error is swept like data
                self._touch(endpoint, bound)
            raise
        return cast(T, self._fetched(endpoint, bound, value))

    async def fetch_if_stale(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T:
        """The stored data while usable and unexpired, else `fetch`."""
        bound = bind_arguments(endpoint, args, kwargs)
        response = self._read(endpoint, bound)[0]
        if response.expiry_status != ExpiryStatus.INVALID and self.now() <= response.expires_at:
            _log.debug("read %s served from the store", endpoint.key(*bound))
            return cast(T, response.data)
        value = await self._fetch(endpoint, bound)
        return cast(T, self._fetched(endpoint, bound, value))

    # ----- writes ---------------------------------------------------------------------------------
    def set_response(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Store `response` (the last positional argument) as the result of `endpoint(*args)`.

        A response the schema cannot read raises `ProcessingError` (status 400) and changes nothing.
        """
        if not args:
            raise ParamError("set_response(endpoint, *args, response): the response is missing")
        *rest, response = args
        bound = bind_arguments(endpoint, tuple(rest), kwargs)
        now = self.now()
        expires = now + expiry_length(endpoint.data_expiry_length, DATA_EXPIRY, "data_expiry_length")
        action = act.SetResponse(endpoint, bound, endpoint.key(*bound), response, now, now, expires)
        self.dispatch(action)
        failure = self._failure_of(action)
        if failure is not None:
            raise failure

    def set_error(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Store `error` (the last positional argument) for `endpoint(*args)`; data stays."""
        if not args:
            raise ParamError("set_error(endpoint, *args, error): the error is missing")
        *rest, error = args
        if not isinstance(error, BaseException):
            raise ParamError(f"set_error(endpoint, *args, error): the error must be an exception, not {error!r}")
        bound = bind_arguments(endpoint, tuple(rest), kwargs)
        now = self.now()
        expires = now + expiry_length(endpoint.error_expiry_length, ERROR_EXPIRY, "error_expiry_length")
        policy, failure = _run_policy(endpoint.error_policy, error, endpoint.name)
        if failure is not None:
            raise failure
        self.dispatch(act.SetResponse(endpoint, bound, endpoint.key(*bound), error, now, now, expires, True, policy))

    def set(self, schema: SchemaLike, *args: object, **kwargs: object) -> None:
        """Write `value` (last positional) into the entity tables.

        A callable value is an updater: it gets the current value and returns the
        new one; when nothing is stored for these arguments it is not called.
        """
        if not args:
            raise ParamError("set(schema, *args, value): the value is missing")
        if compile_schema(schema) is None:
            raise ParamError(
                f"set(schema, *args, value): {schema!r} is not a schema (an Entity class, [Entity], a Collection, ...)"
            )
        *rest, value = args
        bound = merge_keywords(tuple(rest), kwargs)
        if callable(value) and not isinstance(value, type):
            current = self.memo.query(schema, bound, self._current())
            if current is None:
                return
            value = value(current)
        now = self.now()
        self.dispatch(act.Set(schema, bound, value, now, now + DATA_EXPIRY))

    @overload
    def invalidate(self, endpoint: Endpoint[object], skip: None, /) -> None: ...
    @overload
    def invalidate(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> None: ...
    @overload
    def invalidate(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> None: ...
    def invalidate(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Drop the stored result: readers block on a refetch (status INVALID)."""
        bound = self._bind(endpoint, args, kwargs)
        if bound is not None:
            self.dispatch(act.Invalidate((endpoint.key(*bound),)))

    def invalidate_all(self, test_key: Callable[[str], bool]) -> None:
        """`invalidate` every stored endpoint result whose key passes `test_key`."""
        self.dispatch(act.InvalidateAll(_key_test("invalidate_all", test_key)))

    def expire_all(self, test_key: Callable[[str], bool]) -> None:
        """Make every result whose key passes `test_key` stale: served, but refetched in the background."""
        self.dispatch(act.ExpireAll(_key_test("expire_all", test_key)))

    def reset_entire_store(self) -> None:
        """Empty the store; in-flight fetches fail with ResetError and their replies are dropped."""
        self.dispatch(act.Reset(self.now()))

    @overload
    async def subscribe(self, endpoint: Endpoint[object], skip: None, /) -> None: ...
    @overload
    async def subscribe(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> None: ...
    @overload
    async def subscribe(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> None: ...
    async def subscribe(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Poll `endpoint(*args)` every `poll_frequency` ms until unsubscribed (`ClosedError` once closed)."""
        bound = self._bind(endpoint, args, kwargs)
        if bound is None:
            return
        if self.closed:
            raise ClosedError(f"The controller is closed: cannot subscribe to {endpoint.name}")
        if endpoint.poll_frequency is None:
            raise RestLayerError(f"{endpoint.name}: subscribe needs poll_frequency")
        self.dispatch(act.Subscribe(endpoint, bound, endpoint.key(*bound)))

    @overload
    async def unsubscribe(self, endpoint: Endpoint[object], skip: None, /) -> None: ...
    @overload
    async def unsubscribe(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> None: ...
    @overload
    async def unsubscribe(self, endpoint: Endpoint[object, [P]], params: P | None, /) -> None: ...
    async def unsubscribe(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Undo one `subscribe`; polling stops with the last subscriber."""
        bound = self._bind(endpoint, args, kwargs)
        if bound is None or endpoint.poll_frequency is None:
            return
        self.dispatch(act.Unsubscribe(endpoint, bound, endpoint.key(*bound)))

    # ----- garbage-collection references ---------------------------------------------------------
    def _hold(self, key: str | None, refs: Refs) -> None:
        if self.gc_policy is not None:
            self.gc_policy.acquire(key, refs)

    def _unhold(self, key: str | None, refs: Refs) -> None:
        if self.gc_policy is not None:
            self.gc_policy.release(key, refs)

    def _touch(self, endpoint: Endpoint[object], args: tuple[object, ...]) -> None:
        if self.gc_policy is not None:
            self.gc_policy.touch(endpoint.key(*args), self._read(endpoint, args)[1])

    # ----- bindings (the hooks' counterparts) -------------------------------------------------------
    @overload
    async def suspense(self, endpoint: Endpoint[T], skip: None, /) -> T | None: ...
    @overload
    async def suspense(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T: ...
    @overload
    async def suspense(self, endpoint: Endpoint[T, [P]], params: P | None, /) -> T | None: ...
    async def suspense(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> T | None:
        """The data once usable: fetches when missing, invalid or (with invalid_if_stale) stale.

        `None` for the arguments skips the call: nothing is fetched and the result is None.
        """
        bound = self._bind(endpoint, args, kwargs)
        if bound is None:
            return None
        return await self._suspense(endpoint, bound)

    async def _suspense(self, endpoint: Endpoint[T], args: tuple[object, ...]) -> T:
        response = self._read(endpoint, args)[0]
        if needs_fetch(response, self.now()):
            if response.expiry_status == ExpiryStatus.VALID:
                self._start(endpoint, args)
            else:
                response = await self._fetch_for_read(endpoint, args)
        elif _log.isEnabledFor(logging.DEBUG):
            _log.debug("read %s served from the store", endpoint.key(*args))
        self._touch(endpoint, args)
        error = read_error(endpoint, args, self._current())
        if error is not None:
            raise error
        return cast(T, response.data)

    async def _fetch_for_read(self, endpoint: Endpoint[T], args: tuple[object, ...]) -> Response[T]:
        """Fetch, then read the stored outcome (a stored error is raised by the caller).

        A fetch dropped by `reset_entire_store()` is sent again, as the original
        suspends again: the reader wants the data, not the reset.
        """
        while True:
            resets = self._resets
            try:
                await self._fetch(endpoint, args)
            except ResetError:
                if self._resets != resets:  # really dropped by a reset: ask again
                    continue
                raise
            except ClosedError:  # nothing was stored: the controller is gone
                raise
            except Exception as exc:
                if not self._recorded(endpoint, args, exc):  # a request never sent, a reply that could not be stored
                    raise
                # stored for the key: the caller reads it (and raises it unless the policy hides it)
            return self._read(endpoint, args)[0]

    def _recorded(self, endpoint: Endpoint[object], args: tuple[object, ...], error: BaseException) -> bool:
        """Whether `error`, a failed fetch's outcome, is the error the store now holds for the call.

        A reader re-reads a recorded failure from the store (where the error policy decides
        whether it shows); anything else (a request that could not be built, a reply whose
        storing failed) exists only in the exception, so the reader must get that.
        """
        meta = self._state.meta.get(endpoint.key(*args))
        return meta is not None and meta.get("error") is error

    @overload
    def dle(self, endpoint: Endpoint[T], skip: None, /) -> DLE[T]: ...
    @overload
    def dle(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> DLE[T]: ...
    @overload
    def dle(self, endpoint: Endpoint[T, [P]], params: P | None, /) -> DLE[T]: ...
    def dle(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> DLE[T]:
        """`DLE(data, loading, error)` right now; starts a fetch when one is needed, never waits."""
        bound = self._bind(endpoint, args, kwargs)
        if bound is None:
            return DLE(None, False, None)
        response = self._read(endpoint, bound)[0]
        unsent = self._unsent_of(endpoint.key(*bound))
        loading = stranded = False
        now = self.now()
        if needs_fetch(response, now) and (unsent is None or now > unsent.retry_after):
            started = self._start(endpoint, bound)
            unusable = response.expiry_status != ExpiryStatus.VALID
            loading = started and unusable
            stranded = unusable and not started  # no fetch will bring it
        data = cast("T | None", empty_form(endpoint, bound, self._current())) if loading else response.data
        self._touch(endpoint, bound)
        error = read_error(endpoint, bound, self._current())
        if error is None and stranded:
            error = self._unstartable(endpoint)
        if error is None and unsent is not None and not loading:
            error = unsent.error
        return DLE(data, loading, error)

    def _unstartable(self, endpoint: Endpoint[object]) -> RestLayerError:
        """Why `dle` could start no fetch for data it lacks: closed, or called outside an event loop.

        Without it `dle` read as loaded and empty (`DLE(None, False, None)`) though nothing would load.
        """
        if self.closed:
            return ClosedError(f"The controller is closed: cannot fetch {endpoint.name}")
        return RestLayerError(
            f"dle({endpoint.name}) was called outside a running event loop, so no fetch could start; "
            "call it from async code, or use restlayer.sync.Controller from blocking code"
        )

    @overload
    def cache(self, endpoint: Endpoint[T], skip: None, /) -> T | None: ...
    @overload
    def cache(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T | None: ...
    @overload
    def cache(self, endpoint: Endpoint[T, [P]], params: P | None, /) -> T | None: ...
    def cache(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> T | None:
        """The stored data (the empty loading form when it would be loading); never fetches."""
        bound = self._bind(endpoint, args, kwargs)
        if bound is None:
            return None
        response = self._read(endpoint, bound)[0]
        self._touch(endpoint, bound)
        if response.expiry_status != ExpiryStatus.VALID and needs_fetch(response, self.now()):
            return cast("T | None", empty_form(endpoint, bound, self._current()))
        return response.data

    def watch(
        self, endpoint: Endpoint[T], *args: object, callback: Callable[[T | None], object], **kwargs: object
    ) -> Callable[[], None]:
        """Call `callback(data)` whenever the denormalized value really changes; returns `unwatch()`.

        `data` is None once nothing is stored for the call (its entity deleted, the store reset).
        """
        if not callable(callback):
            raise ParamError(f"watch: callback must be callable, not {callback!r}")
        bound = self._bind(endpoint, args, kwargs)
        if bound is None:
            return lambda: None
        return self._watchers.add(Watcher(endpoint, bound, callback))

    def watch_response(
        self, endpoint: Endpoint[T], *args: object, callback: Callable[[T | None], object], **kwargs: object
    ) -> Callable[[], None]:
        """`watch`, also called when only the call's metadata changes; returns `unwatch()`.

        A screen shows more than the data: a fetch that failed or brought equal data
        ends its loading state, and an invalidation or expiry must make it fetch again.
        None of these changes the data, so `watch` misses them; this does not. It is
        called too (with the data last seen, once) when reading the call starts to
        fail, so a screen reads it again and shows the error instead of stale data.
        """
        if not callable(callback):
            raise ParamError(f"watch_response: callback must be callable, not {callback!r}")
        bound = self._bind(endpoint, args, kwargs)
        if bound is None:
            return lambda: None
        return self._watchers.add(Watcher(endpoint, bound, callback, with_meta=True))

    @overload
    def subscription(
        self, endpoint: Endpoint[object], skip: None, /
    ) -> contextlib.AbstractAsyncContextManager[None]: ...
    @overload
    def subscription(
        self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs
    ) -> contextlib.AbstractAsyncContextManager[None]: ...
    @contextlib.asynccontextmanager
    async def subscription(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> AsyncIterator[None]:
        """`async with ctrl.subscription(ep, ...)`: polls at `poll_frequency` while open."""
        bound = self._bind(endpoint, args, kwargs)
        if bound is None:
            yield
            return
        await self.subscribe(endpoint, *bound)
        key = endpoint.key(*bound)
        self._hold(key, [])
        try:
            yield
        finally:
            self._unhold(key, [])
            await self.unsubscribe(endpoint, *bound)

    @overload
    def live(self, endpoint: Endpoint[T], skip: None, /) -> AsyncIterator[T | None]: ...
    @overload
    def live(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> AsyncIterator[T]: ...
    @overload
    def live(self, endpoint: Endpoint[T, [P]], params: P | None, /) -> AsyncIterator[T | None]: ...
    async def live(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> AsyncIterator[T | None]:
        """`async for data in ctrl.live(ep, ...)`: the first value, then each change (polling if set).

        `None` for the arguments skips the call: one None, nothing fetched.
        """
        bound = self._bind(endpoint, args, kwargs)
        if bound is None:
            yield None
            return
        changes = asyncio.Event()
        unwatch = self.watch(endpoint, *bound, callback=lambda _: changes.set())
        polls = endpoint.poll_frequency is not None
        self._wakeups.add(changes)
        try:
            if polls:
                await self.subscribe(endpoint, *bound)
            last = await self._suspense(endpoint, bound)
            yield last
            while True:
                await changes.wait()
                changes.clear()
                if self.closed:
                    raise ClosedError("The controller was closed while live() waited for a change")
                value = await self._suspense(endpoint, bound)
                if changed(last, value):
                    last = value
                    yield value
        finally:
            self._wakeups.discard(changes)
            unwatch()
            if polls:
                await self.unsubscribe(endpoint, *bound)


#: The least time (ms) `dle` shows a request that could not be built before it tries to build it again,
#: whatever `error_expiry_length` says: the same arguments fail the same way, and a screen reading the
#: call on every change would otherwise try again on each render (with `0`, for ever, never showing it).
UNSENT_RETRY_FLOOR: Final = 1000.0


class _Unsent(NamedTuple):
    """A request that could not be built (a `ParamError`), kept for its key outside the store."""

    error: BaseException
    retry_after: float  # `dle` starts no new attempt before (like a stored error's expiry)
    meta: object  # the key's stored metadata then: once it changes, this no longer applies


def _key_test(name: str, test_key: Callable[[str], bool]) -> Callable[[str], bool]:
    """`test_key`, checked callable, its failures made a RestLayerError naming it.

    It runs inside the store's update, which an exception leaves undone: the caller gets
    a RestLayerError like for every other user hook, with the original as `__cause__`.
    """
    if not callable(test_key):
        raise ParamError(f"{name}(test_key): test_key must be a function of a store key, not {test_key!r}")

    def test(key: str) -> bool:
        try:
            return test_key(key)
        except RestLayerError:
            raise
        except Exception as exc:
            label = getattr(test_key, "__qualname__", repr(test_key))
            raise RestLayerError(
                f"{name}(test_key): test_key {label} raised {type(exc).__name__}: {exc} (on key {key!r})"
            ) from exc

    return test
