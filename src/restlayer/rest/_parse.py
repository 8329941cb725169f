"""Replies: reading a body within its size cap, decoding it by `content` or Content-Type, and error texts.

Every failure here is a `NetworkError` subclass carrying the reply, so callers
and error policies see the status and body.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import weakref
from collections.abc import AsyncIterator
from typing import Final

import httpx

from restlayer.errors import BodyTooLargeError, DecodeError, EmptyBodyError, RestLayerError, TransportError

_TEXT_LIKE: Final = re.compile(r"\btext\b|\bxml\b|\bhtml\b|\bjavascript\b|\bcss\b|\bcsv\b|\burlencoded\b")
#: Headers that describe the raw transfer; dropped once the body is decoded.
_TRANSFER_HEADERS: Final = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def schema_name(schema: object) -> str:
    """How an error message names a schema: a class by its name, anything else by str()."""
    return getattr(schema, "__name__", None) or str(schema)


def _with_content(response: httpx.Response, body: bytes) -> httpx.Response:
    """A read copy of a streamed, closed `response` holding its decoded `body`."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _TRANSFER_HEADERS]
    copy = httpx.Response(
        response.status_code,
        headers=headers,
        content=body,
        request=response.request,
        extensions=response.extensions,
        history=response.history,
        default_encoding=response.default_encoding,
    )
    with contextlib.suppress(RuntimeError):  # a reply a transport built already read is never timed
        copy.elapsed = response.elapsed
    return copy


def transport_error(
    url: object, exc: BaseException, response: httpx.Response | None = None, *, method: str | None = None
) -> TransportError:
    """A transport failure (connect, read, reset, bad encoding) as a status-500 TransportError."""
    reason = str(exc) or type(exc).__name__
    where = f"{method} {url}" if method else str(url)
    return TransportError(f"{where}: {reason}", status=500, response=response)


class ByteStream:
    """The body of a `content="stream"` reply: `async for chunk in stream` yields bytes.

    The connection is released when the body is exhausted or `aclose()` is called
    (also usable as `async with stream:`), even if iteration never started.
    """

    __slots__ = ("_chunks", "response")

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._chunks: AsyncIterator[bytes] | None = None

    def __aiter__(self) -> ByteStream:
        return self

    async def __anext__(self) -> bytes:
        if self._chunks is None:
            self._chunks = self.response.aiter_bytes()
        try:
            return await self._chunks.__anext__()
        except httpx.HTTPError as exc:
            await self.response.aclose()
            raise transport_error(self.response.url, exc, self.response) from exc
        except httpx.StreamError as exc:  # iterated again after the end or after aclose()
            raise RestLayerError(f"{self.response.url}: {exc}") from exc
        except BaseException:
            await self.response.aclose()
            raise

    async def aclose(self) -> None:
        """Release the connection without reading the rest of the body."""
        await self.response.aclose()

    async def __aenter__(self) -> ByteStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def read_body(response: httpx.Response, cap: int | None) -> httpx.Response:
    """Read the decoded body, at most `max_body_size` bytes; the reply with its content."""
    if _known_within(response, cap):
        try:
            await response.aread()  # the common case, read in place (no copy of the reply)
        except httpx.HTTPError as exc:
            raise transport_error(response.url, exc, response) from exc
        finally:
            await response.aclose()
        return response
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if cap is not None and size > cap:
                raise BodyTooLargeError(
                    f"{response.url}: reply body exceeds max_body_size={cap} bytes (decoded); "
                    "raise max_body_size or use content='stream'",
                    status=400,
                    response=response,
                )
            chunks.append(chunk)
    except httpx.HTTPError as exc:
        raise transport_error(response.url, exc, response) from exc
    finally:
        await response.aclose()
    return _with_content(response, b"".join(chunks))


