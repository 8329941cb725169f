"""`Patch`: the JSON-only changes one store write makes, and how a store merges them in.

A patch travels between processes (through Redis) or survives a restart (in a
SQLite file), so it holds nothing but JSON values: a deleted entity or a dropped
index entry is `None`. Merging follows the single-process rule: a row written by
a later-started request (`fetched_at`) wins, so every process converges on the
same rows whatever order the announcements arrive in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from restlayer._pmap import EMPTY, PMap, merge_tables
from restlayer.core._state import IndexTable, MetaTable, State, Table
from restlayer.core._versions import unversioned
from restlayer.schema import INVALID

if TYPE_CHECKING:
    from restlayer.core._state import EndpointMeta, Record
    from restlayer.schema._base import InvalidType

Meta = dict[str, float]
EntityRow = tuple[str, str, "Mapping[str, object] | list[object] | None", Meta]
"""(entity key, pk, record: a dict, a list for a collection, None when deleted; meta)."""
EndpointRow = tuple[str, object, Meta]
"""(endpoint key, normalized result, meta)."""
IndexRow = tuple[str, str, str, "str | None"]
"""(entity key, field, value, pk or None when the value no longer maps to a pk)."""

_META_FIELDS = ("fetched_at", "date", "expires_at")
_CLOCK_FIELDS = ("fetched_at", "date")  # when a request started and its reply's time; `expires_at` may be infinite


@dataclass(frozen=True)
class Patch:
    """Rows to merge plus endpoint keys to invalidate, expire or announce as released."""

    entities: tuple[EntityRow, ...] = ()
    endpoints: tuple[EndpointRow, ...] = ()
    indexes: tuple[IndexRow, ...] = ()
    invalidated: tuple[str, ...] = ()
    expired: tuple[str, ...] = ()
    released: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return any((self.entities, self.endpoints, self.indexes, self.invalidated, self.expired, self.released))

    def to_json(self) -> dict[str, list[object]]:
        """A dict of lists (for `json.dumps`)."""
        return {
            "e": [list(row) for row in self.entities],
            "r": [list(row) for row in self.endpoints],
            "i": [list(row) for row in self.indexes],
            "x": list(self.invalidated),
            "o": list(self.expired),
            "u": list(self.released),
        }

    @classmethod
    def from_json(cls, data: object) -> Patch:
        """Validate decoded JSON (from another process: untrusted) into a Patch; ValueError when malformed."""
        if not isinstance(data, Mapping):
            raise ValueError("a patch must be a JSON object")
        return cls(
            entities=tuple(entity_row(row) for row in _list(data, "e")),
            endpoints=tuple(endpoint_row(row) for row in _list(data, "r")),
            indexes=tuple(_index_row(row) for row in _list(data, "i")),
            invalidated=tuple(_text(k, "invalidated key") for k in _list(data, "x")),
            expired=tuple(_text(k, "expired key") for k in _list(data, "o")),
            released=tuple(_text(k, "released key") for k in _list(data, "u")),
        )


def _list(data: Mapping[str, object], name: str) -> list[object]:
    value = data.get(name, [])
    if not isinstance(value, list):
        raise ValueError(f"patch field {name!r} must be a list")
    return value


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    return value


def meta_of(value: object) -> Meta:
    """A validated meta dict: numeric `fetched_at`, `date`, `expires_at` (ValueError otherwise).

    `fetched_at` and `date` are clock readings, so finite: a row dated Infinity (JSON that
    Python reads) would win every later merge, pinning its entity in every process for good.
    """
    if not isinstance(value, Mapping):
        raise ValueError("meta must be an object")
    meta: Meta = {}
    for name in _META_FIELDS:
        number = value.get(name)
        if isinstance(number, bool) or not isinstance(number, (int, float)) or math.isnan(number):
            raise ValueError(f"meta {name!r} must be a number")
        if name in _CLOCK_FIELDS and math.isinf(number):
            raise ValueError(f"meta {name!r} must be a finite time, not {number}")
        meta[name] = number
    return meta


def entity_row(row: object) -> EntityRow:
    """A validated (key, pk, record | None, meta) row."""
    if not isinstance(row, (list, tuple)) or len(row) != 4:
        raise ValueError("an entity row is [key, pk, record, meta]")
    key, pk, record, meta = row
    key = _text(key, "entity key")
    if record is not None and not isinstance(record, list if _holds_lists(key) else Mapping):
        kind = "a list" if _holds_lists(key) else "an object"
        raise ValueError(f"a record of {key!r} must be {kind} or null, got {type(record).__name__}")
    return key, _text(pk, "pk"), record, meta_of(meta)


def _holds_lists(key: str) -> bool:
    """Whether records under entity key `key` are lists: those of a list `Collection` (`[Todo]`).

    Every other key holds objects (an entity's fields, a `Values` collection's `{Todo}` map).
    Read with the wrong kind, a row from another program or version would break every read
    of it, so such a row is refused where it enters (an announcement, a backend's stored row).
    """
    parsed = unversioned(key)  # a store key names the schema's version after the entity key
    key = key if parsed is None else parsed[0]
    return key.startswith("[") and key.endswith("]")


def endpoint_row(row: object) -> EndpointRow:
    """A validated (key, result, meta) row."""
    if not isinstance(row, (list, tuple)) or len(row) != 3:
        raise ValueError("an endpoint row is [key, result, meta]")
    return _text(row[0], "endpoint key"), row[1], meta_of(row[2])


def _index_row(row: object) -> IndexRow:
    if not isinstance(row, (list, tuple)) or len(row) != 4:
        raise ValueError("an index row is [key, field, value, pk]")
    pk = None if row[3] is None else _text(row[3], "index pk")
    return _text(row[0], "index key"), _text(row[1], "index field"), _text(row[2], "index value"), pk


def _newer(incoming: Meta, existing: Mapping[str, float] | EndpointMeta | None) -> bool:
    """Whether a row with `incoming` meta replaces one with `existing` (ties: the later write wins)."""
    return existing is None or incoming["fetched_at"] >= existing.get("fetched_at", 0)


def _same_meta(a: Mapping[str, object] | None, b: Meta) -> bool:
    return a is not None and all(a.get(name) == b[name] for name in _META_FIELDS)


def merge_patch(state: State, patch: Patch) -> State:
    """`state` with `patch` merged in; unchanged rows keep the very same state (no watcher wakes)."""
    entities, entities_meta = _merge_entities(state, patch.entities)
    indexes = _merge_indexes(state.indexes, patch.indexes)
    endpoints, meta = _merge_endpoints(state, patch.endpoints)
    endpoints, meta = _drop_endpoints(endpoints, meta, patch.invalidated)
    meta = _expire(meta, patch.expired)
    before = (state.entities, state.entities_meta, state.indexes, state.endpoints, state.meta)
    if all(a is b for a, b in zip((entities, entities_meta, indexes, endpoints, meta), before, strict=True)):
        return state
    return state.evolve(entities=entities, entities_meta=entities_meta, indexes=indexes, endpoints=endpoints, meta=meta)


def _merge_entities(state: State, rows: Iterable[EntityRow]) -> tuple[Table, MetaTable]:
    entities, entities_meta = state.entities, state.entities_meta
    tables: dict[str, dict[str, Record]] = {}
    metas: dict[str, dict[str, Mapping[str, float]]] = {}
    for key, pk, record, meta in rows:
        table, meta_table = entities.get(key) or EMPTY, entities_meta.get(key) or EMPTY
        existing_meta = meta_table.get(pk)
        if not _newer(meta, existing_meta):
            continue
        value = INVALID if record is None else record
        existing = table.get(pk)
        if _same_meta(existing_meta, meta) and (existing is value or existing == value):
            continue
        tables.setdefault(key, {})[pk] = value
        metas.setdefault(key, {})[pk] = meta
    return merge_tables(entities, tables, ordered=True), merge_tables(entities_meta, metas)


def _merge_indexes(indexes: IndexTable, rows: Iterable[IndexRow]) -> IndexTable:
    changes: dict[str, dict[str, dict[str, str | InvalidType]]] = {}
    for key, field, value, pk in rows:
        target = INVALID if pk is None else pk
        current = (indexes.get(key) or EMPTY).get(field) or EMPTY
        if current.get(value) is not target and current.get(value) != target:
            changes.setdefault(key, {}).setdefault(field, {})[value] = target
    if not changes:
        return indexes
    updated = {}
    for key, fields in changes.items():
        per_key = indexes.get(key) or EMPTY
        updated[key] = per_key.update({f: (per_key.get(f) or EMPTY).update(v) for f, v in fields.items()})
    return indexes.update(updated)


def _merge_endpoints(state: State, rows: Iterable[EndpointRow]) -> tuple[PMap[str, object], PMap[str, EndpointMeta]]:
    endpoints, meta = state.endpoints, state.meta
    results: dict[str, object] = {}
    metas: dict[str, EndpointMeta] = {}
    for key, result, row_meta in rows:
        existing = meta.get(key)
        if not _newer(row_meta, existing):
            continue
        if _same_meta(existing, row_meta) and key in endpoints and endpoints[key] == result:
            continue
        results[key] = result
        previous = None if existing is None else existing.get("expires_at")
        metas[key] = {
            "fetched_at": row_meta["fetched_at"],
            "date": row_meta["date"],
            "expires_at": row_meta["expires_at"],
            "prev_expires_at": previous,
        }
    return endpoints.update(results), meta.update(metas)


def _drop_endpoints(
    endpoints: PMap[str, object], meta: PMap[str, EndpointMeta], keys: Iterable[str]
) -> tuple[PMap[str, object], PMap[str, EndpointMeta]]:
    """Invalidate `keys` as `Controller.invalidate` does (known keys only)."""
    changes: dict[str, EndpointMeta] = {}
    for key in keys:
        if key not in endpoints and key not in meta:
            continue
        item: EndpointMeta = {**(meta.get(key) or {})}
        item.pop("error", None)
        if item.get("invalidated") and key not in endpoints:
            continue
        endpoints = endpoints.delete(key)
        changes[key] = {**item, "expires_at": 0, "invalidated": True}
    return endpoints, meta.update(changes)


def _expire(meta: PMap[str, EndpointMeta], keys: Iterable[str]) -> PMap[str, EndpointMeta]:
    changes: dict[str, EndpointMeta] = {
        key: {**meta[key], "expires_at": 1} for key in keys if key in meta and meta[key].get("expires_at") != 1
    }
    return meta.update(changes)
