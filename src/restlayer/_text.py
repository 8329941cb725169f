"""Turning parameter values into URL and key text."""

from __future__ import annotations

from typing import Any


def to_text(value: Any) -> str:
    """Text of a present value: bools as `true`/`false`, floats by `repr`, others by `str`."""
    if value.__class__ is str:
        return value  # type: ignore[no-any-return,unused-ignore]
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)
