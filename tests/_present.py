"""`present(value)`: a read the test expects to find, narrowed from `T | None` to `T`."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, failing the test when the store had nothing (None)."""
    assert value is not None, "expected a stored value, found None"
    return value
