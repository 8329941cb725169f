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
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from restlayer._pmap import PMap
from restlayer.errors import SchemaError
from restlayer.schema._base import INVALID, MAX_DEPTH
from restlayer.schema._denormalize import DepRun
from restlayer.schema._frozen import FrozenDict, FrozenList, freeze, freeze_members

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Dep, DepItem, InstanceCache, Slots, Unvisit
    from restlayer.schema._entity import Entity, Meta
    from restlayer.schema._normalize import Normalizer

#: A schema node's general normalize method: (value, parent, key, normalizer) -> normalized value.
NormGeneral = Callable[[object, object, "str | None", "Normalizer"], object]
#: A table's lookup (pk -> stored record), or None when the store has no such table.
Lookup = Callable[[str], object] | None
#: A schema node's general denormalize method: (value, unvisit) -> denormalized value. Each
#: node declares the value it reads (an Array's: a list); a plan hands over what it was given.
DenormGeneral = Callable[[Any, "Unvisit"], object]
#: A stored table as a read sees it (None: the store has no such table).
Table = Mapping[str, object] | None

_NO_META: Final = {"fetched_at": 0, "date": 0, "expires_at": 0}
# Module constants bound once (compiled code reads a Final name without a module lookup).
_INVALID: Final = INVALID
_DEPTH: Final = MAX_DEPTH
_new: Final = object.__new__
_deepcopy: Final = copy.deepcopy
_freeze: Final = freeze
_FROZEN_DICT: Final = FrozenDict
_FrozenList: Final = FrozenList
_MISSING: Final = object()
_DepRun: Final = DepRun
#: The shortest list of plain entities whose reads are recorded as one `DepRun` (a run costs more than it saves below).
RUN_MIN: Final = 8


def compiled() -> bool:
    """True when this module runs as mypyc-compiled C code."""
    return not __file__.endswith((".py", ".pyc"))


def _has_containers(record: dict[str, object]) -> bool:
    """Whether a member of `record` is a plain list, dict or tuple (to be frozen before it is stored)."""
    for value in record.values():
        cls = type(value)
        if cls is list or cls is dict or cls is tuple:
            return True
    return False


# ----- normalize -------------------------------------------------------------------------------
class Walk:
    """One normalize call's tables, read once from its `Normalizer` (`ctx`)."""

    def __init__(self, ctx: Normalizer) -> None:
        self.ctx = ctx
        self.pending: dict[str, dict[str, object]] = ctx.pending
        self.pending_meta: dict[str, dict[str, Meta]] = ctx.pending_meta
        self.meta: Meta = ctx.meta
        self.fetched_at: float = ctx.meta["fetched_at"]
        self.tables: dict[str, Tables] = {}  # entity key -> its tables in this call

    def tables_of(self, key: str) -> Tables:
        """The tables of entity `key` in this call (looked up once per call)."""
        tables = self.tables.get(key)
        if tables is None:
            tables = self.tables[key] = Tables(self, key)
        return tables


class Tables:
    """One entity key's tables in one normalize call: the stored rows and metas, and this
    call's pending ones (made on the first write, by this class or by the general engine)."""

    def __init__(self, w: Walk, key: str) -> None:
        self.key = key
        self.all_rows = w.pending  # every key's pending rows (no reference back to `w`: no cycle)
        self.all_metas = w.pending_meta
        self.rows: dict[str, object] | None = w.pending.get(key)
        self.metas: dict[str, Meta] | None = w.pending_meta.get(key)
        self.stored: Lookup = _lookup(w.ctx.entities, key)
        self.stored_meta: Lookup = _lookup(w.ctx.entities_meta, key)

    def pending(self) -> dict[str, object] | None:
        """This call's rows of the key so far (None: nothing written yet)."""
        rows = self.rows
        if rows is None:  # the general engine may have made the table since
            rows = self.rows = self.all_rows.get(self.key)
        return rows

    def write(self, pk: str, record: dict[str, object], meta: Meta) -> None:
        """Write a row and its meta, making this call's tables of the key on the first write."""
        rows = self.pending()
        metas = self.metas
        if rows is None:
            rows = self.rows = self.all_rows[self.key] = {}
            metas = self.metas = self.all_metas[self.key] = {}
        elif metas is None:
            metas = self.metas = self.all_metas[self.key]
        rows[pk] = record
        metas[pk] = meta

    def meta_of(self, pk: str) -> Meta:
        """The stored meta of `pk` (a zero meta when there is none)."""
        get = self.stored_meta
        meta = None if get is None else get(pk)
        return _NO_META if meta is None else cast("Meta", meta)


