"""Optimistic updates: pending fetches' expected responses laid over the committed state.

The overlay is recomputed from the committed state whenever it changes, so a
settled fetch (its entry removed) is replaced or rolled back in one step.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, overload

from restlayer._args import merge_keywords
from restlayer._pmap import PMap, changed_between
from restlayer._sentinel import Sentinel
from restlayer._typing import E, T
from restlayer.core import _actions as act
from restlayer.core._read import INF, read_error, read_response, skips
from restlayer.core._reducer import normalize_response
from restlayer.core._state import State
from restlayer.core.expiry import ExpiryStatus, Response
from restlayer.errors import AbortOptimistic

if TYPE_CHECKING:
    from restlayer.core._state import EndpointMeta, Record
    from restlayer.core.endpoint import Endpoint
    from restlayer.schema import MemoCache, Schema, SchemaLike

log = logging.getLogger("restlayer")
Rows = PMap[str, "Record"]  # one entity table of a state: pk -> record


class Snapshot:
    """The store as an optimistic update sees it: reads against the state so far.

    `raise snapshot.abort` makes the update a no-op (the request still runs).
    """

    abort: AbortOptimistic = AbortOptimistic("Optimistic update aborted")

    def __init__(self, memo: MemoCache, state: State, fetched_at: float) -> None:
        self._memo = memo
        self.state = state
        self.fetched_at = fetched_at

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
        """Denormalized read of any schema (like `Controller.get`)."""
        return self._memo.query(schema, merge_keywords(args, kwargs), self.state)

    def get_response(self, endpoint: Endpoint[T], *args: object, **kwargs: object) -> Response[T]:
        """Like `Controller.get_response`, against this snapshot (`None` for the arguments: the skipped read)."""
        if skips(args, kwargs):
            return Response(None, ExpiryStatus.VALID, INF)
        return read_response(self._memo, endpoint, endpoint.bind(*args, **kwargs), self.state)[0]

    def get_error(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> BaseException | None:
        """Like `Controller.get_error`, against this snapshot (`None` for the arguments: no error)."""
        if skips(args, kwargs):
            return None
        return read_error(endpoint, endpoint.bind(*args, **kwargs), self.state)


def apply_optimistic(memo: MemoCache, state: State, previous: tuple[State, State] | None = None) -> State:
    """`state` with every pending optimistic response applied in start order.

    An entry whose `get_optimistic_response` fails, or whose guess the schema
    cannot store, is skipped and its error is shown as the key's error
    (`get_error`) until the fetch settles (logged once). `previous`:
    the last (state, result) pair, whose shown records are kept where nothing
    under them changed (see `_keep_unchanged`).
    """
    view = state
    for entry in state.optimistic:
        try:
            view = _guessed(memo, view, entry)
        except Exception as exc:
            _log_once(entry)
            view = _with_error(view, entry, exc)
    return view if previous is None else _keep_unchanged(previous, state, view)


def _guessed(memo: MemoCache, view: State, entry: act.Fetch) -> State:
    """`view` with the entry's expected response stored; raises what the guess or its storing raised."""
    value = _expected(memo, view, entry)
    if value is _SKIP:
        return view
    expires = entry.fetched_at + entry.data_expiry_length
    action = act.SetResponse(entry.endpoint, entry.args, entry.key, value, entry.fetched_at, entry.fetched_at, expires)
    return normalize_response(view, action, guess=_seed_of(entry))


def _log_once(entry: act.Fetch) -> None:
    """Log the failure being handled: once per entry, as the overlay is recomputed on every change."""
    if entry not in _logged:
        _logged.add(entry)
        log.exception("the optimistic update of %s failed (get_optimistic_response or its value)", entry.key)


def _keep_unchanged(previous: tuple[State, State], state: State, view: State) -> State:
    """`view` with each record the guesses wrote swapped for the one shown before, where that is equal.

    Recomputing the same pending guesses over a store whose records under them did not
    change gives equal records; keeping the shown objects keeps reads returning the same
    objects, as they do for stored data (a change of the record itself still gives new ones).
    """
    before, shown = previous
    if before.optimistic != state.optimistic:  # a guess came or went: what it shows is new
        return view
    changes = {}
    for key, table in view.entities.items():
        base, shown_table = state.entities.get(key), shown.entities.get(key)
        if table is base or shown_table is None:
            continue
        kept = _kept_rows(base, before.entities.get(key), table, shown_table)
        if kept:
            changes[key] = table.update(kept)
    return view.evolve(entities=view.entities.update(changes)) if changes else view


def _kept_rows(base: Rows | None, before_base: Rows | None, table: Rows, shown: Rows) -> dict[str, Record]:
    """The rows of `table` the guesses wrote over `base` that may keep the object `shown` held for them."""
    written = list(table) if base is None else changed_between(base, table)
    if written is None:  # not known which rows the guesses wrote: keep nothing
        return {}
    kept: dict[str, Record] = {}
    for pk in written:
        new, old = table.get(pk), shown.get(pk)
        if old is None or old is new or old != new:
            continue
        stored = None if base is None else base.get(pk)
        if stored is (None if before_base is None else before_base.get(pk)):  # the record under it is unchanged
            kept[pk] = old
    return kept


#: What `_expected` returns for an entry that shows nothing (it aborted, or expects nothing).
_SKIP: Final = Sentinel("SKIP")
_logged: weakref.WeakSet[act.Fetch] = weakref.WeakSet()
_seeds: weakref.WeakKeyDictionary[act.Fetch, str] = weakref.WeakKeyDictionary()


def _seed_of(entry: act.Fetch) -> str:
    """The entry's own placeholder seed: its guess shows the same "MISS-..." pks every time it is recomputed."""
    seed = _seeds.get(entry)
    if seed is None:
        seed = _seeds[entry] = uuid.uuid4().hex
    return seed


def _expected(memo: MemoCache, view: State, entry: act.Fetch) -> object:
    """The endpoint's expected response, or `_SKIP` when it aborts; other failures raise."""
    snapshot = Snapshot(memo, view, entry.fetched_at)
    expect = entry.endpoint.get_optimistic_response
    if expect is None:  # only optimistic fetches are pending entries
        return _SKIP
    try:
        return expect(snapshot, *entry.args)
    except AbortOptimistic:
        return _SKIP


def _with_error(view: State, entry: act.Fetch, error: BaseException) -> State:
    """`view` with `error` shown as the error of the entry's key (a hard error: always visible)."""
    key_meta: EndpointMeta = {**(view.meta.get(entry.key) or {}), "error": error, "error_policy": None}
    return view.evolve(meta=view.meta.set(entry.key, key_meta))
