"""Reply bodies decode to exactly what `json.loads` gives, with orjson installed or not."""

from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from restlayer import _json


def outcome(body: bytes) -> object:
    """`json.loads(body)`, or the class of the error it raises."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        return type(exc)


def ours(body: bytes) -> object:
    try:
        return _json.loads(body)
    except (ValueError, RecursionError) as exc:
        return type(exc)


def same(a: object, b: object) -> bool:
    """Equal, with the same types all the way down (so 1 and 1.0 differ) and NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def test_orjson_is_what_the_projects_setup_installs() -> None:
    if os.environ.get("CI") == "true":
        assert _json.decoder() == "orjson", "CI runs with the `speed` extra installed"
    assert _json.decoder() in ("orjson", "json")


EDGE_CASES = [
    b'{"a": 1, "b": 2, "a": 3}',  # a repeated key: the last value, at the first place
    b"[18446744073709551616]",  # beyond 64 bits: orjson would give a float
    b"[-9223372036854775809]",
    b"[9223372036854775807, -9223372036854775808, 18446744073709551615]",
    b"[1e400, -1e400]",  # out of float range: infinities
    b"[NaN, Infinity, -Infinity]",
    b"\xef\xbb\xbf[1]",  # a UTF-8 byte order mark
    '[1, "\u00e9"]'.encode("utf-16"),
    b'["\\ud800"]',  # a lone surrogate
    b"[-0, -0.0, 0.1, 1E2, 5e-324, 1.7976931348623157e308]",
    b'"12345678901234567890"',  # a long digit run in a string: decoded by json, same value
    b"[" * 2000 + b"]" * 2000,  # deeper than orjson goes
    b"[1]x",
    b"",
    b"\xff",
    b'{"a": "\x01"}',  # a raw control character
]


@pytest.mark.parametrize("body", EDGE_CASES)
def test_edge_cases_decode_as_the_standard_library_does(body: bytes) -> None:
    assert same(ours(body), outcome(body))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=20,
)


@given(value=json_values, ascii_only=st.booleans())
def test_any_body_decodes_as_the_standard_library_does(value: object, ascii_only: bool) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert same(ours(body), outcome(body))


def test_without_orjson_the_standard_library_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_json, "_fast", None)
    assert _json.decoder() == "json"
    for body in EDGE_CASES:
        assert same(ours(body), outcome(body))
