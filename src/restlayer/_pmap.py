"""A persistent (immutable, structure-sharing) mapping for the store's tables.

`PMap` wraps `immutables.Map`, a hash array mapped trie: `set` returns a new
map in O(log n) and shares everything else with the old one, so a snapshot of
the store stays valid while later updates build new versions. Unlike the bare
`immutables.Map`, a `PMap` compares equal to any mapping with the same items,
so tests and users can compare store tables with plain dicts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

import immutables

K = TypeVar("K")
V = TypeVar("V")


class PMap(Mapping[K, V], Generic[K, V]):
    """An immutable mapping; `set`, `delete` and `update` return new maps."""

    __slots__ = ("_map", "get")

    def __init__(self, items: Mapping[K, V] | immutables.Map[K, V] | None = None) -> None:
        m: immutables.Map[K, V]
        if isinstance(items, immutables.Map):
            m = items
        else:
            m = immutables.Map(items or {})
        self._map = m
        # Bind the C-level lookup on the instance: hot read paths call `.get`.
        self.get = m.get  # type: ignore[method-assign]

    def __getitem__(self, key: K) -> V:
        return self._map[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def __contains__(self, key: object) -> bool:
        return key in self._map

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PMap):
            return self._map == other._map
        if isinstance(other, Mapping):
            return len(self) == len(other) and dict(self._map.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PMap({dict(self._map.items())!r})"

    def set(self, key: K, value: V) -> PMap[K, V]:
        """A new map with `key` set to `value`."""
        return PMap(self._map.set(key, value))

    def delete(self, key: K) -> PMap[K, V]:
        """A new map without `key` (the same map when absent)."""
        if key not in self._map:
            return self
        return PMap(self._map.delete(key))

    def update(self, changes: Mapping[K, V]) -> PMap[K, V]:
        """A new map with every item of `changes` set."""
        if not changes:
            return self
        return PMap(self._map.update(changes))

    def to_dict(self) -> dict[K, Any]:
        """A deep copy as plain dicts (nested PMaps converted too)."""
        return {k: v.to_dict() if isinstance(v, PMap) else v for k, v in self._map.items()}


EMPTY: PMap[Any, Any] = PMap()
