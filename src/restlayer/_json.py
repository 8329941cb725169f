"""Decoding JSON reply bodies: with orjson when it is installed (`restlayer[speed]`), else the standard library.

orjson parses a body about twice as fast, and both give the same values: a body
orjson would read differently goes to `json.loads` instead. That is a body with a
run of 19 or more digits (orjson turns an integer beyond 64 bits into a float) and
any body orjson refuses (NaN or Infinity, a byte order mark, UTF-16 or UTF-32,
lone surrogates, nesting deeper than 1024), so errors stay the standard library's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

_fast: Callable[[bytes], object] | None
try:
    from orjson import loads as _fast
except ImportError:  # the optional `speed` extra is not installed
    _fast = None

#: Maps every digit to b"0" and any other byte to b" ": a long number becomes a run of b"0".
_DIGITS: Final = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_LONG_NUMBER: Final = b"0" * 19


def decoder() -> str:
    """Which parser `loads` tries first: `"orjson"` or `"json"`."""
    return "json" if _fast is None else "orjson"


def loads(body: bytes) -> object:
    """The value of a JSON body, exactly as `json.loads(body)` gives it (and its errors)."""
    if _fast is not None and _LONG_NUMBER not in body.translate(_DIGITS):
        try:
            return _fast(body)
        except ValueError:  # refused: the standard library decides (it accepts some of these)
            pass
    return json.loads(body)
