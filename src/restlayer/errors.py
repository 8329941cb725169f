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

    def __init__(self, message: str, *, status: int, response: httpx.Response | None = None) -> None:
        super().__init__(message, status=status)
        self.response = response


class DecodeError(NetworkError):
    """A reply arrived but its body cannot be read as the endpoint expects: invalid
    or too deeply nested JSON, or undecodable bytes. The reason is in the message."""


class EmptyBodyError(DecodeError):
    """A reply has no body (e.g. status 205) where the endpoint's schema needs data."""


class BodyTooLargeError(NetworkError):
    """A reply's decoded body is larger than the endpoint's `max_body_size`; nothing is stored."""


class DeadlineExceededError(NetworkError):
    """A request did not complete within the endpoint's `total_timeout` (seconds)."""


class RedirectError(NetworkError):
    """A redirect that restlayer will not follow, e.g. a 301/302/303 answer to a
    mutation (following it would silently turn the POST/PUT/PATCH/DELETE into a GET).

    `location` is the redirect's target URL.
    """

    def __init__(self, message: str, *, status: int, location: str, response: httpx.Response | None = None) -> None:
        super().__init__(message, status=status, response=response)
        self.location = location


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


class ProcessingError(SchemaError):
    """A reply could not be stored: it does not fit the endpoint's schema (status 400).

    The controller raises it to the fetch's callers and records it as the
    endpoint's error; the store's data is left exactly as it was. `__cause__`
    holds the underlying failure.
    """

    def __str__(self) -> str:
        return self.message


class ParamError(RestLayerError, TypeError, ValueError):
    """Call arguments do not fit an endpoint: a missing or malformed parameter."""

    status = 400


class ResetError(RestLayerError):
    """A fetch was dropped because the store was reset while it was in flight."""

    def __init__(self, message: str = "Aborted due to RESET") -> None:
        super().__init__(message)


class AbortOptimistic(RestLayerError):
    """Raised (as `snapshot.abort`) to cancel an optimistic update."""


class PathTemplateWarning(UserWarning):
    """A path template that is valid but almost certainly not what was meant
    (e.g. `/todos/{id}`, a literal optional "id", where `/todos/:id` was intended)."""
