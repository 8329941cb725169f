"""`normalize()`: walk a response with its schema, writing entities into new store tables.

Writes go to per-call scratch dicts and are committed into persistent tables
only when the whole walk succeeded, so a failure never leaves a half-written
state and the caller's previous state object is never touched.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from restlayer._gc import no_gc
from restlayer._pmap import EMPTY, OrderedPMap, PMap, merge_meta_tables, merge_tables
from restlayer.errors import ParamError, RestLayerError, SchemaError
from restlayer.schema._base import (
    INVALID,
    InvalidType,
    Node,
    compile_schema,
    index_text,
    normalize_members,
    schema_name,
)
from restlayer.schema._entity import Entity, call_hook
from restlayer.schema._fast import normalizer
from restlayer.schema._frozen import freeze, freeze_members

if TYPE_CHECKING:
    from restlayer.schema._collection import Collection
    from restlayer.schema._entity import Meta

#: Store tables: entity key -> pk -> stored record (JSON the schemas and readers read), or INVALID.
Tables = PMap[str, PMap[str, Any]]
#: Index tables: entity key -> field -> value text -> pk (INVALID for a value no longer indexed).
IndexTables = PMap[str, PMap[str, PMap[str, "str | InvalidType"]]]
#: Meta tables: entity key -> pk -> meta.
MetaTables = PMap[str, PMap[str, "Meta"]]
_NO_META: dict[str, float] = {"fetched_at": 0, "date": 0, "expires_at": 0}
_ABSENT = object()


class NormalizedResult(NamedTuple):
    """The outcome of `normalize`: the normalized result plus the new store tables."""

    result: Any  # the response with entities replaced by their pks: JSON the caller reads
    entities: Tables
    indexes: IndexTables
    entities_meta: MetaTables


class _Deferred(NamedTuple):
    schema: type[Entity]
    pk: str
    record: dict[str, object]
    nested: Mapping[str, Node | None]
    value: object
    creating: bool
    parent: _Deferred | None


class Normalizer:
    """Per-call state of one normalization: the store read from, and the pending writes."""

    __slots__ = (
        "args",
        "creating",
        "deferred",
        "depth",
        "entities",
        "entities_meta",
        "indexes",
        "meta",
        "pending",
        "pending_indexes",
        "pending_meta",
        "placeholder_seed",
        "placeholders",
        "placeholders_drawn",
        "working_on",
    )

    def __init__(
        self,
        args: tuple[object, ...],
        meta: Meta,
        state: object,
        placeholders: bool = True,
        placeholder_seed: str | None = None,
    ) -> None:
        self.args = args
        self.placeholders = placeholders  # whether a create's item without a pk gets a "MISS-..." one
        self.placeholder_seed = placeholder_seed
        self.placeholders_drawn = 0
        self.meta = meta
        self.entities, self.indexes, self.entities_meta = _tables_of(state)
        self.pending: dict[str, dict[str, object]] = {}
        self.pending_meta: dict[str, dict[str, Meta]] = {}
        self.pending_indexes: dict[str, dict[str, dict[str, str | InvalidType]]] = {}
        self.creating = False
        # Depth guard: entities nested deeper than MAX_DEPTH (see _base) are finished later
        # from `deferred`, so the walk's stack stays bounded whatever the data's depth.
        self.depth = 0
        self.deferred: list[_Deferred] | tuple[()] = ()  # a list once something is deferred
        self.working_on: _Deferred | None = None

    def placeholder(self) -> str:
        """A `"MISS-..."` pk for a created item without one: random, or drawn from `placeholder_seed`.

        Drawn from a seed, the n-th placeholder of a call is the same in every call with that
        seed: an optimistic guess recomputed over a changed store keeps the pks it showed.
        """
        if self.placeholder_seed is None:
            return f"MISS-{uuid.uuid4().hex[:12]}"
        self.placeholders_drawn += 1
        text = f"{self.placeholder_seed}:{self.placeholders_drawn}".encode()
        return f"MISS-{hashlib.blake2b(text, digest_size=6).hexdigest()}"

    # ----- reads ---------------------------------------------------------------------
    def get(self, key: str, pk: str) -> object:
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

    # ----- deep data -------------------------------------------------------------------
    def defer(
        self, schema: type[Entity], pk: str, record: dict[str, object], nested: Mapping[str, Node | None], value: object
    ) -> None:
        """Finish `record` (normalize its members, then store it) once the current walk has unwound."""
        item = self.working_on
        while item is not None:  # the deferred ancestors of this value
            if item.value is value:
                raise SchemaError(f"The input contains itself (a {schema.key} nested in itself)", schema=schema.key)
            item = item.parent
        if not self.deferred:
            self.deferred = []
        self.deferred.append(_Deferred(schema, pk, record, nested, value, self.creating, self.working_on))

    def finish_deferred(self) -> None:
        """Walk every deferred entity, each from a fresh stack (first deferred, first done)."""
        queue = self.deferred
        assert isinstance(queue, list)
        index = 0
        while index < len(queue):
            item = queue[index]
            index += 1
            self.working_on = item
            self.creating = item.creating
            self.depth = 0
            normalize_members(item.record, item.nested, item.record, self)
            freeze_members(item.record)
            self.store(item.schema, item.pk, item.record)
        queue.clear()
        self.working_on = None
        self.creating = False

    # ----- writes --------------------------------------------------------------------
    def store(
        self, schema: type[Entity] | Collection[object], pk: str, record: Any
    ) -> None:  # record: stored JSON (a record, or a list of refs)
        """Write `record` under `schema.key`/`pk`, merging with this call's or the store's version."""
        key = schema.key
        table = self.pending.get(key)
        if table is None:
            table = self.pending[key] = {}
            self.pending_meta[key] = {}
        previous = table.get(pk, _ABSENT)
        if previous is not _ABSENT:
            if not isinstance(previous, Mapping):
                merged = record
            elif schema._plain_store:
                merged = schema.merge(previous, record)
            else:
                # a copy: `previous` may be the stored record itself (a hook that kept it), see `_merge_with_store`
                merged = _record_from(schema, "merge", call_hook(schema, "merge", dict(previous), record))
            table[pk] = merged
            if schema.indexes:
                self._index(schema, pk, previous, merged)
            return
        stored = self.entities.get(key)
        existing = None if stored is None else stored.get(pk)
        if existing is None:
            table[pk] = record
            self.pending_meta[key][pk] = self.meta
        elif schema._plain_store and isinstance(existing, (dict, Mapping)):
            existing_meta = self._stored_meta(key, pk)
            if self.meta["fetched_at"] < existing_meta["fetched_at"]:
                table[pk] = schema.merge(record, existing)
                self.pending_meta[key][pk] = existing_meta
            else:
                table[pk] = schema.merge(existing, record)
                self.pending_meta[key][pk] = self.meta
        else:
            table[pk], self.pending_meta[key][pk] = self._merge_with_store(schema, key, pk, existing, record)
        if schema.indexes:
            self._index(schema, pk, existing, table[pk])

    def _merge_with_store(
        self, schema: type[Entity] | Collection[object], key: str, pk: str, existing: object, record: object
    ) -> tuple[object, Meta]:
        """The record and meta an entity's store hooks (`merge_with_store`, `merge_meta_with_store`) give.

        The hooks get copies of the stored record and of both metas: a hook changing one in place
        (`existing.update(incoming); return existing`, a common idiom) changed the stored state itself,
        earlier states included, and as the record stayed the same object every memoized read kept
        showing the old data. A copy returned unchanged is stored as the original (its readers keep it).
        """
        existing_meta = self._stored_meta(key, pk)
        mine = dict(existing) if isinstance(existing, Mapping) and isinstance(schema, type) else existing
        stored_meta, incoming_meta = dict(existing_meta), dict(self.meta)
        merged = call_hook(schema, "merge_with_store", stored_meta, incoming_meta, mine, record)
        if merged is mine and mine is not existing and mine == existing:
            merged = existing
        merged_meta = call_hook(schema, "merge_meta_with_store", stored_meta, incoming_meta, mine, record)
        return _record_from(schema, "merge_with_store", merged), _meta_from(schema, merged_meta)

    def replace(self, key: str, pk: str, value: object) -> None:
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

    def _stored_meta(self, key: str, pk: str) -> Meta:
        table = self.entities_meta.get(key)
        meta = None if table is None else table.get(pk)
        return meta if meta is not None else _NO_META

    def _index(self, schema: type[Entity] | Collection[object], pk: str, old: object, new: object) -> None:
        """Keep `indexes[key][field][value] -> pk` current; an old value maps to INVALID."""
        if not isinstance(new, Mapping):
            return
        per_field = self.pending_indexes.setdefault(schema.key, {})
        for field in schema.indexes:
            text = index_text(new.get(field))
            changes = per_field.setdefault(field, {})
            if isinstance(old, Mapping):
                before = index_text(old.get(field))
                if before is not None and before != text:
                    changes[before] = INVALID
            if text is not None:
                changes[text] = pk

    # ----- commit --------------------------------------------------------------------
    def commit(self, result: object) -> NormalizedResult:
        """Merge the pending writes into new persistent tables."""
        entities = merge_tables(self.entities, self.pending, ordered=True)
        return NormalizedResult(
            result,
            entities,
            _merge_indexes(self.indexes, self.pending_indexes),
            merge_meta_tables(self.entities_meta, self.pending_meta, entities),
        )


def _record_from(schema: type[Entity] | Collection[object], hook: str, value: object) -> Any:  # the stored form
    """`value`, what an entity's store hook `hook` returned, when it can be stored: a record (or the deletion marker).

    Anything else (a hook that forgot to return, or returned a list or a number) was stored as is,
    and every later read of that entity failed or gave an empty instance.
    """
    if isinstance(value, Mapping) or value is INVALID or not isinstance(schema, type):  # a Collection stores lists
        return value
    if hook == "merge_with_store" and _inherited(schema, hook):  # Entity's own calls `merge`: that one returned it
        hook = "merge"
    raise SchemaError(
        f"{_hook_owner(schema)}.{hook} returned {type(value).__name__}: expected the record to store (a dict)",
        schema=schema.key,
    )


_META_FIELDS = ("fetched_at", "date", "expires_at")


def _meta_from(schema: type[Entity] | Collection[object], meta: object) -> Meta:
    """`meta`, what `merge_meta_with_store` returned, when it is a meta: numbers under its three fields.

    Anything else was stored as is, and the entity's next write (or expiry check) failed on it.
    """
    if not isinstance(schema, type):  # a Collection's own (library) hook
        return cast("Meta", meta)
    if isinstance(meta, Mapping) and all(_is_number(meta.get(name)) for name in _META_FIELDS):
        return meta
    raise SchemaError(
        f"{_hook_owner(schema)}.merge_meta_with_store returned {meta!r:.80}: expected a dict of "
        "fetched_at, date and expires_at (numbers)",
        schema=schema.key,
    )


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _inherited(schema: object, hook: str) -> bool:
    """Whether `schema` (an Entity class) keeps Entity's own `hook`."""
    method = getattr(getattr(schema, hook, None), "__func__", None)
    return method is not None and method is getattr(Entity, hook).__func__


