"""Named marker objects: falsy, printed by name, compared by identity."""

from __future__ import annotations


class Sentinel:
    """A unique marker such as `INVALID` (a deleted entity) or `UNSET` (an option left out)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __bool__(self) -> bool:
        return False

    def __copy__(self) -> Sentinel:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Sentinel:
        return self
