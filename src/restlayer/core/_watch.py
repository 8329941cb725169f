"""Change notification: watchers re-read their endpoint after each store change and fire on real changes.

A callback runs only when the denormalized value is a different object *and*
compares unequal (re-normalizing equal data builds new objects; that is not a
change). Each read comes with a cheap test telling whether a later store could
read differently, so a change re-reads only the watchers whose data it touched.
Callback exceptions are logged and never reach the store.

A watcher made `with_meta` also fires when the call's metadata entry changes
(a fetch settled with an error or with equal data, an invalidation, an expiry):
what a UI binding shows (loading, error) and whether it must fetch again
depend on it, though the data did not change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from restlayer._typing import T

if TYPE_CHECKING:
    from restlayer.core.endpoint import Endpoint
    from restlayer.core.expiry import Response

#: `read(endpoint, args)`: the stored Response, the entities it read (for GC holds) and a test
#: `unchanged()` that is True while the store still holds what the read saw (False: read again).
Read = Callable[
    ["Endpoint[object]", tuple[object, ...]], "tuple[Response[object], list[tuple[str, str]], Callable[[], bool]]"
]
#: `meta_of(key)`: the current metadata entry of a store key (None when absent); a new object on each change.
MetaOf = Callable[[str], object]
#: `hold(key, refs)` / `release(key, refs)`: take or drop a garbage-collection hold.
Hold = Callable[[str | None, list[tuple[str, str]]], None]

log = logging.getLogger("restlayer")


def changed(old: object, new: object) -> bool:
    """Identity changed and the values differ (a failing `==` counts as different)."""
    if new is old:
        return False
    try:
        return bool(new != old)
    except Exception:
        return True


#: `Watcher.last` of a `with_meta` watcher whose latest read failed (it was told so once).
_UNREADABLE = object()


def _never() -> bool:
    """The test of a watcher with no successful read yet: always read."""
    return False


class Watcher:
    """One `watch()` registration: what it reads, the last value seen and its GC hold."""

    __slots__ = ("active", "args", "callback", "endpoint", "key", "last", "meta", "refs", "unchanged", "with_meta")

    def __init__(
        self,
        endpoint: Endpoint[T],
        args: tuple[object, ...],
        callback: Callable[[T | None], object],
        *,
        with_meta: bool = False,
    ) -> None:
        self.endpoint: Endpoint[object] = endpoint
        self.args = args
        # Called only with the store's reads of `endpoint`: its results, which the store keeps as `object`.
        self.callback = cast("Callable[[object], object]", callback)
        self.key: str = endpoint.key(*args)
        self.last: object = None
        self.refs: list[tuple[str, str]] = []
        self.unchanged: Callable[[], bool] = _never
        self.active = True  # False once removed: a round already under way skips it
        self.with_meta = with_meta  # fire also when the key's metadata entry changes
        self.meta: object = None  # that entry as last seen (only tracked `with_meta`)


class Watchers:
    """Every watcher of one controller; `notify()` runs after each committed change.

    The controller hands over how to read a watcher's value and how to hold and
    release what it read, so garbage collection keeps watched data.
    """

    def __init__(self, read: Read, hold: Hold, release: Hold, meta_of: MetaOf) -> None:
        self._read = read
        self._meta_of = meta_of
        self._hold = hold
        self._release = release
        self._items: list[Watcher] = []
        self._busy = False
        self._again = False

    def add(self, watcher: Watcher) -> Callable[[], None]:
        """Register `watcher` (reading its current value); returns the function removing it."""
        response, refs, watcher.unchanged = self._read(watcher.endpoint, watcher.args)
        watcher.last, watcher.refs = response.data, refs
        if watcher.with_meta:
            watcher.meta = self._meta_of(watcher.key)
        self._hold(watcher.key, refs)
        self._items.append(watcher)
        removed = False

        def unwatch() -> None:
            nonlocal removed
            if removed:
                return
            removed = True
            watcher.active = False
            if watcher in self._items:
                self._items.remove(watcher)
            self._release(watcher.key, watcher.refs)

        return unwatch

    def notify(self) -> None:
        """Re-read the watchers whose data may have changed; changes made by callbacks cause another round."""
        if self._busy:
            self._again = True
            return
        self._busy = True
        try:
            self._again = True
            while self._again:
                self._again = False
                for watcher in list(self._items):
                    # a callback earlier in this round may have removed it: its hold is gone, so is its call
                    if watcher.active and not (watcher.unchanged() and self._same_meta(watcher)):
                        self._check(watcher)
        finally:
            self._busy = False

    def _same_meta(self, watcher: Watcher) -> bool:
        """Whether the metadata a `with_meta` watcher saw is still stored (always True for the others)."""
        return not watcher.with_meta or self._meta_of(watcher.key) is watcher.meta

    def _check(self, watcher: Watcher) -> None:
        try:
            response, refs, watcher.unchanged = self._read(watcher.endpoint, watcher.args)
        except Exception:
            log.exception("watch: reading %s failed", watcher.key)
            watcher.unchanged = _never
            self._unreadable(watcher)
            return
        new = response.data
        meta_moved = not self._same_meta(watcher)
        if meta_moved:
            watcher.meta = self._meta_of(watcher.key)
        if new is watcher.last and not meta_moved:
            return
        old, watcher.last = watcher.last, new
        if refs != watcher.refs:
            self._hold(None, refs)
            self._release(None, watcher.refs)
            watcher.refs = refs
        if not changed(old, new) and not meta_moved:
            return
        try:
            watcher.callback(new)
        except Exception:
            log.exception("watch callback for %s raised", watcher.key)

    def _unreadable(self, watcher: Watcher) -> None:
        """Tell a `with_meta` watcher, once, that its call no longer reads (a record its hooks cannot build).

        A screen showing the last data would show it for good, stale, with the error
        only in the log; told, it reads again and shows the error. Its callback gets the
        data it last saw; the next successful read is a change again.
        """
        if not watcher.with_meta or watcher.last is _UNREADABLE:
            return
        shown, watcher.last = watcher.last, _UNREADABLE
        try:
            watcher.callback(shown)
        except Exception:
            log.exception("watch callback for %s raised", watcher.key)

    def __len__(self) -> int:
        return len(self._items)