def _hook_owner(schema: object) -> str:
    """The name a hook's class goes by in a message."""
    return str(getattr(schema, "__name__", type(schema).__name__))


def _merge_indexes(indexes: IndexTables, pending: dict[str, dict[str, dict[str, str | InvalidType]]]) -> IndexTables:
    if not pending:
        return indexes
    changes = {}
    for key, fields in pending.items():
        current = indexes.get(key) or EMPTY
        changes[key] = merge_tables(current, fields)
    return indexes.update(changes)


def _tables_of(state: object) -> tuple[Tables, IndexTables, MetaTables]:
    """(entities, indexes, entities_meta) of a NormalizedResult, a state object or a mapping."""
    if state is None:
        return EMPTY, EMPTY, EMPTY
    if isinstance(state, Mapping):
        parts = (state.get("entities"), state.get("indexes"), state.get("entities_meta"))
    else:
        parts = (
            getattr(state, "entities", None),
            getattr(state, "indexes", None),
            getattr(state, "entities_meta", None),
        )
    entities = cast("Tables", as_tables(parts[0], 2, ordered=True))  # the caller's tables, taken as given
    return entities, cast("IndexTables", as_tables(parts[1], 3)), cast("MetaTables", as_tables(parts[2], 2))


def as_tables(tables: object, depth: int, ordered: bool = False) -> object:
    """Tables given as plain dicts (tests, user code) become `depth` levels of PMaps.

    With `ordered`, the innermost tables (entity key -> pk -> record) keep the dicts' order.
    """
    if tables is None:
        return EMPTY
    if isinstance(tables, PMap) or depth == 0:
        return tables
    if not isinstance(tables, Mapping):
        raise ParamError(f"a store table must be a mapping, got {type(tables).__name__}")
    if depth == 1:
        return OrderedPMap(tables) if ordered else PMap(tables)
    return PMap({k: as_tables(v, depth - 1, ordered) for k, v in tables.items()})