def _lookup(tables: Mapping[str, Mapping[str, object]], key: str) -> Lookup:
    """`tables[key].get`, or None when there is no such table."""
    table = tables.get(key)
    return None if table is None else table.get


class NPlan:
    """Normalizes one schema node; this base hands every value to the node's general method."""

    def __init__(self, general: NormGeneral) -> None:
        self.general = general

    def norm(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        """The entry point (the signature of a generated function): one `Walk` per call."""
        return self.walk(value, parent, key, Walk(ctx))

    def walk(self, value: object, parent: object, key: str | None, w: Walk) -> object:
        return self.general(value, parent, key, w.ctx)


class NEntity(NPlan):
    """A plain entity class (default hooks): its record copied, members normalized, stored."""

    def __init__(self, cls: type[Entity]) -> None:
        super().__init__(cls.normalize_value)
        self.cls = cls
        self.key: str = cls.key
        self.nested = bool(cls.nested())  # members normalized one level deeper (the depth guard)
        self.int_ids: bool = not cls._text_id  # an int id stays in the record (else: the general engine)
        self.fields: list[tuple[str, NPlan]] = []  # filled by the builder (schemas can be cyclic)

    def walk(self, value: object, parent: object, key: str | None, w: Walk) -> object:
        if type(value) is not dict:
            return self.general(value, parent, key, w.ctx)
        src = cast("dict[str, object]", value)
        pk = src.get("id")
        if type(pk) is int and self.int_ids:
            pk = str(pk)
        if type(pk) is not str or pk == "" or pk == "undefined":
            return self.general(value, parent, key, w.ctx)  # anything unusual: the general engine
        spk: str = pk
        if not self.nested:
            self.store(spk, src, False, w)
            return spk
        ctx = w.ctx
        depth: int = ctx.depth
        if depth >= _DEPTH:  # deep data: the general engine defers it
            return self.general(value, parent, key, ctx)
        record = src.copy()
        ctx.depth = depth + 1
        _walk_members(self.fields, record, record, w)
        ctx.depth = depth
        self.store(spk, record, True, w)
        return spk

    def store(self, pk: str, record: dict[str, object], owned: bool, w: Walk) -> None:
        """Write a new record, or merge with a stored dict by the default rule; the rest via `ctx.store`.

        An `owned` record was built by this call; any other is the caller's, copied (or merged
        into a new dict) before it is stored.
        """
        tables = w.tables_of(self.key)
        rows = tables.pending()
        if rows is not None and pk in rows:
            w.ctx.store(self.cls, pk, _stored_form(record, owned))  # written earlier in this call: the general merge
            return
        get = tables.stored
        existing = None if get is None else get(pk)
        if existing is None:
            tables.write(pk, _stored_form(record, owned), w.meta)
            return
        if type(existing) is not dict:
            w.ctx.store(self.cls, pk, _stored_form(record, owned))
            return
        stored_meta = tables.meta_of(pk)
        stored_record = cast("dict[str, object]", existing)
        if w.fetched_at < stored_meta["fetched_at"]:  # older data loses
            tables.write(pk, _stored_form({**record, **stored_record}, True), stored_meta)
            return
        tables.write(pk, _stored_form({**stored_record, **record}, True), w.meta)


def _stored_form(record: dict[str, object], owned: bool) -> dict[str, object]:
    """`record` as the store keeps it: this call's own copy, its plain lists and dicts frozen."""
    out = record if owned else record.copy()
    if _has_containers(out):
        freeze_members(out)  # stored data is read-only
    return out


def _walk_members(fields: list[tuple[str, NPlan]], out: dict[str, object], parent: object, w: Walk) -> None:
    """Replace each present member of `out` by its plan's result; an error's path gains the member name."""
    for name, plan in fields:
        child = out.get(name)
        if child is not None:
            try:
                out[name] = plan.walk(child, parent, name, w)
            except SchemaError as exc:
                exc.path = (name, *exc.path)
                raise


class NArray(NPlan):
    """A list of one schema's items; None items kept in place, None results dropped."""

    def __init__(self, general: NormGeneral, item: NPlan) -> None:
        super().__init__(general)
        self.item = item

    def walk(self, value: object, parent: object, key: str | None, w: Walk) -> object:
        if type(value) is not list:
            return self.general(value, parent, key, w.ctx)
        items = cast("list[object]", value)
        item_plan = self.item
        out: list[object] = []
        index = -1
        try:
            for item in items:
                index += 1
                if item is None:
                    out.append(None)
                    continue
                result = item_plan.walk(item, parent, key, w)
                if result is not None:
                    out.append(result)
        except SchemaError as exc:
            exc.path = (index, *exc.path)
            raise
        return FrozenList(out)


class NObject(NPlan):
    """A dict with named members normalized (the rest kept, frozen)."""

    def __init__(self, general: NormGeneral) -> None:
        super().__init__(general)
        self.fields: list[tuple[str, NPlan]] = []

    def walk(self, value: object, parent: object, key: str | None, w: Walk) -> object:
        if type(value) is not dict:
            return self.general(value, parent, key, w.ctx)
        src = cast("dict[str, object]", value)
        out = src.copy()
        _walk_members(self.fields, out, value, w)
        if _has_containers(out):
            freeze_members(out)
        return FrozenDict(out)


# ----- denormalize -----------------------------------------------------------------------------
class Seen:
    """One entity plan's table lookup in an untracked read, and the instances it built there by pk."""

    def __init__(self, get: Lookup) -> None:
        self.get = get
        self.objs: dict[str, object] = {}


def _stable(table: object) -> bool:
    """Whether `table` gives the same answer to the same key all through a read (a dict or a PMap)."""
    return type(table) is dict or isinstance(table, PMap)


class Once:
    """One untracked read (`denormalize()`): its tables, instances and depth, read natively.

    Instances built here are kept by pk per plan (`Seen`; a stored table, unlike other
    mappings, answers a pk with the same record all through the read), and the depth here;
    both are handed to the `Unvisit` (its instance cache, its depth) before each call out
    to the general engine, so it finds every instance built so far. Once it has run
    (`mixed`), a pk not built here is looked up in that cache too.
    """

    def __init__(self, unvisit: Unvisit) -> None:
        self.unvisit = unvisit
        self.entities: Mapping[str, Mapping[str, object]] = unvisit.entities
        self.cache: InstanceCache = unvisit.cache
        self.depth: int = unvisit.depth
        self.seen: dict[DEntity, Seen | None] = {}
        self.stable = _stable(self.entities)
        self.mixed = False

    def seen_by(self, plan: DEntity) -> Seen | None:
        """What `plan` built in this read; None when its table is some other mapping (the general engine reads it)."""
        seen = self.seen.get(plan, _MISSING)
        if seen is not _MISSING:
            return cast("Seen | None", seen)
        table = self.entities.get(plan.key)
        made = None
        if table is None:
            made = Seen(None)
        elif self.stable and _stable(table):
            made = Seen(table.get)
        self.seen[plan] = made
        return made

    def out(self, general: DenormGeneral, value: object) -> object:
        """`value` by a node's general method, at this read's depth, with every instance built so far cached."""
        self.flush()
        self.mixed = True
        unvisit = self.unvisit
        unvisit.depth = self.depth
        return general(value, unvisit)

    def flush(self) -> None:
        """Move the instances built here into the `Unvisit`'s cache (as an untracked read caches them)."""
        cache = self.cache
        for plan, seen in self.seen.items():
            if seen is not None and seen.objs:
                slots = plan.slots_of(cache)
                get = cast("Callable[[str], object]", seen.get)  # a table that had these records
                for pk, obj in seen.objs.items():
                    slots[pk] = (get(pk), obj, ())
                seen.objs.clear()


class DPlan:
    """Denormalizes one schema node; this base hands every value to the node's general method.

    `denorm` is a tracked read (dependencies recorded on the `Unvisit`); `denorm_once` starts
    an untracked one, whose plans call each other by `once` with a `Once`.
    """

    def __init__(self, general: DenormGeneral) -> None:
        self.general = general

    def denorm(self, value: object, unvisit: Unvisit) -> object:
        return self.general(value, unvisit)

    def denorm_once(self, value: object, unvisit: Unvisit) -> object:
        """The entry point of an untracked read (the signature of a generated function)."""
        ctx = Once(unvisit)
        value = self.once(value, ctx)
        if ctx.mixed:  # the general engine may finish deferred entities from the cache
            ctx.flush()
        return value

    def once(self, value: object, ctx: Once) -> object:
        return ctx.out(self.general, value)


class DEntity(DPlan):
    """A plain entity class: the instance for a pk, cached per read (or per MemoCache) by its record.

    `read` is the tracked read (dependencies recorded); `read_once` the one-off read, whose cache is its own.
    """

    def __init__(self, cls: type[Entity]) -> None:
        super().__init__(cls.denormalize_value)
        self.cls = cls
        self.key: str = cls.key
        self.deep = bool(cls.schema)  # may defer descendants (deep data)
        self.defaults: dict[str, object] = dict(cls._defaults)
        self.mutable: list[str] = list(cls._mutable_defaults)
        self.fields: list[tuple[str, DPlan, bool]] = []  # name, plan, an invalid member invalidates
        self.names: list[str] = list(self.defaults)
        self.keys: list[str] = self.names  # see `same_fields`

    def same_fields(self, record: dict[str, object]) -> bool:
        """Whether `record` has exactly the fields, in their order (a leaf then shares it as `__dict__`)."""
        names = self.names
        if len(record) != len(names):
            return False
        keys = self.keys  # the key objects of a record that had them: a JSON parser shares its keys
        for i, name in enumerate(record):
            if name is not keys[i]:
                return self.same_names(record)
        return True

    def same_names(self, record: dict[str, object]) -> bool:
        """`same_fields` by comparing text; when true, `record`'s keys are the ones compared first next time."""
        names = self.names
        if not all(name == names[i] for i, name in enumerate(record)):  # a plain loop, compiled
            return False
        self.keys = list(record)
        return True

    def denorm(self, value: object, unvisit: Unvisit) -> object:
        if type(value) is not str:
            if type(value) is dict:  # an entity given inline, never normalized: built uncached
                return self.fill(_new(self.cls), cast("dict[str, object]", value), unvisit, None)
            return self.general(value, unvisit)
        return self.read(value, unvisit.entities.get(self.key), unvisit)

    def once(self, value: object, ctx: Once) -> object:
        if type(value) is not str:
            if type(value) is dict:
                return self.fill(_new(self.cls), cast("dict[str, object]", value), ctx.unvisit, ctx)
            return ctx.out(self.general, value)
        seen = ctx.seen_by(self)
        if seen is None:
            return ctx.out(self.general, value)
        return self.read_once(value, seen, ctx)

    def read(self, pk: str, table: Table, unvisit: Unvisit) -> object:
        """The instance for stored `pk` (`table`: this key's stored table, or None)."""
        if self.deep and unvisit.depth >= _DEPTH:
            return self.general(pk, unvisit)
        record = None if table is None else table.get(pk)
        if record is None or record is _INVALID:
            unvisit.deps.append((self.key, pk, table, record))
            return record
        if not isinstance(record, dict):  # not a record normalize wrote: the general engine
            return self.general(pk, unvisit)
        slots = self.slots_of(unvisit.cache)
        hit = slots.get(pk)
        if hit is not None:
            if not isinstance(hit, tuple):  # an instance sharing its record: its own entry, reading that record alone
                if hit.__dict__ is record:
                    unvisit.deps.append((self.key, pk, table, record))
                    return hit
            elif hit[0] is record:
                deps = hit[2]
                if type(deps) is not list:  # a cycle back to an instance being built, or deep data
                    return self.general(pk, unvisit)
                if not unvisit.checking or len(deps) == 1 or deps_valid(unvisit.entities, deps, 1):
                    unvisit.deps.extend(deps)
                    return hit[1]
        if not self.fields and self.same_fields(record):
            shared = self.share(record)
            slots[pk] = shared
            unvisit.deps.append((self.key, pk, table, record))
            return shared
        dep: Dep = (self.key, pk, table, record)
        if not self.fields:  # building it reads nothing else: its deps are this read alone
            obj = self.fill(_new(self.cls), record, unvisit, None)
            unvisit.deps.append(dep)
            alone: list[DepItem] = [dep]
            slots[pk] = (record, obj, alone)
            return obj
        outer = unvisit.deps
        mine: list[DepItem] = [dep]
        unvisit.deps = mine
        if not self.deep:
            obj = self.build_stored(slots, pk, record, unvisit)
            unvisit.deps = outer
            outer.extend(mine)
            slots[pk] = (record, obj, mine)
        else:
            queued = len(unvisit.deferred)
            obj = self.build_stored(slots, pk, record, unvisit)
            unvisit.deps = outer
            outer.extend(mine)
            slots[pk] = (record, obj, mine if len(unvisit.deferred) == queued else unvisit.deferred_token())
        cycles = unvisit.cycles
        if cycles and self.cls in cycles:  # a cycle came back to an instance of this class being built
            unvisit.close_cycle(self.cls, pk, mine)  # (see `Unvisit.close_cycle`)
        return obj

    def read_once(self, pk: str, seen: Seen, ctx: Once) -> object:
        """`read` in an untracked read (`seen`: this plan's table lookup and instances)."""
        if self.deep and ctx.depth >= _DEPTH:
            return ctx.out(self.general, pk)
        get = seen.get
        record = None if get is None else get(pk)
        if record is None or record is _INVALID:
            return record
        if not isinstance(record, dict):
            return ctx.out(self.general, pk)
        objs = seen.objs
        obj = objs.get(pk)
        if obj is not None:
            return obj  # built in this read (or being built: a cycle back to it)
        if ctx.mixed:
            hit = self.slots_of(ctx.cache).get(pk)
            if hit is not None:
                if not isinstance(hit, tuple):
                    if hit.__dict__ is record:
                        return hit
                elif hit[0] is record:
                    return ctx.out(self.general, pk) if hit[2] is None else hit[1]
        if not self.fields and self.same_fields(record):
            shared = objs[pk] = self.share(record)
            return shared
        obj = _new(self.cls)
        objs[pk] = obj
        if not self.fields:
            value = self.fill(obj, record, ctx.unvisit, ctx)
        elif self.deep:
            depth = ctx.depth
            ctx.depth = depth + 1
            value = self.fill(obj, record, ctx.unvisit, ctx)
            ctx.depth = depth
        else:
            value = self.fill(obj, record, ctx.unvisit, ctx)
        if value is not obj or ctx.mixed:  # invalid, or the general engine ran meanwhile (a flush)
            objs[pk] = value
            if ctx.mixed:
                self.slots_of(ctx.cache)[pk] = (record, value, ())
        return value

    def slots_of(self, cache: InstanceCache) -> Slots:
        """This class's instance-cache entries, by pk."""
        slots = cache.get(self.cls)
        if slots is None:
            slots = cache[self.cls] = {}
        return slots

    def share(self, record: dict[str, object]) -> Entity:
        """An instance whose `__dict__` is `record` (exactly its fields): its own cache entry (see `Hit`).

        A stored record is never changed and neither is an instance, so they share one dict.
        """
        obj: Entity = _new(self.cls)
        object.__setattr__(obj, "__dict__", record)
        return obj

    def build_stored(self, slots: Slots, pk: str, record: dict[str, object], unvisit: Unvisit) -> object:
        """A stored entity's instance, its members read one level deeper (a cycle back finds it in `slots`)."""
        obj = _new(self.cls)
        if not self.fields:
            return self.fill(obj, record, unvisit, None)
        slots[pk] = (record, obj, None)
        if not self.deep:  # members from annotations only: read at this depth, as the general engine does
            return self.fill(obj, record, unvisit, None)
        depth: int = unvisit.depth
        unvisit.depth = depth + 1
        filled = self.fill(obj, record, unvisit, None)
        unvisit.depth = depth
        return filled

    def fill(self, obj: object, record: dict[str, object], unvisit: Unvisit, ctx: Once | None) -> object:
        """`obj` with its fields: defaults, then `record`, nested members denormalized (or INVALID).

        `ctx`: the untracked read this is part of (None: a tracked read on `unvisit`).
        """
        # Every field stored: a plain copy in that order. Not tested again for a leaf: its reader shares
        # such a stored record instead, and for one given inline the merge below makes the same dict.
        if self.fields and self.same_fields(record):
            values = record.copy()
        else:
            values = self.defaults.copy()
            values.update(record)
            for name in self.mutable:
                if name not in record:  # a copy of its own, read-only: the instance is shared by every reader
                    values[name] = _freeze(_deepcopy(values[name]))
        for name, plan, truthy in self.fields:
            child = record.get(name)
            if child is not None:
                result = plan.denorm(child, unvisit) if ctx is None else plan.once(child, ctx)
                if result is _INVALID:
                    if truthy:
                        return _INVALID
                    result = None
                values[name] = result
        object.__setattr__(obj, "__dict__", values)  # mypyc: a direct generic setattr (no call)
        return obj


class DArray(DPlan):
    """A list of one schema's items; missing and deleted items dropped, None items kept."""

    def __init__(self, general: DenormGeneral, item: DPlan) -> None:
        super().__init__(general)
        self.item = item
        self.entity: DEntity | None = item if isinstance(item, DEntity) else None

    def denorm(self, value: object, unvisit: Unvisit) -> object:
        if not isinstance(value, list):  # iterated as the general engine does
            return self.general(value, unvisit)
        items: list[object] = value
        entity = self.entity
        if entity is not None:
            leaf = not entity.fields and not entity.deep  # (fields are filled after __init__)
            if leaf and len(items) >= RUN_MIN:
                return self.leaves(items, entity, unvisit)
            return self.entities(items, entity, unvisit)
        item_plan = self.item
        out: list[object] = []
        for item in items:
            if item is None:
                out.append(None)
                continue
            result = item_plan.denorm(item, unvisit)
            if result is not None and result is not _INVALID:
                out.append(result)
        return _FrozenList(out)

    def once(self, value: object, ctx: Once) -> object:
        if not isinstance(value, list):
            return ctx.out(self.general, value)
        items: list[object] = value
        entity = self.entity
        if entity is not None:
            return self.entities_once(items, entity, ctx)
        item_plan = self.item
        out: list[object] = []
        for item in items:
            if item is None:
                out.append(None)
                continue
            result = item_plan.once(item, ctx)
            if result is not None and result is not _INVALID:
                out.append(result)
        return _FrozenList(out)

    def leaves(self, items: list[object], entity: DEntity, unvisit: Unvisit) -> list[object]:
        """Items of a plain entity class without nested members, in a tracked read: consecutive reads of
        its table recorded as one `DepRun`; an item needing anything else goes through `entity.read`."""
        table = unvisit.entities.get(entity.key)
        slots = entity.slots_of(unvisit.cache)
        deps = unvisit.deps
        out: list[object] = []
        pks: list[str] = []
        records: list[object] = []
        at = -1  # len(deps) just after the current run was appended (another dep since: a new run)
        for item in items:
            if item is None:
                out.append(None)
                continue
            if type(item) is not str:
                result = entity.denorm(item, unvisit)
            else:
                pk: str = item
                record = None if table is None else table.get(pk)
                result = record
                in_run = True
                if record is not None and record is not _INVALID:
                    hit = slots.get(pk)
                    if hit is not None and not isinstance(hit, tuple) and hit.__dict__ is record:
                        result = hit
                    elif not isinstance(hit, tuple) and type(record) is dict and entity.same_fields(record):
                        result = entity.share(cast("dict[str, object]", record))  # none cached (or a stale instance)
                        slots[pk] = result
                    else:
                        result = entity.read(pk, table, unvisit)  # records its own dep
                        in_run = False
                if in_run:
                    if len(deps) != at:
                        run = _DepRun(entity.key, table)
                        pks = run.pks
                        records = run.records
                        deps.append(run)
                        at = len(deps)
                    pks.append(pk)
                    records.append(record)
            if result is not None and result is not _INVALID:
                out.append(result)
        return _FrozenList(out)

    def entities(self, items: list[object], entity: DEntity, unvisit: Unvisit) -> list[object]:
        """Items of one plain entity class: the table looked up once for the whole list."""
        table = unvisit.entities.get(entity.key)
        out: list[object] = []
        for item in items:
            if item is None:
                out.append(None)
                continue
            if type(item) is str:
                result = entity.read(item, table, unvisit)
            else:
                result = entity.denorm(item, unvisit)
            if result is not None and result is not _INVALID:
                out.append(result)
        return _FrozenList(out)

    def entities_once(self, items: list[object], entity: DEntity, ctx: Once) -> object:
        """`entities` in an untracked read."""
        seen = ctx.seen_by(entity)
        if seen is None:
            return ctx.out(self.general, items)
        out: list[object] = []
        for item in items:
            if item is None:
                out.append(None)
                continue
            if type(item) is str:
                result = entity.read_once(item, seen, ctx)
            else:
                result = entity.once(item, ctx)
            if result is not None and result is not _INVALID:
                out.append(result)
        return _FrozenList(out)


class DObject(DPlan):
    """A dict with named members denormalized; an invalid member invalidates the whole."""

    def __init__(self, general: DenormGeneral) -> None:
        super().__init__(general)
        self.fields: list[tuple[str, DPlan]] = []

    def denorm(self, value: object, unvisit: Unvisit) -> object:
        if type(value) is not _FROZEN_DICT and type(value) is not dict:
            return self.general(value, unvisit)
        return self.members(cast("dict[str, object]", value), unvisit, None)

    def once(self, value: object, ctx: Once) -> object:
        if type(value) is not _FROZEN_DICT and type(value) is not dict:
            return ctx.out(self.general, value)
        return self.members(cast("dict[str, object]", value), ctx.unvisit, ctx)

    def members(self, src: dict[str, object], unvisit: Unvisit, ctx: Once | None) -> object:
        """A plain copy of `src` with each member read by its plan (`ctx` as for `DEntity.fill`)."""
        out = dict(src)
        for name, plan in self.fields:
            child = out.get(name)
            if child is not None:
                result = plan.denorm(child, unvisit) if ctx is None else plan.once(child, ctx)
                if result is _INVALID:
                    return _INVALID
                out[name] = result
        return _FROZEN_DICT(out)


# ----- re-checking a cached instance ---------------------------------------------------------
def deps_valid(entities: Mapping[str, Mapping[str, object]], deps: list[DepItem], start: int) -> bool:
    """True when every recorded read (key, pk, table, record) would read the same record now."""
    get = entities.get
    for i in range(start, len(deps)):
        dep = deps[i]
        if type(dep) is not tuple:  # a DepRun
            if not cast("DepRun", dep).valid(entities):
                return False
            continue
        current = get(dep[0])
        if current is dep[2]:
            continue
        if (None if current is None else current.get(dep[1])) is not dep[3]:
            return False
    return True
