"""The error hierarchy: every failure the library raises is a `RestLayerError`.

    RestLayerError                 anything restlayer raises (`.status` when meaningful)
    ├── NetworkError               a request failed (`.status`, `.response`)
    │   ├── TransportError         no reply: connection refused, timeout, TLS... (status 500)
    │   │   └── DeadlineExceededError  no complete reply within `total_timeout`
    │   ├── StatusError            the server replied with a non-2xx status (status = that status)
    │   ├── RedirectError          a redirect restlayer will not follow (`.location`)
    │   ├── DecodeError            a reply arrived but its body cannot be read as expected (400)
    │   │   └── EmptyBodyError     no body where the schema needs data
    │   ├── BodyTooLargeError      the body exceeds `max_body_size`
    │   └── GQLNetworkError        a GraphQL reply with an `errors` list (`.errors`, `.data`; 400)
    ├── SchemaError                data does not fit its schema (normalize, set)
    │   └── ProcessingError        a fetched reply does not fit the endpoint's schema; nothing stored (400)
    ├── ParamError                 call arguments or options do not fit (also a TypeError/ValueError)
    ├── DefinitionError            a schema or entity class is declared wrongly (also a TypeError)
    ├── ReadOnlyError              stored data was changed in place (also a TypeError)
    ├── ClientLoopError            the httpx client belongs to another or a closed event loop
    ├── ResetError                 a fetch was dropped by `reset_entire_store()`
    ├── ClosedError                the controller was closed while a call waited, or before it
    ├── StreamTimeoutError         a stream did not reach the awaited state in time (also a TimeoutError)
    ├── SharedStoreError           a shared store (Redis, a SQLite file) failed; the controller goes on locally
    ├── SuspendedError             a UI component waits for data (a Solara `Suspense` boundary catches it)
    └── AbortOptimistic            raised to cancel an optimistic update

Catch `NetworkError` for "the request did not give usable data" and a subclass
to tell why; `status` works on all of them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from restlayer.core.endpoint import Endpoint
    from restlayer.sync import Controller as SyncController


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

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle and copy by state, not by calling `__init__` again: subclasses take keyword-only
        arguments (`status`, `location`) that `Exception`'s default would not pass back."""
        return (_rebuild, (type(self), self.args), self.__dict__)


def _rebuild(cls: type[RestLayerError], args: tuple[object, ...]) -> RestLayerError:
    """An error of class `cls` with `args`, its attributes set afterwards from the pickled state."""
    error = cls.__new__(cls)
    error.args = args
    return error


class NetworkError(RestLayerError):
    """A request failed: a non-2xx reply, a transport failure or an unusable body.

    `response` is the `httpx.Response`, or `None` when no reply arrived.
    """

    status: int

    def __init__(self, message: str, *, status: int, response: httpx.Response | None = None) -> None:
        super().__init__(message, status=status)
        self.response = response


class TransportError(NetworkError):
    """No reply arrived: the connection failed, timed out or broke. `status` is 500, `response` None."""


class DeadlineExceededError(TransportError):
    """A request did not complete within the endpoint's `total_timeout` (seconds)."""


class StatusError(NetworkError):
    """The server answered with a non-2xx status; the message names method, URL, status and the reply's start."""


class RedirectError(NetworkError):
    """A redirect that restlayer will not follow, e.g. a 301/302/303 answer to a
    mutation (following it would silently turn the POST/PUT/PATCH/DELETE into a GET).

    `location` is the redirect's target URL.
    """

    def __init__(self, message: str, *, status: int, location: str, response: httpx.Response | None = None) -> None:
        super().__init__(message, status=status, response=response)
        self.location = location


class DecodeError(NetworkError):
    """A reply arrived but its body cannot be read as the endpoint expects: invalid
    or too deeply nested JSON, or undecodable bytes. The reason is in the message."""


class EmptyBodyError(DecodeError):
    """A reply has no body (e.g. status 205) where the endpoint's schema needs data."""


class BodyTooLargeError(NetworkError):
    """A reply's decoded body is larger than the endpoint's `max_body_size`; nothing is stored."""


