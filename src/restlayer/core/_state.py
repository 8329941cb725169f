"""The store's immutable state: persistent tables plus pending optimistic fetches.

Every table is a `PMap`, so an update builds new versions in O(log n) and a
state handed out earlier never changes. Read by attribute or by key
(`state.endpoints`, `state["endpoints"]`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from restlayer._pmap import EMPTY, PMap

if TYPE_CHECKING:
    from restlayer.core._actions import Fetch

Table = PMap[str, PMap[str, Any]]


def _empty() -> PMap[Any, Any]:
    return EMPTY


@dataclass(frozen=True, eq=False)
class State(Mapping[str, Any]):
    """One version of the store; `replace(state, endpoints=...)` derives the next."""

    entities: Table = field(default_factory=_empty)
    indexes: PMap[str, PMap[str, PMap[str, Any]]] = field(default_factory=_empty)
    entities_meta: Table = field(default_factory=_empty)
    endpoints: PMap[str, Any] = field(default_factory=_empty)
    meta: PMap[str, Mapping[str, Any]] = field(default_factory=_empty)
    optimistic: tuple[Fetch, ...] = ()
    last_reset: float = 0

    def __getitem__(self, name: str) -> Any:
        if name not in _FIELDS:
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(_FIELDS)

    def __len__(self) -> int:
        return len(_FIELDS)

    def __repr__(self) -> str:
        return (
            f"State(entities={len(self.entities)} types, endpoints={len(self.endpoints)}, "
            f"optimistic={len(self.optimistic)}, last_reset={self.last_reset})"
        )

    def evolve(self, **changes: Any) -> State:
        """A new state with some tables replaced (the others shared)."""
        return replace(self, **changes)


_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(State))
EMPTY_STATE = State()
