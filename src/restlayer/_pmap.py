"""A persistent (immutable, structure-sharing) mapping for the store's tables.

`PMap` wraps `immutables.Map`, a hash array mapped trie: `set` returns a new
map in O(log n) and shares everything else with the old one, so a snapshot of
the store stays valid while later updates build new versions. Unlike the bare
`immutables.Map`, a `PMap` compares equal to any mapping with the same items,
so tests and users can compare store tables with plain dicts.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeAlias, TypeVar

import immutables

K = TypeVar("K")
V = TypeVar("V")


class PMap(Mapping[K, V], Generic[K, V]):
    """An immutable mapping; `set`, `delete` and `update` return new maps.

    A table built in one piece (`adopt`) keeps the plain dict it was built from and
    makes its trie only when first derived from: a bulk write costs no trie, and its
    reads are plain dict lookups.
    """

    __slots__ = ("_dict", "_hamt", "get")
    _hamt: immutables.Map[K, V] | None
    _dict: dict[K, V] | None

    def __init__(self, items: Mapping[K, V] | immutables.Map[K, V] | None = None) -> None:
        m: immutables.Map[K, V]
        if isinstance(items, immutables.Map):
            m = items
        elif isinstance(items, PMap):  # share the other map's trie (immutables.Map refuses a PMap)
            m = items._map
        else:
            m = immutables.Map(items or {})
        self._hamt = m
        self._dict = None
        # Bind the C-level lookup on the instance: hot read paths call `.get`.
        self.get = m.get  # type: ignore[method-assign]

    @classmethod
    def adopt(cls, rows: dict[K, V]) -> PMap[K, V]:
        """A map of `rows` that keeps that very dict (the caller hands it over and never changes it again)."""
        out: PMap[K, V] = object.__new__(cls)
        out._adopt(rows)
        return out

    def _adopt(self, rows: dict[K, V]) -> None:
        self._hamt = None
        self._dict = rows
        self.get = rows.get  # type: ignore[method-assign]

    @property
    def _map(self) -> immutables.Map[K, V]:
        """The trie (made once from the adopted dict on first need; equal either way, so a race is harmless)."""
        m = self._hamt
        if m is None:
            m = self._hamt = immutables.Map(self._dict or {})
        return m

    def _items(self) -> Mapping[K, V]:
        """The cheapest readable form: the adopted dict, else the trie."""
        d = self._dict
        return self._map if d is None else d

    def __getitem__(self, key: K) -> V:
        return self._items()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __contains__(self, key: object) -> bool:
        return key in self._items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PMap):
            if self._hamt is None or other._hamt is None:
                return len(self) == len(other) and dict(self._items().items()) == dict(other._items().items())
            return self._map == other._map
        if isinstance(other, Mapping):
            return len(self) == len(other) and dict(self._items().items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PMap({dict(self._items().items())!r})"

    def set(self, key: K, value: V) -> PMap[K, V]:
        """A new map with `key` set to `value`."""
        return PMap(self._map.set(key, value))

    def delete(self, key: K) -> PMap[K, V]:
        """A new map without `key` (the same map when absent)."""
        if key not in self:
            return self
        return PMap(self._map.delete(key))

    def update(self, changes: Mapping[K, V]) -> PMap[K, V]:
        """A new map with every item of `changes` set (a bulk change rewrites the table: see `_bulk`)."""
        if not changes:
            return self
        if _bulk(len(changes), len(self)):
            rows = self._rows_copy()
            rows.update(changes)
            return PMap.adopt(rows)
        return PMap(self._map.update(changes))

    def _rows_copy(self) -> dict[K, V]:
        """A new dict of the items."""
        return self._dict.copy() if self._dict is not None else dict(self._map.items())

    def to_dict(self) -> dict[K, object]:
        """A deep copy as plain dicts (nested PMaps converted too)."""
        return {k: v.to_dict() if isinstance(v, PMap) else v for k, v in self._items().items()}


EMPTY: PMap[Any, Any] = PMap()


class _OneValue(PMap[K, V]):
    """A table mapping every key of a dict it shares to one value: the metas of a bulk write.

    A write of many entities gives them all the same meta; storing one entry per entity
    would cost as much as a second copy of the entity table's index. This holds the entity
    table's own dict (never changed once handed over) and the value; the dict of items or
    the trie is made only when the table is iterated or derived from.
    """

    __slots__ = ("_keys", "_value")

    def __init__(self, keys: dict[K, object], value: V) -> None:
        self._keys = keys
        self._value = value
        self._hamt = None
        self._dict = None

        def get(key: K, default: V | None = None) -> V | None:
            return value if key in keys else default

        self.get = get  # type: ignore[method-assign,assignment]

    @property
    def _map(self) -> immutables.Map[K, V]:
        m = self._hamt
        if m is None:
            m = self._hamt = immutables.Map(self._rows_copy())
        return m

    def _items(self) -> Mapping[K, V]:
        return self._rows_copy()

    def _rows_copy(self) -> dict[K, V]:
        return dict.fromkeys(self._keys, self._value)

    def __getitem__(self, key: K) -> V:
        if key in self._keys:
            return self._value
        raise KeyError(key)

    def __iter__(self) -> Iterator[K]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as a plain table of its items (the lookup function is made per instance)."""
        return (PMap.adopt, (self._rows_copy(),))


