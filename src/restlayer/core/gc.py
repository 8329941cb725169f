"""`GCPolicy`: reference-counted garbage collection of the store.

Readers hold a reference on their endpoint key and on every entity their
result read. When a count drops to zero the item is queued; a periodic sweep
removes queued items that are still unreferenced and long expired:
`fetched_at + max((expires_at - fetched_at) * expiry_multiplier, 120_000) < now`.
Items nobody ever referenced are never removed.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

from restlayer._time import length_ms
from restlayer.core import _actions as act
from restlayer.core.manager import check_unattached
from restlayer.errors import ParamError

if TYPE_CHECKING:
    from restlayer.core._state import EndpointMeta, State
    from restlayer.core.controller import Controller

EntityRef = tuple[str, str]
MIN_LIFETIME = 120_000

K = TypeVar("K")  # a counted item: an endpoint key or an entity reference


def _multiplier(value: object) -> float:
    """`expiry_multiplier` checked: a finite number >= 0, else ParamError.

    Checked here because it is first used inside a timed sweep, where a wrong type raises
    in a loop callback and stops the sweeps for good, with nothing telling the caller.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ParamError(f"GCPolicy: expiry_multiplier must be a finite number >= 0, not {value!r}")
    return value


class GCPolicy:
    """Counts readers' references and sweeps every `interval_ms` (needs a running event loop).

    `interval_ms` is milliseconds or a `datetime.timedelta`.
    """

    def __init__(self, interval_ms: float | timedelta = 300_000, expiry_multiplier: float = 2) -> None:
        self.interval_ms = length_ms(interval_ms, "GCPolicy: interval_ms", zero_ok=False)
        self.expiry_multiplier = _multiplier(expiry_multiplier)
        self.endpoint_counts: dict[str, int] = {}
        self.entity_counts: dict[EntityRef, int] = {}
        self.queued_endpoints: set[str] = set()
        self.queued_entities: set[EntityRef] = set()
        self._controller: Controller | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        self._stopped = False  # its controller closed: counting goes on (reads still work), sweeping does not

    def init(self, controller: Controller) -> None:
        """Attach to the controller whose store this policy sweeps (one controller only)."""
        check_unattached(self, self._controller, controller)
        self._controller = controller

    @property
    def scheduled(self) -> bool:
        """Whether a periodic sweep is scheduled (from the first hold on a running loop until the controller closes)."""
        return self._handle is not None

    # ----- reference counting --------------------------------------------------------
    def acquire(self, key: str | None, refs: Iterable[EntityRef]) -> None:
        """A reader starts holding `key` and `refs`."""
        if key is not None:
            self.endpoint_counts[key] = self.endpoint_counts.get(key, 0) + 1
            self.queued_endpoints.discard(key)
        for ref in refs:
            self.entity_counts[ref] = self.entity_counts.get(ref, 0) + 1
            self.queued_entities.discard(ref)
        self._ensure_timer()

    def release(self, key: str | None, refs: Iterable[EntityRef]) -> None:
        """A reader lets go; what nobody holds any more is queued for the sweep."""
        if key is not None:
            _decrement(self.endpoint_counts, key, self.queued_endpoints)
        for ref in refs:
            _decrement(self.entity_counts, ref, self.queued_entities)

    def touch(self, key: str | None, refs: Iterable[EntityRef]) -> None:
        """A one-shot read: hold and release at once (queues unheld items)."""
        refs = list(refs)
        self.acquire(key, refs)
        self.release(key, refs)

    # ----- sweeping ---------------------------------------------------------------------
    def expired(self, meta: Mapping[str, float] | EndpointMeta | None, now: float) -> bool:
        """Whether an item with this meta has outlived its grace period."""
        if meta is None:
            return True
        fetched_at = meta.get("fetched_at", 0)
        lifetime = (meta.get("expires_at", 0) - fetched_at) * self.expiry_multiplier
        return bool(fetched_at + max(lifetime, MIN_LIFETIME) < now)

    def collect(self, state: State, now: float) -> act.GC | None:
        """The GC action for what can go now (queued, unheld, expired); the rest stays queued."""
        keys = [
            k for k in self.queued_endpoints if k not in self.endpoint_counts and self.expired(state.meta.get(k), now)
        ]
        refs = [
            r for r in self.queued_entities if r not in self.entity_counts and self.expired(_entity_meta(state, r), now)
        ]
        self.queued_endpoints.difference_update(keys)
        self.queued_entities.difference_update(refs)
        if not keys and not refs:
            return None
        return act.GC(tuple(keys), tuple(refs))

    def sweep(self) -> int:
        """Run one sweep now; how many endpoint results and entities were removed."""
        controller = self._controller
        if controller is None:
            return 0
        action = self.collect(controller.get_committed_state(), controller.now())
        if action is not None:
            controller.dispatch(action)  # the controller prunes its memo once it is applied
            self._compact()
        else:
            controller.memo.prune(controller.get_committed_state().entities)
        return 0 if action is None else len(action.endpoint_keys) + len(action.entity_refs)

    def _compact(self) -> None:
        """Rebuild the bookkeeping tables so memory freed by a sweep is returned."""
        self.endpoint_counts = dict(self.endpoint_counts)
        self.entity_counts = dict(self.entity_counts)
        self.queued_endpoints = set(self.queued_endpoints)
        self.queued_entities = set(self.queued_entities)

    def _ensure_timer(self) -> None:
        """Set the sweep timer in the running loop, unless one is set there already.

        A timer of another loop (the controller was used in an earlier `asyncio.run`) died with
        that loop: it is replaced, or this loop would never sweep.
        """
        if self._stopped:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._handle is not None:
            if self._timer_loop is loop:
                return
            self._handle.cancel()
        self._timer_loop = loop
        self._handle = loop.call_later(self.interval_ms / 1000, self._tick)

    def _tick(self) -> None:
        self._handle = None
        self.sweep()
        self._ensure_timer()

    def cleanup(self) -> None:
        """Stop the periodic sweep for good (its controller closed)."""
        self._stopped = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def _decrement(counts: dict[K, int], item: K, queue: set[K]) -> None:
    count = counts.get(item, 0) - 1
    if count > 0:
        counts[item] = count
        return
    counts.pop(item, None)
    queue.add(item)


def _entity_meta(state: State, ref: EntityRef) -> Mapping[str, float] | None:
    table = state.entities_meta.get(ref[0])
    return None if table is None else table.get(ref[1])