async def read_error_body(response: httpx.Response, cap: int | None) -> httpx.Response:
    """Read a non-2xx reply's body, keeping at most `max_body_size` bytes of it.

    An error page over the cap is cut, not refused: what matters is the reply's
    status (a 503 stays a soft, retryable error), and the message quotes only the body's start.
    A body that fails to arrive or to decode (a dropped connection, a bad gzip stream) is
    kept as far as it was read, for the same reason: the status is the error, the body its detail.
    """
    if _known_within(response, cap):
        try:
            return await read_body(response, cap)
        except TransportError as lost:
            return _partial(response, [], lost)
    chunks: list[bytes] = []
    size = 0
    failure: TransportError | None = None
    try:
        async for chunk in response.aiter_bytes():
            if cap is not None and size + len(chunk) > cap:
                chunks.append(chunk[: int(cap) - size])  # a float cap is allowed
                return _partial(response, chunks, None)
            size += len(chunk)
            chunks.append(chunk)
    except httpx.HTTPError as exc:
        failure = transport_error(response.url, exc, response)
        failure.__cause__ = exc
    finally:
        await response.aclose()
    if failure is not None:
        return _partial(response, chunks, failure)
    return _with_content(response, b"".join(chunks))


#: Error replies `read_error_body` read only in part (held weakly: they go with their errors):
#: None when cut at the size cap, else the transport failure that ended the read.
_PARTIAL_REPLIES: weakref.WeakKeyDictionary[httpx.Response, TransportError | None] = weakref.WeakKeyDictionary()


def _partial(response: httpx.Response, chunks: list[bytes], failure: TransportError | None) -> httpx.Response:
    """The error reply with the part of its body that was read, marked as partial (and why)."""
    read = _with_content(response, b"".join(chunks))
    _PARTIAL_REPLIES[read] = failure
    return read


def was_cut(response: httpx.Response) -> bool:
    """Whether `read_error_body` cut this reply at `max_body_size`: its content is only the body's start.

    A caller that needs the whole error body (a GraphQL endpoint reads `errors` from it)
    must not parse such a reply.
    """
    return response in _PARTIAL_REPLIES and _PARTIAL_REPLIES[response] is None


def body_failure(response: httpx.Response) -> TransportError | None:
    """The transport failure that stopped `read_error_body` reading this reply's body, if one did.

    The reply's status still stands as the error; a caller that needs the whole body raises this instead.
    """
    return _PARTIAL_REPLIES.get(response)


def _known_within(response: httpx.Response, cap: int | None) -> bool:
    """Whether the body cannot exceed `cap` once decoded: no cap, or an unencoded body of a declared length within it.

    (The HTTP layer never reads past a declared Content-Length, and an unencoded body decodes to itself.)
    """
    if cap is None:
        return True
    headers = response.headers
    if headers.get("content-encoding", "identity").lower() != "identity" or "transfer-encoding" in headers:
        return False  # decoded, or framed by chunks rather than by the declared length
    length = headers.get("content-length")
    return length is not None and length.isdigit() and int(length) <= cap


async def parse_reply(
    response: httpx.Response, content: str | None, schema: object, *, schema_set: bool, raw_ok: bool
) -> object:
    """The reply's value: by `content` when set, else by Content-Type.

    `schema_set`: the result is normalized, so it must be JSON data; `raw_ok`:
    text or bytes are acceptable anyway (no schema, or a `process` that reads them).
    """
    stream = content == "stream"
    if response.status_code == 204:
        if stream:
            await response.aclose()
        return None
    if not stream and schema_set and not raw_ok and not response.content:
        raise EmptyBodyError(
            f"{response.url}: empty reply body (status {response.status_code}) where schema "
            f"{schema_name(schema)} needs data",
            status=400,
            response=response,
        )
    if content is not None:
        return await _parse_content(response, content, schema_set)
    content_type = response.headers.get("content-type")
    if content_type is None:
        binary = False
    elif "json" in content_type:
        return parse_json(response)
    else:
        binary = _TEXT_LIKE.search(content_type) is None
    if raw_ok:
        return response.content if binary else response.text
    if binary:
        raise DecodeError(
            f'Unexpected binary content-type "{content_type}" for schema '
            f"{schema_name(schema)}. Binary responses cannot be normalized. "
            "Use schema=None or set content='blob'.",
            status=400,
            response=response,
        )
    raise DecodeError(_text_error(schema, content_type, response.text), status=404, response=response)


