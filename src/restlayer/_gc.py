"""Keep CPython's cyclic garbage collector out of bulk schema calls.

A normalize or denormalize allocates thousands of containers that all stay
alive until the call returns, so every collection the allocator triggers in
the middle of it finds nothing to free, and an occasional full collection
walks the whole (possibly million-entity) store. `no_gc` pauses automatic
collection for the duration of the call only: it restores the collector on
the way out exactly as it found it, nests (the outermost call decides), and is
shared by every thread (the last caller to leave re-enables it). Nothing is
lost: the allocation counts keep growing while paused, so the collector runs
at the next allocation after the call, over the call's young objects only.

If user code calls `gc.disable()` while a schema call is running in another
thread, that call re-enables the collector when it ends; call `gc.disable()`
outside schema calls (or hold it disabled around them) to keep it off.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])

_lock = threading.Lock()
_depth = 0
_restore = False


def pause() -> None:
    """Enter a no-collection section (disables the collector if it is the outermost one)."""
    global _depth, _restore
    with _lock:
        if _depth == 0:
            _restore = gc.isenabled()
            if _restore:
                gc.disable()
        _depth += 1


def resume() -> None:
    """Leave a no-collection section; the outermost exit restores the collector's state."""
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0 and _restore:
            gc.enable()


def no_gc(func: F) -> F:
    """Decorate a bulk call so automatic collection cannot run in the middle of it."""

    @wraps(func)
    def wrapper(*args: object, **kwargs: object) -> object:
        pause()
        try:
            return func(*args, **kwargs)
        finally:
            resume()

    return wrapper  # type: ignore[return-value]


def depth() -> int:
    """How many no-collection sections are open right now (for tests)."""
    return _depth
