"""`denormalize()`: rebuild nested values and Entity instances from normalized data.

One `Unvisit` object serves one read. It records every record it reads
(`deps`), so `MemoCache` can tell later whether the same read would still give
the same answer, and keeps an entity-instance cache so each entity is built
once per read (or once per store version, when the cache belongs to a MemoCache).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from restlayer._gc import no_gc
from restlayer._text import to_text
from restlayer.schema._base import INVALID, MAX_DEPTH, compile_schema

# A dependency: (entity key, pk, the table object read, the record read or None).
Dep = tuple[str, str, Any, Any]
_IN_PROGRESS = object()


class _ReadToken:
    """Stands for the deps of an entity whose build deferred a descendant (deep data).

    Its deps are incomplete, so its cache entry is trusted only by the read that made it.
    """

    __slots__ = ()


class Unvisit:
    """The state of one denormalization: tables read, args, instance cache, dependencies."""

    __slots__ = ("args", "cache", "checking", "deferred", "deps", "depth", "entities", "indexes", "token")

    def __init__(
        self,
        entities: Mapping[str, Any],
        args: tuple[Any, ...] = (),
        *,
        cache: dict[tuple[Any, str], Any] | None = None,
        checking: bool = False,
        indexes: Mapping[str, Any] | None = None,
    ) -> None:
        self.entities = entities
        self.indexes = indexes
        self.args = args
        self.cache = {} if cache is None else cache
        self.checking = checking  # True when `cache` outlives this read and must be validated
        self.deps: list[Dep] = []
        # Depth guard (see MAX_DEPTH): deeper entities are built later from `deferred`.
        self.depth = 0
        self.deferred: list[tuple[Any, str, Any, Any, Any]] | tuple[()] = ()  # a list once used
        self.token: _ReadToken | None = None

    def __call__(self, node: Any, value: Any) -> Any:
        """Denormalize `value` by compiled `node`."""
        if node is None or value is None:
            return value
        result = node.denormalize_value(value, self)
        if self.deferred:
            self.finish_deferred()
        return result

    def read(self, key: str, pk: str) -> Any:
        """The stored record for key/pk (None when missing), recorded as a dependency."""
        table = self.entities.get(key)
        record = None if table is None else table.get(pk)
        self.deps.append((key, pk, table, record))
        return record

    def entity(self, cls: Any, pk: str) -> Any:
        """The instance of entity class `cls` stored under `pk` (None missing, INVALID deleted)."""
        key = cls.key
        table = self.entities.get(key)
        record = None if table is None else table.get(pk)
        if record is None or record is INVALID:
            self.deps.append((key, pk, table, record))
            return record
        hit = self.cache.get((cls, pk))
        if hit is not None and hit[0] is record:
            deps = hit[2]
            if deps is None:  # a cycle back to an entity being built right now
                self.deps.append((key, pk, table, record))  # what embeds it depends on it too
                return hit[1] if hit[1] is not _IN_PROGRESS else None
            if deps.__class__ is _ReadToken:
                if deps is self.token:  # deep data built earlier in this same read
                    self.deps.append((key, pk, table, record))
                    return hit[1]
            elif not self.checking or len(deps) == 1 or deps_valid(self.entities, deps, 1):
                self.deps.extend(deps)
                return hit[1]
        outer = self.deps
        self.deps = mine = [(key, pk, table, record)]
        if not cls.schema:  # no nested schema: nothing to defer
            value = self.build(cls, pk, record)
            self.deps = outer
            outer.extend(mine)
            self.cache[(cls, pk)] = (record, value, mine)
            return value
        started = cls.start_build(record)
        if self.depth >= MAX_DEPTH and started is not None:  # can be filled later: deep data waits
            self.deps = outer
            return self._defer(cls, pk, record, table, started)
        queued = len(self.deferred)
        self.depth += 1
        value = self._finish(cls, pk, record, started)
        self.depth -= 1
        self.deps = outer
        outer.extend(mine)
        self.cache[(cls, pk)] = (record, value, mine if len(self.deferred) == queued else self.deferred_token())
        return value

    def collection(self, coll: Any, pk: str) -> Any:
        """The list (or dict) stored for Collection `coll` under `pk` (None missing).

        Cached like entity instances, by the stored list and its item schema, so one
        stored list read at the top level and as a nested member is one object while
        nothing it holds changed.
        """
        key = coll.key
        table = self.entities.get(key)
        record = None if table is None else table.get(pk)
        if record is None or record is INVALID:
            self.deps.append((key, pk, table, record))
            return record
        item = coll.node.node
        hit = self.cache.get((key, pk))
        if (
            hit is not None
            and hit[0] is record
            and len(hit) == 4
            and hit[3] is item
            and (not self.checking or deps_valid(self.entities, hit[2], 1))
        ):
            self.deps.extend(hit[2])
            return hit[1]
        outer = self.deps
        self.deps = mine = [(key, pk, table, record)]
        queued = len(self.deferred)
        value = coll.node.denormalize_value(record, self)
        self.deps = outer
        outer.extend(mine)
        if len(self.deferred) == queued:  # deep data deferred inside: its deps are incomplete, not cached
            self.cache[(key, pk)] = (record, value, mine, item)
        return value

    def build(self, cls: Any, pk: str | None, record: Mapping[str, Any]) -> Any:
        """Make the instance of entity class `cls` for `record` (INVALID when it is invalid)."""
        return self._finish(cls, pk, record, cls.start_build(record))

    def _finish(self, cls: Any, pk: str | None, record: Mapping[str, Any], started: Any) -> Any:
        """Complete a `start_build`: held in the cache first, so a cycle back to it finds it."""
        if started is INVALID:
            return INVALID
        if pk is not None:
            self.cache[(cls, pk)] = (record, _IN_PROGRESS if started is None else started, None)
        return cls.finish_build(started, record, self)

    # ----- deep data ---------------------------------------------------------------------------
    def deferred_token(self) -> _ReadToken:
        """The token cached in place of the deps of an entity whose build deferred a descendant."""
        if self.token is None:
            self.token = _ReadToken()
        return self.token

    def _defer(self, cls: Any, pk: str, record: Any, table: Any, obj: Any) -> Any:
        """`obj` (from `start_build`), its fields filled once the current walk has unwound (deep data)."""
        self.deps.append((cls.key, pk, table, record))
        if obj is INVALID:
            return INVALID
        self.cache[(cls, pk)] = (record, obj, None)
        if not self.deferred:
            self.deferred = []
        self.deferred.append((cls, pk, record, table, obj))
        return obj

    def finish_deferred(self) -> None:
        """Fill every deferred instance, each from a fresh stack (first deferred, first done).

        A deferred instance was already handed to its parent, so a nested entity that
        turns out invalid reads as None here rather than invalidating the instance.
        """
        queue = self.deferred
        assert isinstance(queue, list)
        top = self.deps
        index = 0
        while index < len(queue):
            cls, pk, record, table, obj = queue[index]
            index += 1
            self.depth = 0
            self.deps = mine = [(cls.key, pk, table, record)]
            queued = len(queue)
            cls.finish_build(obj, record, self, strict=False)
            top.extend(mine)
            self.cache[(cls, pk)] = (record, obj, mine if len(queue) == queued else self.deferred_token())
        self.deps = top
        queue.clear()

    def lookup_index(self, cls: Any, fields: Mapping[str, Any]) -> str | None:
        """Resolve a pk through `cls.indexes` from the given field values."""
        if not cls.indexes or self.indexes is None:
            return None
        per_key = self.indexes.get(cls.key)
        if per_key is None:
            return None
        for field in cls.indexes:
            value = fields.get(field)
            if value is None:
                continue
            table = per_key.get(field)
            pk = None if table is None else table.get(to_text(value))
            if pk is not None and pk is not INVALID:
                return pk  # type: ignore[no-any-return]
        return None


def deps_valid(entities: Mapping[str, Any], deps: list[Dep], start: int = 0) -> bool:
    """True when every recorded read would read the same record from `entities` now."""
    for i in range(start, len(deps)):
        key, pk, table, record = deps[i]
        current = entities.get(key)
        if current is table:
            continue
        if (None if current is None else current.get(pk)) is not record:
            return False
    return True


@no_gc
def denormalize(schema: Any, input: Any, entities: Mapping[str, Any], args: tuple[Any, ...] | list[Any] = ()) -> Any:
    """Rebuild the value of `input` by `schema` from `entities`; None when it is invalid."""
    from restlayer.schema._fast import denormalize_with

    value = denormalize_with(Unvisit(entities, tuple(args)), compile_schema(schema), input, tracked=False)
    return None if value is INVALID else value
