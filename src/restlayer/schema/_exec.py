"""A typed executor for per-schema plans, compiled by mypyc where a compiler is present.

`_fast` writes one Python function per schema node; compiled code cannot be written
at run time, so this module does the same work by walking a small tree of plan
objects instead (one per schema node, built once and cached by `_fast`). Interpreted,
it is slower than the generated functions and `_fast` does not use it; compiled to C
by mypyc (`python3 dev.py setup`, or a wheel built with `RESTLAYER_COMPILE=1`) it is
faster, and `_fast` hands out its bound methods in place of generated functions.

Every plan does exactly what the general engine does for its node and hands anything
unusual (a non-dict value, an unusable pk, a record already written in this call, an
entity at the depth guard, a cycle) to the node's own general method, so both engines
give the same result, store and errors; the engine tests run against both.
"""

from __future__ import annotations

import copy
from operator import is_
from typing import Any, Final

from restlayer.errors import SchemaError
from restlayer.schema._base import INVALID, MAX_DEPTH
from restlayer.schema._frozen import CONTAINERS, FrozenDict, FrozenList, freeze_members

_NO_META: Final = {"fetched_at": 0, "date": 0, "expires_at": 0}
_new = object.__new__
_setattr = object.__setattr__


def compiled() -> bool:
    """True when this module runs as mypyc-compiled C code."""
    return not __file__.endswith((".py", ".pyc"))


# ----- normalize -------------------------------------------------------------------------------
class NPlan:
    """Normalizes one schema node; this base hands every value to the node's general method."""

    def __init__(self, general: Any) -> None:
        self.general = general

    def norm(self, value: Any, parent: Any, key: Any, ctx: Any) -> Any:
        return self.general(value, parent, key, ctx)


class NEntity(NPlan):
    """A plain entity class (default hooks): its record copied, members normalized, stored."""

    def __init__(self, cls: Any) -> None:
        super().__init__(cls.normalize_value)
        self.cls = cls
        self.key: str = cls.key
        self.nested = bool(cls.nested())  # members normalized one level deeper (the depth guard)
        self.fields: list[tuple[str, NPlan]] = []  # filled by the builder (schemas can be cyclic)

    def norm(self, value: Any, parent: Any, key: Any, ctx: Any) -> Any:
        if value.__class__ is not dict:
            return self.general(value, parent, key, ctx)
        pk = value.get("id")
        if pk.__class__ is int:
            pk = str(pk)
        if pk.__class__ is not str or pk == "" or pk == "undefined":
            return self.general(value, parent, key, ctx)  # anything unusual: the general engine
        if self.nested:
            depth: int = ctx.depth
            if depth >= MAX_DEPTH:  # deep data: the general engine defers it
                return self.general(value, parent, key, ctx)
            record = dict(value)
            ctx.depth = depth + 1
            for name, plan in self.fields:
                child = record.get(name)
                if child is not None:
                    try:
                        record[name] = plan.norm(child, record, name, ctx)
                    except SchemaError as exc:
                        exc.path = (name, *exc.path)
                        raise
            ctx.depth = depth
        else:
            record = dict(value)
        if not CONTAINERS.isdisjoint(map(type, record.values())):
            freeze_members(record)  # stored data is read-only
        self.store(pk, record, ctx)
        return pk

    def store(self, pk: str, record: dict[str, Any], ctx: Any) -> None:
        """Write a new record, or merge with a stored dict by the default rule; the rest via `ctx.store`."""
        key = self.key
        pending: dict[str, dict[str, Any]] = ctx.pending
        table = pending.get(key)
        if table is not None and pk in table:
            ctx.store(self.cls, pk, record)  # written earlier in this call: the general merge
            return
        stored = ctx.entities.get(key)
        existing = None if stored is None else stored.get(pk)
        if existing is not None and existing.__class__ is not dict:
            ctx.store(self.cls, pk, record)
            return
        if table is None:
            table = pending[key] = {}
            metas: dict[str, Any] = {}
            ctx.pending_meta[key] = metas
        else:
            metas = ctx.pending_meta[key]
        meta = ctx.meta
        if existing is None:
            table[pk] = record
            metas[pk] = meta
            return
        stored_metas = ctx.entities_meta.get(key)
        stored_meta = None if stored_metas is None else stored_metas.get(pk)
        if stored_meta is None:
            stored_meta = _NO_META
        if meta["fetched_at"] < stored_meta["fetched_at"]:  # older data loses
            table[pk] = {**record, **existing}
            metas[pk] = stored_meta
        else:
            table[pk] = {**existing, **record}
            metas[pk] = meta