class OrderedPMap(PMap[K, V]):
    """A `PMap` that also remembers the order its keys were first set (an entity table).

    The hash trie iterates in hash order, which changes with `PYTHONHASHSEED`;
    `in_order()` gives insertion order instead, the same in every process. The
    order record is an append-only log of new keys shared by successive
    versions (each reads only its own prefix), so a write costs nothing extra
    unless it adds a key; the ordered list is computed once per version, on demand.
    """

    __slots__ = ("__weakref__", "_length", "_lineage", "_log", "_ordered")

    def __init__(self, items: Mapping[K, V] | immutables.Map[K, V] | None = None) -> None:
        super().__init__(items)
        log: list[K] = list(self._map.keys()) if isinstance(items, immutables.Map) else list(items or ())
        self._log: list[K] | None = log
        self._length = len(log)
        self._ordered: list[K] | None = None
        self._lineage: Lineage[K, V] = ()

    def _adopt(self, rows: dict[K, V]) -> None:
        super()._adopt(rows)
        self._log = None  # the dict keeps the order: the log is made from it when first needed
        self._length = len(rows)
        self._ordered = None
        self._lineage = ()

    @classmethod
    def of(cls, table: Mapping[K, V]) -> OrderedPMap[K, V]:
        """`table` as an OrderedPMap (itself when it already is one; else in its iteration order)."""
        return table if table.__class__ is OrderedPMap else cls(table)

    def _derive(
        self, m: immutables.Map[K, V], new_keys: list[K] | tuple[()], changed: tuple[K, ...]
    ) -> OrderedPMap[K, V]:
        out: OrderedPMap[K, V] = object.__new__(OrderedPMap)
        out._lineage = self._lineage_after(changed)
        out._hamt = m
        out._dict = None
        out.get = m.get  # type: ignore[method-assign]
        out._ordered = None
        log, length = self._order_log(), self._length
        if new_keys:
            with _LOG_LOCK:
                if len(log) != length:  # another version already extended this log: branch off a copy
                    log = log[:length]
                log.extend(new_keys)
                length = len(log)
        out._log = log
        out._length = length
        return out

    def set(self, key: K, value: V) -> OrderedPMap[K, V]:
        return self._derive(self._map.set(key, value), () if key in self._map else [key], (key,))

    def delete(self, key: K) -> OrderedPMap[K, V]:
        if key not in self._map:
            return self
        return self._derive(self._map.delete(key), (), (key,))

    def update(self, changes: Mapping[K, V]) -> OrderedPMap[K, V]:
        if not changes:
            return self
        if _bulk(len(changes), len(self)):  # lineage would hold too many keys to help anyway
            rows = self._ordered_rows()
            rows.update(changes)
            return _adopted(rows)
        present = self._map
        m = present.update(changes)
        for key in changes:
            if key not in present:  # some keys are new: record them (the rare, slower path)
                return self._derive(m, [k for k in changes if k not in present], tuple(changes))
        out: OrderedPMap[K, V] = object.__new__(OrderedPMap)
        out._lineage = self._lineage_after(tuple(changes))
        out._hamt = m
        out._dict = None
        out.get = m.get  # type: ignore[method-assign]
        out._ordered = None
        out._log = self._order_log()
        out._length = self._length
        return out

    def _ordered_rows(self) -> dict[K, V]:
        """A new dict of the items in insertion order (an adopted table's dict is in that order)."""
        if self._dict is not None:
            return self._dict.copy()
        present = self._map
        return {key: present[key] for key in self.in_order()}

    def _lineage_after(self, changed: tuple[K, ...]) -> Lineage[K, V]:
        """A derived version's lineage: this version and its recent ancestors, with the keys changed since each."""
        if len(changed) > _MAX_CHANGED:
            return ()
        out = [(weakref.ref(self), changed)]
        for ancestor, since in self._lineage[: _MAX_LINEAGE - 1]:
            since = since + changed
            if len(since) > _MAX_CHANGED:
                break
            out.append((ancestor, since))
        return tuple(out)

    def _order_log(self) -> list[K]:
        """The log of keys in the order first set (an adopted table makes it from its dict on first need)."""
        log = self._log
        if log is None:
            with _LOG_LOCK:  # one log per table, shared by every version derived from it
                log = self._log
                if log is None:
                    log = self._log = list(self._dict or ())
        return log

    def in_order(self) -> list[K]:
        """The live keys in the order they were first set; a deleted and re-added key counts from its return."""
        if self._ordered is None and self._log is None:  # an adopted table: its dict has every key, in order
            self._ordered = list(self._dict or ())
        if self._ordered is None:
            present = self._items()
            seen: set[K] = set()
            out: list[K] = []
            for key in reversed(self._order_log()[: self._length]):
                if key not in seen and key in present:
                    seen.add(key)
                    out.append(key)
            out.reverse()
            self._ordered = out
        return self._ordered


