"""Turning parameter values into URL and key text."""

from __future__ import annotations


def to_text(value: object) -> str:
    """Text of a present value: bools as `true`/`false`, floats by `repr`, others by `str`."""
    if type(value) is str:  # exactly str: a str subclass (an Enum, say) goes through str()
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)