class NArray(NPlan):
    """A list of one schema's items; None items kept in place, None results dropped."""

    def __init__(self, general: Any, item: NPlan) -> None:
        super().__init__(general)
        self.item = item

    def norm(self, value: Any, parent: Any, key: Any, ctx: Any) -> Any:
        if value.__class__ is not list:
            return self.general(value, parent, key, ctx)
        item_plan = self.item
        out: list[Any] = []
        index = -1
        try:
            for item in value:
                index += 1
                if item is None:
                    out.append(None)
                    continue
                result = item_plan.norm(item, parent, key, ctx)
                if result is not None:
                    out.append(result)
        except SchemaError as exc:
            exc.path = (index, *exc.path)
            raise
        return FrozenList(out)


class NObject(NPlan):
    """A dict with named members normalized (the rest kept, frozen)."""

    def __init__(self, general: Any) -> None:
        super().__init__(general)
        self.fields: list[tuple[str, NPlan]] = []

    def norm(self, value: Any, parent: Any, key: Any, ctx: Any) -> Any:
        if value.__class__ is not dict:
            return self.general(value, parent, key, ctx)
        out = dict(value)
        for name, plan in self.fields:
            child = out.get(name)
            if child is not None:
                try:
                    out[name] = plan.norm(child, value, name, ctx)
                except SchemaError as exc:
                    exc.path = (name, *exc.path)
                    raise
        if not CONTAINERS.isdisjoint(map(type, out.values())):
            freeze_members(out)
        return FrozenDict(out)


# ----- denormalize -----------------------------------------------------------------------------
class DPlan:
    """Denormalizes one schema node; this base hands every value to the node's general method."""

    def __init__(self, general: Any) -> None:
        self.general = general

    def denorm(self, value: Any, unvisit: Any) -> Any:
        return self.general(value, unvisit)


