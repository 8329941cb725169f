"""Request bodies: JSON encoding, text/bytes/file/stream content, and the headers each kind needs."""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Final, cast

from restlayer.errors import ParamError

_JSON_CONTENT_TYPE: Final = {"Content-Type": "application/json"}
_CHUNK: Final = 65536

#: What httpx accepts as `content`.
Content = str | bytes | AsyncIterator[bytes]


_JSON_SCALARS: Final = (str, int, float, bool, type(None))


def _unencodable(value: object, path: str, seen: set[int]) -> str | None:
    """Where in `value` json cannot encode and why (e.g. `body['when']: datetime`); None if nowhere found."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path}: {value!r} is not valid JSON (NaN and infinities have no JSON form)"
    if isinstance(value, _JSON_SCALARS):
        return None
    if not isinstance(value, (dict, list, tuple)):
        return f"{path}: {type(value).__name__} is not JSON-serializable"
    if id(value) in seen:
        return f"{path}: contains itself (a circular reference)"
    seen.add(id(value))
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, _JSON_SCALARS):
                return f"{path}: key {key!r} is a {type(key).__name__} (JSON keys are str, int, float, bool or None)"
            found = _unencodable(item, f"{path}[{key!r}]", seen)
            if found:
                return found
    else:
        for index, item in enumerate(value):
            found = _unencodable(item, f"{path}[{index}]", seen)
            if found:
                return found
    seen.discard(id(value))
    return None


def dumps(value: object, endpoint: str = "request") -> bytes:
    """JSON body text: compact, non-ASCII kept, UTF-8 (serialized exactly once).

    A body json cannot encode is a `ParamError` naming `endpoint` and the member at fault;
    so is a NaN or infinite float, which Python would write as `NaN`/`Infinity`, not JSON.
    """
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise ParamError(
            f"{endpoint}: the request body cannot be sent as JSON: {unencodable(value, 'body') or exc}"
        ) from exc


def unencodable(value: object, name: str) -> str | None:
    """Where in `value` (called `name`) json cannot encode and why; None if that cannot be told."""
    try:
        return _unencodable(value, name, set())
    except RecursionError:
        return None


def _chunk_bytes(chunk: object, endpoint: str) -> bytes:
    """One chunk of a streamed body as bytes: text as UTF-8; `ParamError` for text UTF-8 cannot encode (a lone
    surrogate) or what is no bytes or text, which httpx would fail on with a bare error mid-request."""
    if isinstance(chunk, bytes):
        return chunk
    if isinstance(chunk, (bytearray, memoryview)):
        return bytes(chunk)
    if isinstance(chunk, str):
        _check_text(chunk, endpoint)
        return chunk.encode()
    raise ParamError(f"{endpoint}: a streamed request body yielded {type(chunk).__name__}, not bytes or str")


async def _read_sync_file(read: Callable[[int], object], endpoint: str) -> AsyncIterator[bytes]:
    """Stream a blocking file-like object (its `read`) as request content."""
    while chunk := read(_CHUNK):
        yield _chunk_bytes(chunk, endpoint)


async def _read_async_file(read: Callable[[int], Awaitable[object]], endpoint: str) -> AsyncIterator[bytes]:
    """Stream a file-like object whose `read` is a coroutine (aiofiles, anyio)."""
    while chunk := await read(_CHUNK):
        yield _chunk_bytes(chunk, endpoint)


def _check_text(body: str, endpoint: str) -> None:
    """Refuse text UTF-8 cannot encode (a lone surrogate): httpx would raise a bare UnicodeEncodeError."""
    try:
        body.encode()
    except UnicodeEncodeError as exc:
        raise ParamError(f"{endpoint}: the request body is text UTF-8 cannot encode: {exc}") from exc


def encode_content(body: object, endpoint: str = "request") -> Content:
    """httpx `content` for a non-JSON body: text and bytes as given, files and async
    iterables streamed; `endpoint` names the endpoint in errors."""
    if isinstance(body, str):
        _check_text(body, endpoint)
        return body
    if isinstance(body, bytes):
        return body
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    if hasattr(body, "__aiter__"):
        return body  # type: ignore[return-value]  # an async iterable of bytes, sent as it comes
    read = getattr(body, "read", None)
    if read is not None:
        if inspect.iscoroutinefunction(read):
            return _read_async_file(read, endpoint)
        return _read_sync_file(read, endpoint)
    raise ParamError(
        f"Unsupported request body of type {type(body).__name__}: send a dict or list "
        "(JSON), str, bytes, a file-like object or an async iterable of bytes"
    )


def header_pairs(given: Iterable[object], what: str) -> Iterable[tuple[object, object]]:
    """The (name, value) pairs of headers given as an iterable of pairs, each checked as it comes.

    An item that is not a pair (text such as `"X-A: 1"`, or a tuple of one or three)
    is a `ParamError` starting with `what`: unpacking it would raise a bare ValueError,
    and `dict()` would read a two-letter string as a name and a value.
    """
    for item in given:
        if isinstance(item, (str, bytes, bytearray)) or not isinstance(item, Sequence) or len(item) != 2:
            raise ParamError(f"{what}; {item!r} is not a (name, value) pair")
        yield item[0], item[1]


def _taken(request_init: Mapping[str, object] | None) -> tuple[tuple[object, object], ...]:
    """What `RequestParts` takes from `request_init`: each option's value (compared by identity), and the
    headers' items (by value: a headers dict or list changed in place is still the same object)."""
    if not request_init:
        return ()
    return tuple((key, _header_items(value) if key == "headers" else value) for key, value in request_init.items())


