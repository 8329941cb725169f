"""The actions every store change goes through: plain records that managers see and the reducer applies.

Each has a `type` string (`"fetch"`, `"set_response"`, ...) so a manager can
dispatch on it without importing the classes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal

from restlayer.core.expiry import DATA_EXPIRY, ERROR_EXPIRY

if TYPE_CHECKING:
    from restlayer.core._patch import Patch
    from restlayer.core.endpoint import Endpoint
    from restlayer.schema import SchemaLike

TestKey = Callable[[str], bool]


@dataclass(eq=False)
class Fetch:
    """A request is starting: `future` receives the processed response (or the error).

    `background` fetches (dle, stale reads, polling) keep their request alive even
    when no caller awaits them. The expiry lengths are resolved once, when the
    fetch is built (the endpoint's options, or polling's shorter ones).
    """

    type: ClassVar[Literal["fetch"]] = "fetch"
    endpoint: Endpoint[object]
    args: tuple[object, ...]
    key: str
    fetched_at: float
    future: asyncio.Future[object] | None = None
    background: bool = False
    data_expiry_length: float = DATA_EXPIRY
    error_expiry_length: float = ERROR_EXPIRY
    error_policy: Callable[[BaseException], str | None] | None = None

    @property
    def optimistic(self) -> bool:
        """Whether this fetch shows an optimistic response until it settles."""
        ep = self.endpoint
        return bool(ep.side_effect) and getattr(ep, "get_optimistic_response", None) is not None


@dataclass(eq=False)
class SetResponse:
    """Store a response (`error=False`) or an error for `key`; settles `fetch`'s optimistic entry.

    `aborted` only removes the optimistic entry (a cancelled request).
    """

    type: ClassVar[Literal["set_response"]] = "set_response"
    endpoint: Endpoint[object]
    args: tuple[object, ...]
    key: str
    response: object
    fetched_at: float
    date: float
    expires_at: float
    error: bool = False
    error_policy: str | None = None
    fetch: Fetch | None = None
    aborted: bool = False


@dataclass(eq=False)
class Set:
    """Write `value` for `schema` and `args` straight into the entity tables."""

    type: ClassVar[Literal["set"]] = "set"
    schema: SchemaLike
    args: tuple[object, ...]
    value: object
    date: float
    expires_at: float


@dataclass(eq=False)
class Invalidate:
    """Drop these endpoint results; readers must refetch."""

    type: ClassVar[Literal["invalidate"]] = "invalidate"
    keys: tuple[str, ...]


@dataclass(eq=False)
class InvalidateAll:
    """`Invalidate` for every stored endpoint key accepted by `test_key`."""

    type: ClassVar[Literal["invalidate_all"]] = "invalidate_all"
    test_key: TestKey


@dataclass(eq=False)
class ExpireAll:
    """Mark every key of `meta` accepted by `test_key` stale (`expires_at = 1`)."""

    type: ClassVar[Literal["expire_all"]] = "expire_all"
    test_key: TestKey


@dataclass(eq=False)
class Reset:
    """Empty the store; in-flight fetches are dropped."""

    type: ClassVar[Literal["reset"]] = "reset"
    date: float


@dataclass(eq=False)
class Subscribe:
    """Start (or join) polling `key` at the endpoint's `poll_frequency`."""

    type: ClassVar[Literal["subscribe"]] = "subscribe"
    endpoint: Endpoint[object]
    args: tuple[object, ...]
    key: str


@dataclass(eq=False)
class Unsubscribe:
    """Leave polling of `key` (polling stops with the last subscriber)."""

    type: ClassVar[Literal["unsubscribe"]] = "unsubscribe"
    endpoint: Endpoint[object]
    args: tuple[object, ...]
    key: str


@dataclass(eq=False)
class GC:
    """Remove unreferenced, long-expired endpoint results and entities."""

    type: ClassVar[Literal["gc"]] = "gc"
    endpoint_keys: tuple[str, ...] = ()
    entity_refs: tuple[tuple[str, str], ...] = field(default_factory=tuple)


@dataclass(eq=False)
class Merge:
    """Apply changes another process (or a store file) announced: rows win by `fetched_at`."""

    type: ClassVar[Literal["merge"]] = "merge"
    patch: Patch


Action = (
    Fetch | SetResponse | Set | Invalidate | InvalidateAll | ExpireAll | Reset | Subscribe | Unsubscribe | GC | Merge
)