def _first_message(errors: Sequence[object]) -> str:
    """The message of the first error (what the JS original puts in `message`)."""
    if not errors:
        return "GraphQL request failed"
    first = errors[0]
    if isinstance(first, str):
        return first
    if isinstance(first, dict):
        message = first.get("message")
        if message is not None:
            return str(message)
    return f"GraphQL request failed: {_quoted(first)}"


#: How much of an error without a message `GQLNetworkError` quotes.
_QUOTED_CHARS = 300


def _quoted(error: object) -> str:
    """An error object without a message as the JSON the server sent (not Python's repr), shortened."""
    try:
        text = json.dumps(error, ensure_ascii=False, default=repr)
    except (ValueError, RecursionError):  # a circular or too deep value built by hand, not a parsed reply
        text = repr(error)
    return text if len(text) <= _QUOTED_CHARS else text[: _QUOTED_CHARS - 3] + "..."


class GQLNetworkError(NetworkError):
    """A GraphQL failure: `.errors` is the server's list, `.data` any partial data.

    `.status` is 400 (as in the JS original), so the default error policy is hard.
    """

    def __init__(
        self,
        errors: Sequence[object],
        *,
        data: object = None,
        status: int = 400,
        response: httpx.Response | None = None,
    ) -> None:
        super().__init__(_first_message(errors), status=status, response=response)
        self.errors: list[Any] = list(errors)  # the GraphQL error objects: JSON the caller reads into
        self.data: Any = data


class ClientLoopError(RestLayerError):
    """The httpx client in use is bound to an event loop that is closed or not the running one."""


class SchemaError(RestLayerError):
    """Data does not fit its schema (wrong shape, no usable primary key, invalid).

    `schema` names the schema and `path` is where in the input it happened,
    e.g. `("project", 3, "buildTypes")`.
    """

    status = 400

    def __init__(self, message: str, *, schema: str = "", path: tuple[object, ...] = ()) -> None:
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


class DefinitionError(RestLayerError, TypeError):
    """A schema or Entity class is declared wrongly (bad field, key, member or nesting).

    Raised where the schema is defined or first compiled, before any data is touched.
    """


class ReadOnlyError(RestLayerError, TypeError):
    """Stored data (a list or dict read from the store) was changed in place; copy it first."""


class ResetError(RestLayerError):
    """A fetch was dropped because the store was reset while it was in flight."""

    def __init__(self, message: str = "Aborted due to RESET") -> None:
        super().__init__(message)


class ClosedError(RestLayerError):
    """The controller was closed: its in-flight and later calls cannot complete."""

    def __init__(self, message: str = "The controller is closed") -> None:
        super().__init__(message)


class StreamTimeoutError(RestLayerError, TimeoutError):
    """`Stream.until(predicate, timeout)` waited `timeout` seconds and the predicate still did not hold,
    or the stream ended (refused, stopped, its controller closed) without it holding."""


class AbortOptimistic(RestLayerError):
    """Raised (as `snapshot.abort`) to cancel an optimistic update."""


class SuspendedError(RestLayerError):
    """A UI component needs data still being fetched; a suspense boundary shows its fallback meanwhile.

    `endpoint` and `arguments` name what it waits for (the boundary waits on them too);
    `controller` is the one whose store it reads (None: the boundary's own), which
    may be another than the boundary's when a provider sits between them.
    """

    def __init__(
        self, endpoint: Endpoint[object], arguments: tuple[object, ...], controller: SyncController | None = None
    ) -> None:
        super().__init__(f"{getattr(endpoint, 'name', endpoint)}: waiting for data (no Suspense boundary above?)")
        self.endpoint = endpoint
        self.arguments = arguments
        self.controller = controller


class PathTemplateWarning(UserWarning):
    """A path template that is valid but almost certainly not what was meant
    (e.g. `/todos/{id}`, a literal optional "id", where `/todos/:id` was intended)."""


class SharedStoreError(RestLayerError):
    """A shared store (Redis, a SQLite file) is unreachable or holds an unusable value.

    The controller catches it and keeps working on its local store; a store
    backend raises it for every failure of its own transport.

    `refused` is True when the store answered but refused the operation (Redis out
    of memory under `noeviction`, a read-only replica after a failover): the
    connection works, so the controller skips that operation and stays connected
    instead of reconnecting and expiring its local data as after an outage.
    """

    refused: bool = False

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        if refused:
            self.refused = True
