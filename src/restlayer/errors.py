"""The error hierarchy: every failure the library raises is a `RestLayerError`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx


class RestLayerError(Exception):
    """Base class of every error raised by restlayer.

    `status` mirrors the HTTP-like status the JavaScript original attaches
    (400 for bad data, 500 for transport failures); `None` when meaningless.
    """

    status: int | None = None

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class NetworkError(RestLayerError):
    """A request failed: a non-2xx reply, a transport failure or an unusable body.

    `response` is the `httpx.Response`, or `None` when no reply arrived.
    """

    status: int

    def __init__(
        self, message: str, *, status: int, response: httpx.Response | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.response = response


class SchemaError(RestLayerError):
    """Data does not fit its schema (wrong shape, no usable primary key, invalid).

    `schema` names the schema and `path` is where in the input it happened,
    e.g. `("project", 3, "buildTypes")`.
    """

    status = 400

    def __init__(self, message: str, *, schema: str = "", path: tuple[Any, ...] = ()) -> None:
        super().__init__(message, status=400)
        self.message = message
        self.schema = schema
        self.path = path

    def __str__(self) -> str:
        where = "".join(f"[{p!r}]" for p in self.path) or "<root>"
        return f"{self.message} (schema {self.schema or '?'}, at {where})"


class ParamError(RestLayerError, TypeError, ValueError):
    """Call arguments do not fit an endpoint: a missing or malformed parameter."""

    status = 400


class ResetError(RestLayerError):
    """A fetch was dropped because the store was reset while it was in flight."""

    def __init__(self, message: str = "Aborted due to RESET") -> None:
        super().__init__(message)


class AbortOptimistic(RestLayerError):
    """Raised (as `snapshot.abort`) to cancel an optimistic update."""