class DEntity(DPlan):
    """A plain entity class: the instance for a pk, cached per read (or per MemoCache) by its record.

    `tracked=False` records no dependencies (a one-off read whose cache is its own).
    """

    def __init__(self, cls: Any, tracked: bool) -> None:
        super().__init__(cls.denormalize_value)
        self.cls = cls
        self.key: str = cls.key
        self.tracked = tracked
        self.deep = bool(cls.schema)  # may defer descendants (deep data)
        self.defaults: dict[str, Any] = dict(cls._defaults)
        self.mutable: list[str] = list(cls._mutable_defaults)
        self.fields: list[tuple[str, DPlan, bool]] = []  # name, plan, an invalid member invalidates

    def denorm(self, value: Any, unvisit: Any) -> Any:
        if value.__class__ is not str:
            if value.__class__ is dict:  # an entity given inline, never normalized: built uncached
                return self.build(value, unvisit)
            return self.general(value, unvisit)
        if self.deep and unvisit.depth >= MAX_DEPTH:
            return self.general(value, unvisit)
        key = self.key
        table = unvisit.entities.get(key)
        record = None if table is None else table.get(value)
        if record is None or record is INVALID:
            if self.tracked:
                unvisit.deps.append((key, value, table, record))
            return record
        cache: dict[Any, Any] = unvisit.cache
        ck = (self.cls, value)
        hit = cache.get(ck)
        if hit is not None and hit[0] is record:
            deps = hit[2]
            if not self.tracked:
                return self.general(value, unvisit) if deps is None else hit[1]
            if deps.__class__ is not list:  # a cycle back to an instance being built, or deep data
                return self.general(value, unvisit)
            if not unvisit.checking or len(deps) == 1 or deps_valid(unvisit.entities, deps, 1):
                unvisit.deps.extend(deps)
                return hit[1]
        if not self.tracked:
            obj = self.build_stored(ck, record, unvisit)
            cache[ck] = (record, obj, ())
            return obj
        outer: list[Any] = unvisit.deps
        mine = [(key, value, table, record)]
        unvisit.deps = mine
        queued = len(unvisit.deferred)
        obj = self.build_stored(ck, record, unvisit)
        unvisit.deps = outer
        outer.extend(mine)
        cache[ck] = (record, obj, mine if len(unvisit.deferred) == queued else unvisit.deferred_token())
        return obj

    def build_stored(self, ck: Any, record: Any, unvisit: Any) -> Any:
        """A stored entity's instance, its members read one level deeper (a cycle back finds it in the cache)."""
        if not self.deep:
            return self.build(record, unvisit)
        obj = _new(self.cls)
        unvisit.cache[ck] = (record, obj, None)
        depth: int = unvisit.depth
        unvisit.depth = depth + 1
        obj = self.fill(obj, record, unvisit)
        unvisit.depth = depth
        return obj

    def build(self, record: Any, unvisit: Any) -> Any:
        return self.fill(_new(self.cls), record, unvisit)

    def fill(self, obj: Any, record: Any, unvisit: Any) -> Any:
        """`obj` with its fields: defaults, then `record`, nested members denormalized (or INVALID)."""
        values = dict(self.defaults)
        values.update(record)
        for name in self.mutable:
            if name not in record:
                values[name] = copy.deepcopy(values[name])
        for name, plan, truthy in self.fields:
            child = record.get(name)
            if child is not None:
                result = plan.denorm(child, unvisit)
                if result is INVALID:
                    if truthy:
                        return INVALID
                    result = None
                values[name] = result
        _setattr(obj, "__dict__", values)
        return obj


class DArray(DPlan):
    """A list of one schema's items; missing and deleted items dropped, None items kept."""

    def __init__(self, general: Any, item: DPlan) -> None:
        super().__init__(general)
        self.item = item

    def denorm(self, value: Any, unvisit: Any) -> Any:
        item_plan = self.item
        out: list[Any] = []
        for item in value:
            if item is None:
                out.append(None)
                continue
            result = item_plan.denorm(item, unvisit)
            if result is not None and result is not INVALID:
                out.append(result)
        return out


class DObject(DPlan):
    """A dict with named members denormalized; an invalid member invalidates the whole."""

    def __init__(self, general: Any) -> None:
        super().__init__(general)
        self.fields: list[tuple[str, DPlan]] = []

    def denorm(self, value: Any, unvisit: Any) -> Any:
        if value.__class__ is not FrozenDict and value.__class__ is not dict:
            return self.general(value, unvisit)
        out = dict(value)
        for name, plan in self.fields:
            child = out.get(name)
            if child is not None:
                result = plan.denorm(child, unvisit)
                if result is INVALID:
                    return INVALID
                out[name] = result
        return out


# ----- dependency checks (MemoCache) -----------------------------------------------------------
def deps_valid(entities: Any, deps: list[Any], start: int) -> bool:
    """True when every recorded read (key, pk, table, record) would read the same record now."""
    get = entities.get
    for i in range(start, len(deps)):
        dep = deps[i]
        current = get(dep[0])
        if current is dep[2]:
            continue
        if (None if current is None else current.get(dep[1])) is not dep[3]:
            return False
    return True


def groups_valid(entities: Any, groups: list[tuple[str, Any, tuple[str, ...], tuple[Any, ...]]]) -> bool:
    """Deps grouped by table: one identity test per unchanged table, the pks of a changed one re-read."""
    get = entities.get
    for key, table, pks, records in groups:
        current = get(key)
        if current is table:
            continue
        if current is None:
            for record in records:
                if record is not None:
                    return False
        elif not all(map(is_, map(current.get, pks), records)):
            return False
    return True
