"""`normalize()`: walk a response with its schema, writing entities into new store tables.

Writes go to per-call scratch dicts and are committed into persistent tables
only when the whole walk succeeded, so a failure never leaves a half-written
state and the caller's previous state object is never touched.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from restlayer._gc import no_gc
from restlayer._pmap import EMPTY, PMap
from restlayer._text import to_text
from restlayer.errors import SchemaError
from restlayer.schema._base import INVALID, compile_schema, schema_name
from restlayer.schema._fast import normalizer

Tables = PMap[str, PMap[str, Any]]
_NO_META: dict[str, float] = {"fetched_at": 0, "date": 0, "expires_at": 0}
_ABSENT = object()


class NormalizedResult(NamedTuple):
    """The outcome of `normalize`: the normalized result plus the new store tables."""

    result: Any
    entities: Tables
    indexes: PMap[str, PMap[str, PMap[str, Any]]]
    entities_meta: Tables


class Normalizer:
    """Per-call state of one normalization: the store read from, and the pending writes."""

    __slots__ = (
        "args",
        "creating",
        "entities",
        "entities_meta",
        "indexes",
        "meta",
        "pending",
        "pending_indexes",
        "pending_meta",
        "placeholders",
    )

    def __init__(self, args: tuple[Any, ...], meta: Mapping[str, Any], state: Any, placeholders: bool = True) -> None:
        self.args = args
        self.placeholders = placeholders  # whether a create's item without a pk gets a "MISS-..." one
        self.meta = meta
        self.entities, self.indexes, self.entities_meta = _tables_of(state)
        self.pending: dict[str, dict[str, Any]] = {}
        self.pending_meta: dict[str, dict[str, Any]] = {}
        self.pending_indexes: dict[str, dict[str, dict[str, Any]]] = {}
        self.creating = False

    # ----- reads ---------------------------------------------------------------------
    def get(self, key: str, pk: str) -> Any:
        """The current record (pending write first, then the store), or None."""
        table = self.pending.get(key)
        if table is not None:
            value = table.get(pk, _ABSENT)
            if value is not _ABSENT:
                return value
        stored = self.entities.get(key)
        return None if stored is None else stored.get(pk)

    def keys_of(self, key: str) -> list[str]:
        """Every pk under `key`, stored or pending (collections use this to find their lists)."""
        stored = self.entities.get(key)
        keys = list(stored) if stored is not None else []
        pending = self.pending.get(key)
        if pending:
            seen = set(keys)
            keys.extend(pk for pk in pending if pk not in seen)
        return keys

    # ----- writes --------------------------------------------------------------------
    def store(self, schema: Any, pk: str, record: Any) -> None:
        """Write `record` under `schema.key`/`pk`, merging with this call's or the store's version."""
        key = schema.key
        table = self.pending.get(key)
        if table is None:
            table = self.pending[key] = {}
            self.pending_meta[key] = {}
        previous = table.get(pk, _ABSENT)
        if previous is not _ABSENT:
            merged = schema.merge(previous, record) if isinstance(previous, Mapping) else record
            table[pk] = merged
            if schema.indexes:
                self._index(schema, pk, previous, merged)
            return
        stored = self.entities.get(key)
        existing = None if stored is None else stored.get(pk)
        if existing is None:
            table[pk] = record
            self.pending_meta[key][pk] = self.meta
        elif schema._plain_store and isinstance(existing, Mapping):
            existing_meta = self._stored_meta(key, pk)
            if self.meta["fetched_at"] < existing_meta["fetched_at"]:
                table[pk] = schema.merge(record, existing)
                self.pending_meta[key][pk] = existing_meta
            else:
                table[pk] = schema.merge(existing, record)
                self.pending_meta[key][pk] = self.meta
        else:
            existing_meta = self._stored_meta(key, pk)
            table[pk] = schema.merge_with_store(existing_meta, self.meta, existing, record)
            self.pending_meta[key][pk] = schema.merge_meta_with_store(
                existing_meta, self.meta, existing, record
            )
        if schema.indexes:
            self._index(schema, pk, existing, table[pk])

    def replace(self, key: str, pk: str, value: Any) -> None:
        """Write `value` as is (collections merging a create, remove or move)."""
        table = self.pending.get(key)
        if table is None:
            table = self.pending[key] = {}
            self.pending_meta[key] = {}
        table[pk] = value
        self.pending_meta[key][pk] = self.meta

    def invalidate(self, key: str, pk: str) -> None:
        """Mark an entity deleted: the deletion marker with the incoming meta."""
        self.replace(key, pk, INVALID)

    def _stored_meta(self, key: str, pk: str) -> Mapping[str, Any]:
        table = self.entities_meta.get(key)
        meta = None if table is None else table.get(pk)
        return meta if meta is not None else _NO_META

    def _index(self, schema: Any, pk: str, old: Any, new: Any) -> None:
        """Keep `indexes[key][field][value] -> pk` current; an old value maps to INVALID."""
        if not isinstance(new, Mapping):
            return
        per_field = self.pending_indexes.setdefault(schema.key, {})
        for field in schema.indexes:
            value = new.get(field)
            changes = per_field.setdefault(field, {})
            if isinstance(old, Mapping):
                before = old.get(field)
                if before is not None and before != value:
                    changes[to_text(before)] = INVALID
            if value is not None:
                changes[to_text(value)] = pk

    # ----- commit --------------------------------------------------------------------
    def commit(self, result: Any) -> NormalizedResult:
        """Merge the pending writes into new persistent tables."""
        return NormalizedResult(
            result,
            _merge_tables(self.entities, self.pending),
            _merge_indexes(self.indexes, self.pending_indexes),
            _merge_tables(self.entities_meta, self.pending_meta),
        )


def _merge_tables(tables: Tables, pending: dict[str, dict[str, Any]]) -> Tables:
    if not pending:
        return tables
    changes = {}
    for key, rows in pending.items():
        current = tables.get(key)
        changes[key] = PMap(rows) if current is None else current.update(rows)
    return tables.update(changes)


def _merge_indexes(indexes: Any, pending: dict[str, dict[str, dict[str, Any]]]) -> Any:
    if not pending:
        return indexes
    changes = {}
    for key, fields in pending.items():
        current = indexes.get(key) or EMPTY
        changes[key] = _merge_tables(current, fields)
    return indexes.update(changes)


def _tables_of(state: Any) -> tuple[Any, Any, Any]:
    """(entities, indexes, entities_meta) of a NormalizedResult, a state object or a mapping."""
    if state is None:
        return EMPTY, EMPTY, EMPTY
    if isinstance(state, Mapping):
        parts = (state.get("entities"), state.get("indexes"), state.get("entities_meta"))
    else:
        parts = (getattr(state, "entities", None), getattr(state, "indexes", None),
                 getattr(state, "entities_meta", None))
    return as_tables(parts[0], 2), as_tables(parts[1], 3), as_tables(parts[2], 2)


def as_tables(tables: Any, depth: int) -> Any:
    """Tables given as plain dicts (tests, user code) become `depth` levels of PMaps."""
    if tables is None:
        return EMPTY
    if isinstance(tables, PMap) or depth == 0:
        return tables
    if depth == 1:
        return PMap(tables)
    return PMap({k: as_tables(v, depth - 1) for k, v in tables.items()})


def default_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """Fill in `fetched_at` 0, `date` now, `expires_at` infinity for what `meta` leaves out."""
    now = time.time() * 1000
    full: dict[str, Any] = {"fetched_at": 0, "date": now, "expires_at": float("inf")}
    if meta:
        full.update(meta)
    return full


@no_gc
def normalize(
    schema: Any,
    input: Any,
    args: tuple[Any, ...] | list[Any] = (),
    state: Any = None,
    meta: Mapping[str, Any] | None = None,
    *,
    placeholders: bool = True,
) -> NormalizedResult:
    """Normalize `input` by `schema` into new tables merged over `state` (never modified).

    Under a create schema (`push`, `unshift`, `assign`, `add_with`) an item without a
    usable pk is stored under a `"MISS-..."` placeholder, which an optimistic guess
    needs; `placeholders=False` makes it a SchemaError instead (a server's reply).
    """
    from restlayer.schema._invalidate import Invalidate

    node = compile_schema(schema)
    ctx = Normalizer(tuple(args), default_meta(meta), state, placeholders)
    if node is None:
        return ctx.commit(input)
    if not isinstance(node, Invalidate) and (input is None or isinstance(input, (str, int, float))):
        found = "null" if input is None else type(input).__name__
        raise SchemaError(
            f'Unexpected input given to normalize. Expected type to be "object", found "{found}"',
            schema=schema_name(node),
        )
    fast = normalizer(node)
    if fast is not None:
        try:
            return ctx.commit(fast(input, input, None, ctx))
        except RecursionError:  # deeper than the generated functions go: redo it all generally
            ctx = Normalizer(ctx.args, ctx.meta, state)
    result = node.normalize_value(input, input, None, ctx)
    return ctx.commit(result)
