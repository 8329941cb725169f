"""Request headers as given by callers: read as (name, value) pairs and checked before anything is sent.

httpx refuses a header it cannot send only once sending, as a transport failure (status 500) that
error policies take for a server down; these checks name the caller's mistake where it is made.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from restlayer.errors import ParamError
from restlayer.rest._body import header_pairs

#: An HTTP token (RFC 9110): what a header name, a method or a WebSocket subprotocol name must be.
TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def header_items(headers: object) -> Iterable[tuple[object, object]]:
    """(name, value) pairs of headers given as a mapping or as a list of pairs."""
    if headers is None:
        return ()
    what = "headers must be a mapping or a list of (name, value) pairs"
    if isinstance(headers, Mapping):
        return headers.items()
    if isinstance(headers, Iterable) and not isinstance(headers, (str, bytes, bytearray)):
        return header_pairs(headers, what)
    raise ParamError(f"{what}, not {type(headers).__name__}")


def text_headers(headers: object, label: str) -> dict[str, str]:
    """`headers` (a mapping or None) as a new dict of str names to str values; ParamError naming `label` otherwise.

    For connections made again and again (streams, subscriptions): a wrong kind is refused where it is
    given, not found at each connect. A str would be read as pairs of letters, a list kept as pairs.
    """
    if headers is not None and not isinstance(headers, Mapping):
        raise ParamError(f"{label} must map names to values (a dict), not {headers!r}")
    checked = dict(headers or {})
    for name, value in checked.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ParamError(f"{label} map names to values, both str, not {name!r}: {value!r}")
    return checked


def own_headers(headers: object) -> object:
    """A request's headers: a mapping (or None) as given, pairs as a list of checked pairs.

    They are read three times (checked, named for a redirect, sent), so a one-shot
    iterator of pairs (a generator from `get_headers`) must not be used up by the first.
    """
    if headers is None or isinstance(headers, Mapping):
        return headers
    return list(header_items(headers))


def _check_header_text(endpoint: str, name: object, part: object, what: str) -> None:
    """Refuse a header name or value that cannot be sent as it is (a local mistake)."""
    if isinstance(part, bytes):
        text = part.decode("latin-1")
    elif isinstance(part, str):
        text = part
    else:
        raise ParamError(f"{endpoint}: header {name!r} {what} must be str or bytes, not {type(part).__name__}")
    if "\r" in text or "\n" in text or "\0" in text:
        raise ParamError(f"{endpoint}: header {name!r} {what} contains a line break or NUL (CR/LF/NUL are not allowed)")
    if isinstance(part, str) and not text.isascii():
        raise ParamError(
            f"{endpoint}: header {name!r} {what} is not ASCII ({text[:40]!r}); percent-encode it or send it in the body"
        )
    _check_header_form(endpoint, name, text, what)


def _check_header_form(endpoint: str, name: object, text: str, what: str) -> None:
    """Refuse what HTTP/1.1 cannot carry: a name that is not a token (empty, a space, a colon), a value
    with whitespace at either end. httpx would refuse it only when sending, as a transport failure of
    status 500, which error policies take for a server down (soft) rather than the caller's mistake."""
    if what == "name" and not TOKEN.fullmatch(text):
        raise ParamError(
            f"{endpoint}: {text!r} is not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only; "
            "no spaces or colons)"
        )
    if what == "value" and text != text.strip(" \t"):
        raise ParamError(
            f"{endpoint}: header {name!r} value starts or ends with whitespace, which HTTP drops or refuses"
        )


def check_headers(headers: object, endpoint: str = "request") -> None:
    """Raise `ParamError` for header names or values holding CR, LF, NUL or non-ASCII text."""
    for name, value in header_items(headers):
        _check_header_text(endpoint, name, name, "name")
        _check_header_text(endpoint, name, value, "value")