def _header_items(given: object) -> object:
    """The items of request_init's headers as they are now (a mapping's, or a list's pairs copied)."""
    if isinstance(given, Mapping):
        return tuple(given.items())
    if isinstance(given, (list, tuple)):
        return tuple(tuple(item) if isinstance(item, list) else item for item in given)
    return given


def _same_taken(now: tuple[tuple[object, object], ...], then: tuple[tuple[object, object], ...]) -> bool:
    """Whether `_taken` found the same options: equal names and headers, the very same other values."""
    if len(now) != len(then):
        return False
    for (key, value), (was_key, was) in zip(now, then, strict=True):
        if key != was_key:
            return False
        if key == "headers" and isinstance(value, tuple) and isinstance(was, tuple):
            if value != was:
                return False
        elif value is not was:
            return False
    return True


def _header_dict(given: object) -> dict[str, str]:
    """`request_init`'s headers (a mapping or (name, value) pairs) as a new dict."""
    if not given:
        return {}
    if isinstance(given, Mapping):
        return dict(given)
    what = "request_init headers must be a mapping or (name, value) pairs"
    if isinstance(given, Iterable) and not isinstance(given, (str, bytes, bytearray)):
        pairs = dict(header_pairs(given, what))
        return cast("dict[str, str]", pairs)  # names and values are checked before sending (`check_headers`)
    raise ParamError(f"{what}, not {type(given).__name__}")


#: How a refusal names request_init's own body option (`data` and `files` are forms).
_OWN_BODY_KINDS: Final = {"content": "body", "json": "JSON body"}


class RequestParts:
    """What a request derives from `request_init`, computed once per dict.

    `extra`: the httpx options besides headers and method; `json_headers`: the
    headers of a JSON (or bodiless) request, with a JSON Content-Type unless the
    init sets one or sends a form; `plain_headers`: the headers of other bodies.
    """

    __slots__ = ("extra", "json_headers", "own_body", "plain_headers", "source", "taken")

    def __init__(self, request_init: Mapping[str, object] | None) -> None:
        self.source = request_init
        self.taken = _taken(request_init)
        init = dict(request_init or {})
        given = init.pop("headers", None)
        init.pop("method", None)
        headers = _header_dict(given)
        self.extra = init
        self.plain_headers = headers
        sets_type = any(k.lower() == "content-type" for k in headers)
        is_form = "data" in init or "files" in init
        #: the body option request_init sends itself, which a call's body (sent as `content`) would
        #: replace in httpx, or overwrite when request_init's own body is `content`
        self.own_body = next((n for n in ("content", "files", "data", "json") if init.get(n) is not None), None)
        self.json_headers = headers if sets_type or is_form else {**_JSON_CONTENT_TYPE, **headers}

    def describes(self, request_init: Mapping[str, object] | None) -> bool:
        """Whether these parts are still those of `request_init`: the same dict, unchanged since.

        An endpoint's `request_init` is the app's own dict, which it may change in place
        (a token swapped in its headers, an option set): the next request must send that,
        not what the first one was built from.
        """
        return request_init is self.source and _same_taken(_taken(request_init), self.taken)

    def encode(self, method: str, body: object, endpoint: str = "request") -> tuple[dict[str, object], dict[str, str]]:
        """The request options for `body` (method and encoded `content` set) and the headers it needs;
        `endpoint` names the endpoint in errors."""
        init = dict(self.extra)
        init["method"] = method
        if body is None:
            return init, self.json_headers
        if self.own_body is not None:
            kind = _OWN_BODY_KINDS.get(self.own_body, "form")
            raise ParamError(
                f"{endpoint}: request_init sends a {kind} ({self.own_body}=), and httpx would send the call's "
                f"body ({type(body).__name__}) in its place, dropping the {kind}; call the endpoint without a "
                "body (body=None) or build the request from the body in get_request_init"
            )
        if isinstance(body, (dict, list)):
            init["content"] = dumps(body, endpoint)
            return init, self.json_headers
        init["content"] = encode_content(body, endpoint)
        return init, self.plain_headers
