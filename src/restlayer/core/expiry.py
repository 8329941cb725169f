"""Public result types of the controller's reads: expiry status, `Response` and `DLE`."""

from __future__ import annotations

from datetime import timedelta
from enum import IntEnum
from typing import TYPE_CHECKING, Generic, NamedTuple

from restlayer._time import to_ms
from restlayer._typing import T_co
from restlayer.errors import RestLayerError

#: Lifetimes (ms) used when an endpoint leaves `data_expiry_length` / `error_expiry_length` unset.
DATA_EXPIRY = 60_000
ERROR_EXPIRY = 1_000


def expiry_length(value: float | timedelta | None, default: float, name: str) -> float:
    """An expiry length in ms (a timedelta converted): `default` when unset; a negative length is an error."""
    value = to_ms(value, name)
    if value is None:
        return default
    if value < 0:
        raise RestLayerError(f"{name} must be >= 0, got {value}")
    return value


class ExpiryStatus(IntEnum):
    """How usable stored data is; ordered as in the JS original (higher is better)."""

    INVALID = 1
    INVALIDATE_IF_STALE = 2
    VALID = 3


if TYPE_CHECKING:  # generic for type checkers; a generic NamedTuple needs Python 3.11 at run time

    class Response(NamedTuple, Generic[T_co]):  # immutable: a Response[Todo] is a Response[object]
        """What `Controller.get_response` gives: the data, its status and when it expires (ms)."""

        data: T_co | None
        expiry_status: ExpiryStatus
        expires_at: float

    class DLE(NamedTuple, Generic[T_co]):
        """What `Controller.dle` gives: data, whether a fetch is loading it, and the error."""

        data: T_co | None
        loading: bool
        error: BaseException | None

else:

    class Response(NamedTuple):
        """What `Controller.get_response` gives: the data, its status and when it expires (ms)."""

        data: object
        expiry_status: ExpiryStatus
        expires_at: float

    class DLE(NamedTuple):
        """What `Controller.dle` gives: data, whether a fetch is loading it, and the error."""

        data: object
        loading: bool
        error: BaseException | None