#: The top-level inputs every schema but `Invalidate` reads: JSON's objects and arrays. Anything else (a scalar,
#: bytes, a set, or an object such as a coroutine a hook forgot to await) is refused rather than stored as a result.
_DATA = (dict, list, tuple, Mapping)


def default_meta(meta: Mapping[str, float] | None) -> dict[str, float]:
    """Fill in `fetched_at` 0, `date` now, `expires_at` infinity for what `meta` leaves out."""
    now = time.time() * 1000
    full: dict[str, float] = {"fetched_at": 0, "date": now, "expires_at": float("inf")}
    if meta:
        full.update(meta)
    return full


@no_gc
def normalize(
    schema: object,
    input: object,
    args: Sequence[object] = (),
    state: object = None,
    meta: Mapping[str, float] | None = None,
    *,
    placeholders: bool = True,
    placeholder_seed: str | None = None,
) -> NormalizedResult:
    """Normalize `input` by `schema` into new tables merged over `state` (never modified).

    Under a create schema (`push`, `unshift`, `assign`, `add_with`) an item without a
    usable pk is stored under a `"MISS-..."` placeholder, which an optimistic guess
    needs; `placeholders=False` makes it a SchemaError instead (a server's reply).
    Placeholders are random unless `placeholder_seed` is given: then every call with
    that seed gives the same ones.
    """
    ctx, result = _run(schema, input, args, state, meta, placeholders, placeholder_seed)
    return ctx.commit(result)


