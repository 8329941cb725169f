"""`present(value)`: a read the test expects to find, narrowed from `T | None` to `T`; `record(...)`: a stored row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from restlayer.core._state import State

T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, failing the test when the store had nothing (None)."""
    assert value is not None, "expected a stored value, found None"
    return value


def record(state: State, key: str, pk: str) -> Mapping[str, object]:
    """The stored record of entity `key` / `pk`, failing the test when it is a deleted or collection row."""
    row = state.entities[key][pk]
    assert isinstance(row, Mapping), f"expected a stored record, found {row!r}"
    return row