def _adopted(rows: dict[K, V]) -> OrderedPMap[K, V]:
    """An entity table keeping `rows` as is (`OrderedPMap.adopt`, typed as one)."""
    out: OrderedPMap[K, V] = object.__new__(OrderedPMap)
    out._adopt(rows)
    return out


_LOG_LOCK = threading.Lock()

#: An entity table's recent ancestors (weakly held) with the keys set or deleted since each: MemoCache
#: re-checks only those keys of a table derived from the one it read (see `changed_between`).
Lineage: TypeAlias = "tuple[tuple[weakref.ref[OrderedPMap[K, V]], tuple[K, ...]], ...]"
_MAX_LINEAGE = 4
_MAX_CHANGED = 64
#: The fewest rows whose metas a bulk write keeps as one value (below it, one entry per row costs
#: little and is read by the faster plain dict lookup).
_ONE_VALUE_MIN = 1024


def _bulk(changed: int, size: int) -> bool:
    """Whether setting `changed` keys of a `size`-key map rewrites it as a new dict instead of trie inserts.

    When a write sets more than `_MAX_CHANGED` keys and at least half the map (a refetched list
    replacing its table's rows), copying the dict is several times cheaper than inserting each key
    into the trie, and the new table is read by plain dict lookups. The copy is O(size) <= O(2 * changed),
    and so is the trie a later small write builds from it: the cost stays proportional to the bulk write.
    """
    return changed > _MAX_CHANGED and changed * 2 >= size


def changed_between(old: Mapping[K, V] | None, new: Mapping[K, V] | None) -> tuple[K, ...] | None:
    """The keys whose values may differ between two versions of one entity table, or None when unknown.

    Known when one is a recent ancestor of the other, or both derive from a recent common ancestor
    (two updates of one store); every other key maps to the very same value in both.
    """
    if type(old) is not OrderedPMap or type(new) is not OrderedPMap:
        return None
    for ancestor, since in new._lineage:
        if ancestor() is old:
            return since
    for ancestor, since in old._lineage:
        if ancestor() is new:
            return since
        for other, since_new in new._lineage:
            if other is ancestor:  # one weakref object per table version: same ref, same ancestor
                return since + since_new
    return None


def merge_meta_tables(
    tables: PMap[str, PMap[str, V]],
    pending: Mapping[str, Mapping[str, V]],
    entities: PMap[str, PMap[str, object]],
) -> PMap[str, PMap[str, V]]:
    """`merge_tables` for the entity metas of a write whose entity tables are already merged into `entities`.

    When a write sets one meta on every row of a large table it wrote in one piece (a new
    table, or a bulk rewrite: see `_bulk`), that table's metas are kept as one value over the
    entity table's keys (`_OneValue`) instead of one entry per row.
    """
    if not pending:
        return tables
    changes: dict[str, PMap[str, V]] = {}
    rest: dict[str, Mapping[str, V]] = {}
    for key, rows in pending.items():
        one = _one_value_table(rows, entities.get(key))
        if one is None:
            rest[key] = rows
        else:
            changes[key] = one
    merged = merge_tables(tables, rest)
    return merged.update(changes) if changes else merged


def _one_value_table(rows: Mapping[str, V], table: PMap[str, object] | None) -> _OneValue[str, V] | None:
    """`rows` as one value over the keys of entity `table`, when they are exactly its keys and share one value."""
    if table is None or type(rows) is not dict or len(rows) < _ONE_VALUE_MIN:
        return None
    keys = table._dict
    if keys is None or len(keys) != len(rows):
        return None
    value = next(iter(rows.values()))
    if operator.countOf(rows.values(), value) != len(rows) or rows.keys() != keys.keys():
        return None
    return _OneValue(keys, value)


def merge_tables(
    tables: PMap[str, PMap[str, V]], pending: Mapping[str, Mapping[str, V]], ordered: bool = False
) -> PMap[str, PMap[str, V]]:
    """`tables` with each table's `pending` rows set; entity tables (`ordered`) keep their insertion order.

    The rows dicts are handed over: a new table keeps its dict, so callers never change them afterwards.
    """
    if not pending:
        return tables
    changes: dict[str, PMap[str, V]] = {}
    for key, rows in pending.items():
        current = tables.get(key)
        if current is None:
            if type(rows) is dict:  # a fresh table: it keeps the dict the caller handed over
                changes[key] = OrderedPMap.adopt(rows) if ordered else PMap.adopt(rows)
            else:
                changes[key] = OrderedPMap(rows) if ordered else PMap(rows)
        else:
            changes[key] = (OrderedPMap.of(current) if ordered else current).update(rows)
    return tables.update(changes)