class Written(NamedTuple):
    """What one normalize call writes over a state: entity rows and index entries, not yet merged."""

    rows: Mapping[str, Mapping[str, object]]  # entity key (or stored collection key) -> pk -> record
    indexes: Mapping[str, Mapping[str, Mapping[str, str | InvalidType]]]  # key -> field -> value -> pk


@no_gc
def written_by(
    schema: object,
    input: object,
    args: Sequence[object] = (),
    state: object = None,
    meta: Mapping[str, float] | None = None,
) -> Written:
    """The rows `normalize(schema, input, args, state, meta)` writes over `state`.

    Over the state a response was stored in, this names every row that response
    changed, stored collections it grew or shrank included (a push changes the
    lists already stored, so normalizing it alone would miss them).
    """
    ctx, _ = _run(schema, input, args, state, meta, True, None)
    return Written(ctx.pending, ctx.pending_indexes)


def _run(
    schema: object,
    input: object,
    args: Sequence[object],
    state: object,
    meta: Mapping[str, float] | None,
    placeholders: bool,
    placeholder_seed: str | None,
) -> tuple[Normalizer, object]:
    """Walk `input` by `schema` over `state`: the call's pending writes and the normalized result."""
    from restlayer.schema._invalidate import Invalidate

    node = compile_schema(schema)
    ctx = Normalizer(tuple(args), default_meta(meta), state, placeholders, placeholder_seed)
    if node is None:
        return ctx, freeze(input)  # stored data never aliases the caller's objects
    if not isinstance(node, Invalidate) and not isinstance(input, _DATA):
        found = "null" if input is None else type(input).__name__
        raise SchemaError(
            f'Unexpected input given to normalize. Expected type to be "object", found "{found}"',
            schema=schema_name(node),
        )
    try:
        return _walk(node, input, ctx, state)
    except RestLayerError:
        raise
    except Exception as exc:  # a user function of the schema (a Union's attribute, a Collection's args_key...)
        name = schema_name(node)
        raise SchemaError(f"normalizing {name} raised {type(exc).__name__}: {exc}", schema=name) from exc


def _walk(node: Node, input: object, ctx: Normalizer, state: object) -> tuple[Normalizer, object]:
    """`_run`'s walk: the generated functions when there are, the general engine when too deep for them."""
    fast = normalizer(node)
    if fast is None:
        result = node.normalize_value(input, input, None, ctx)
    else:
        try:
            result = fast(input, input, None, ctx)
        except RecursionError:  # deeper than the generated functions go: redo it all generally
            ctx = Normalizer(ctx.args, ctx.meta, state, ctx.placeholders, ctx.placeholder_seed)
            result = node.normalize_value(input, input, None, ctx)
    if ctx.deferred:
        ctx.finish_deferred()
    return ctx, result