async def _parse_content(response: httpx.Response, content: str, schema_set: bool) -> object:
    """Parse by an explicit `content` mode."""
    if content == "json":
        return parse_json(response)
    if schema_set:
        if content == "stream":
            await response.aclose()
        raise DecodeError(
            f"content '{content}' is incompatible with schema. Binary/text responses "
            "cannot be normalized. Use schema=None.",
            status=400,
            response=response,
        )
    if content == "text":
        return response.text
    if content == "stream":
        return ByteStream(response)
    return response.content


def parse_json(response: httpx.Response) -> object:
    """Parsed JSON body; a body that is not JSON (or nests too deeply) is a status-400 DecodeError."""
    try:
        return json.loads(response.content)
    except ValueError as exc:
        raise DecodeError(f"{response.url}: invalid JSON response: {exc}", status=400, response=response) from exc
    except RecursionError as exc:
        raise DecodeError(
            f"{response.url}: JSON response nests too deeply to decode", status=400, response=response
        ) from exc


def _text_error(schema: object, content_type: str | None, text: str) -> str:
    """Message for a text reply to an endpoint that expects data for its schema."""
    name = schema_name(schema)
    if (content_type is not None and "html" in content_type) or text.startswith("<!doctype html>"):
        return (
            f"Unexpected html response for schema {name}\n"
            "This likely means no API endpoint was configured for this request, "
            f"resulting in an HTML fallback.\n\nResponse (first 300 characters): {text[:300]}"
        )
    try:
        json.loads(text)
    except ValueError:
        return f"Unexpected text response for schema {name}"
    return (
        f'Unexpected text response for schema {name}: "content-type" header does not '
        'include "json", but JSON response found. Set content="json" or fix the server.'
    )


#: How much of an error reply's body a StatusError message quotes.
_DETAIL_CHARS: Final = 500


def status_message(response: httpx.Response) -> str:
    """`GET http://.../todos/1 -> 422 Unprocessable Entity: <detail>`: what a non-2xx reply said.

    The detail is a JSON body's `detail`/`message`/`error`/`title` member when there is one,
    else the start of the body (an HTML page's words); at most about 500 characters.
    """
    request = response.request
    reason = response.reason_phrase or "error"
    head = f"{request.method} {request.url} -> {response.status_code} {reason}"
    detail = _reply_detail(response)
    return f"{head}: {detail}" if detail else head


#: What an HTML page holds but never shows as text: comments, and the code of scripts and styles.
_HTML_UNSHOWN: Final = re.compile(r"<!--.*?-->|<(script|style)\b[^>]*>.*?</\1\s*>", re.S | re.I)


def _html_words(page: str) -> str:
    """The text an HTML error page shows, so a message quotes its words, not its CSS or markup.

    Comments, scripts and styles go first (a proxy's page often starts with a long `<style>`
    that would fill the quoted characters), then tags; entities are decoded (`&amp;` -> `&`).
    """
    return html.unescape(re.sub(r"<[^>]*>", " ", _HTML_UNSHOWN.sub(" ", page)))


def _reply_detail(response: httpx.Response) -> str:
    """The most telling part of an error reply's body, shortened."""
    text = response.text.strip()  # httpx decodes with replacement characters, never raises
    content_type = response.headers.get("content-type", "")
    if "html" in content_type:
        text = _html_words(text)
    elif "json" in content_type:
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        if isinstance(body, dict):
            for member in ("detail", "message", "error", "title"):
                if body.get(member) not in (None, ""):
                    found = body[member]
                    text = found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)
                    break
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."
