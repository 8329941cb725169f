"""`Endpoint`: what the Controller needs from an endpoint (RestEndpoint and GQLEndpoint offer it).

Every object with these members can be fetched, cached and watched. `Endpoint[Todo]`
is one the Controller answers with a `Todo`; `Endpoint[Todo, [TodoParams]]` one
whose calls take a `TodoParams` dict (`...`, the default: any arguments). The
type parameters exist for type checkers only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from restlayer._typing import A, T_co

__all__ = ["Endpoint"]


class Endpoint(Protocol[T_co, A]):
    """The endpoint contract: call it, key it, and read its cache options."""

    @property
    def __result__(self) -> T_co:
        """Typing only: what the Controller returns (reads, fetches, watch callbacks)."""
        ...

    @property
    def name(self) -> str:
        """A readable name for errors and logs."""
        ...

    @property
    def schema(self) -> object:
        """How the response is normalized: an Entity class, a schema, a dict/list shorthand or None."""
        ...

    @property
    def side_effect(self) -> bool | None:
        """True for calls that change data: always sent, never answered from the store."""
        ...

    @property
    def data_expiry_length(self) -> float | None:
        """How long (ms) a result stays fresh; None: the default."""
        ...

    @property
    def error_expiry_length(self) -> float | None:
        """How long (ms) an error is served; None: the default."""
        ...

    @property
    def invalid_if_stale(self) -> bool:
        """Whether stale data counts as missing (suspense waits for the refetch)."""
        ...

    @property
    def poll_frequency(self) -> float | None:
        """Polling period (ms) while subscribed; None: no polling."""
        ...

    @property
    def get_optimistic_response(self) -> Callable[..., object] | None:
        """The expected reply, applied to the store before the real one arrives."""
        ...

    @property
    def update(self) -> Callable[..., object] | None:
        """Changes to other stored results once this call's reply is stored."""
        ...

    def bind(self, *args: object, **kwargs: object) -> tuple[object, ...]:
        """The canonical positional arguments of a call."""
        ...

    def __call__(self, *args: A.args, **kwargs: A.kwargs) -> Awaitable[object]:
        """Send the request; the processed reply (its arguments: what `ctrl.fetch(ep, ...)` takes)."""
        ...

    def key(self, *args: object) -> str:
        """The store key of a call."""
        ...

    def test_key(self, key: str) -> bool:
        """Whether a store key belongs to this endpoint."""
        ...

    def error_policy(self, error: BaseException) -> str | None:
        """`"soft"` to keep serving stored data after this error."""
        ...


def keys_pages_as_one(endpoint: object) -> bool:
    """Whether `endpoint`'s key leaves part of its call out (`remove_cursor`: the pages of one list).

    Calls of one such key may ask for different pages: they share no request and
    no stored copy answers them.
    """
    return getattr(endpoint, "remove_cursor", None) is not None


def reads_once(endpoint: object) -> bool:
    """Whether `endpoint`'s reply is a body read once (`content="stream"`): an async iterator that only
    one caller can read, so concurrent calls of it share no request (each caller gets a body of its own)."""
    return getattr(endpoint, "content", None) == "stream"
