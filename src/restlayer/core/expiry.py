"""Public result types of the controller's reads: expiry status, `Response` and `DLE`."""

from __future__ import annotations

from enum import IntEnum
from typing import Any, NamedTuple


class ExpiryStatus(IntEnum):
    """How usable stored data is; ordered as in the JS original (higher is better)."""

    INVALID = 1
    INVALIDATE_IF_STALE = 2
    VALID = 3


class Response(NamedTuple):
    """What `Controller.get_response` gives: the data, its status and when it expires (ms)."""

    data: Any
    expiry_status: ExpiryStatus
    expires_at: float


class DLE(NamedTuple):
    """What `Controller.dle` gives: data, whether a fetch is loading it, and the error."""

    data: Any
    loading: bool
    error: BaseException | None
