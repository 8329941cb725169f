"""Typing helpers that must also work on Python 3.10 without typing_extensions at run time.

Type checkers read the `typing_extensions` names; at run time `dataclass_transform`
is the standard one (3.11+) or a no-op, and `Self` is only ever used in annotations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self, TypeVar, dataclass_transform

    from restlayer.schema import Entity

    # A bare generic (`RestEndpoint`, `Resource`, `Schema`) means "of Any".
    T = TypeVar("T", default=Any)
    T_co = TypeVar("T_co", covariant=True, default=Any)
else:
    from typing import TypeVar

    T = TypeVar("T")
    T_co = TypeVar("T_co", covariant=True)

    try:
        from typing import Self, dataclass_transform
    except ImportError:  # Python 3.10: annotations only, never evaluated
        Self = Any

        def dataclass_transform(**_kwargs: Any) -> Any:
            """No-op stand-in: the marker only matters to type checkers."""
            return lambda cls: cls


#: An Entity subclass given as a schema (`schema=Todo` reads a `Todo`).
E = TypeVar("E", bound="Entity")

__all__ = ["E", "Self", "T", "T_co", "dataclass_transform"]
