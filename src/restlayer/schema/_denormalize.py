"""`denormalize()`: rebuild nested values and Entity instances from normalized data.

One `Unvisit` object serves one read. It records every record it reads
(`deps`), so `MemoCache` can tell later whether the same read would still give
the same answer, and keeps an entity-instance cache so each entity is built
once per read (or once per store version, when the cache belongs to a MemoCache).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import is_
from typing import TYPE_CHECKING, Any, TypeAlias, cast, overload

from restlayer._gc import no_gc
from restlayer._typing import E, T
from restlayer.schema._base import INVALID, MAX_DEPTH, InvalidType, Node, Schema, compile_schema, index_text

if TYPE_CHECKING:
    from restlayer.schema._collection import Collection
    from restlayer.schema._entity import Entity

# A dependency: (entity key, pk, the table object read, the record read); None when missing.
Dep: TypeAlias = "tuple[str, str, Mapping[str, object] | None, object]"
_IN_PROGRESS = object()


class DepRun:
    """Reads of one table in a row, recorded as one object instead of a `Dep` tuple per read.

    A list of entities without nested members records its reads so: its deps cost two
    list slots per entity. Filled by the loop that made it, never changed afterwards.
    """

    __slots__ = ("key", "pks", "records", "table")

    def __init__(self, key: str, table: Mapping[str, object] | None) -> None:
        self.key = key
        self.table = table
        self.pks: list[str] = []
        self.records: list[object] = []

    def valid(self, entities: Mapping[str, Mapping[str, object]]) -> bool:
        """Whether each pk would read the same record from `entities` now."""
        current = entities.get(self.key)
        if current is self.table:
            return True
        if current is None:
            return all(record is None for record in self.records)
        return all(map(is_, map(current.get, self.pks), self.records))

    def expand(self) -> list[Dep]:
        """The reads as `Dep` tuples."""
        key, table = self.key, self.table
        return [(key, pk, table, record) for pk, record in zip(self.pks, self.records, strict=True)]

    def __repr__(self) -> str:
        return f"DepRun({self.key!r}, {len(self.pks)} reads)"


#: What `Unvisit.deps` holds: single reads, and runs of reads of one table.
DepItem: TypeAlias = "Dep | DepRun"


def expand_deps(deps: Iterable[DepItem]) -> list[Dep]:
    """`deps` with every run written out as single reads, in order."""
    out: list[Dep] = []
    for dep in deps:
        if isinstance(dep, DepRun):
            out.extend(dep.expand())
        else:
            out.append(dep)
    return out


class _ReadToken:
    """Stands for the deps of an entity whose build deferred a descendant (deep data).

    Its deps are incomplete, so its cache entry is trusted only by the read that made it.
    """

    __slots__ = ()


#: An instance-cache entry: (record read, value built, its deps: None while it is being built,
#: a `_ReadToken` when incomplete); a stored list's entry also holds its item schema. An instance
#: whose `__dict__` is the stored record itself (no nested entities: it depends on that record
#: alone) is its own entry, valid while `instance.__dict__ is record`.
#: An untracked read's entries record no deps: `()`.
EntryDeps: TypeAlias = "list[DepItem] | tuple[()] | _ReadToken | None"
Hit: TypeAlias = "tuple[object, object, EntryDeps] | tuple[object, object, list[DepItem] | _ReadToken, object] | Entity"
#: An instance to fill once the walk has unwound: (class, pk, record, table read, instance).
Deferred: TypeAlias = "tuple[type[Entity], str, Mapping[str, object], Mapping[str, object] | None, Entity]"
#: The instances of one entity class (or the lists of one collection key) by pk.
Slots: TypeAlias = "dict[str, Hit]"
#: The instance cache: entity class (or collection key) -> pk -> entry; two levels, so no key tuple per entity.
InstanceCache: TypeAlias = "dict[type[Entity] | str, Slots]"


class Unvisit:
    """The state of one denormalization: tables read, args, instance cache, dependencies."""

    __slots__ = (
        "args",
        "cache",
        "checking",
        "cycles",
        "deferred",
        "deps",
        "depth",
        "entities",
        "indexes",
        "owners",
        "token",
    )

    def __init__(
        self,
        entities: Mapping[str, Mapping[str, Any]],  # key -> pk -> stored record (JSON the schemas read)
        args: tuple[object, ...] = (),
        *,
        cache: InstanceCache | None = None,
        checking: bool = False,
        indexes: Mapping[str, Mapping[str, Mapping[str, object]]] | None = None,
    ) -> None:
        self.entities = entities
        self.indexes = indexes
        self.args = args
        self.cache: InstanceCache = {} if cache is None else cache
        self.checking = checking  # True when `cache` outlives this read and must be validated
        self.deps: list[DepItem] = []
        # Depth guard (see MAX_DEPTH): deeper entities are built later from `deferred`.
        self.depth = 0
        # Entities to fill once the walk has unwound (a list once used)
        self.deferred: list[Deferred] | tuple[()] = ()
        self.token: _ReadToken | None = None
        # Entries whose deps were not known when read (see `came_back`): owner -> pk -> the deps recorded there.
        self.cycles: dict[type[Entity] | str, dict[str, list[Dep]]] = {}
        # The cache's owners by entity key, and how many owners the cache had (see `_share_deps`).
        self.owners: tuple[int, dict[str, list[type[Entity] | str]]] | None = None

    def __call__(self, node: Node | None, value: object) -> object:
        """Denormalize `value` by compiled `node`."""
        if node is None or value is None:
            return value
        result = node.denormalize_value(value, self)
        if self.deferred:
            self.finish_deferred()
        return result

    def read(self, key: str, pk: str) -> object:
        """The stored record for key/pk (None when missing), recorded as a dependency."""
        table = self.entities.get(key)
        record = None if table is None else table.get(pk)
        self.deps.append((key, pk, table, record))
        return record

    def entity(self, cls: type[Entity], pk: str) -> object:
        """The instance of entity class `cls` stored under `pk` (None missing, INVALID deleted)."""
        key = cls.key
        table = self.entities.get(key)
        record: Mapping[str, object] | InvalidType | None = None if table is None else table.get(pk)
        if record is None or record is INVALID:
            self.deps.append((key, pk, table, record))
            return record
        slots = self.slots(cls)
        hit = slots.get(pk)
        if hit is not None and not isinstance(hit, tuple):
            if hit.__dict__ is record:  # an instance sharing its record: it read that record alone
                self.deps.append((key, pk, table, record))
                return hit
        elif hit is not None and hit[0] is record:
            deps = hit[2]
            if deps is None:  # a cycle back to an entity being built right now
                came_back: Dep = (key, pk, table, record)
                self.deps.append(came_back)  # what embeds it depends on it too (all of it: see `close_cycle`)
                if self.checking:
                    self.came_back(cls, pk, came_back)
                return hit[1] if hit[1] is not _IN_PROGRESS else None
            if isinstance(deps, _ReadToken):
                if deps is self.token:  # deep data built earlier in this same read
                    read: Dep = (key, pk, table, record)
                    self.deps.append(read)
                    if self.checking:  # its deps are incomplete, so are the reader's (see `close_cycles`)
                        self.came_back(cls, pk, read)
                    return hit[1]
            elif not self.checking or len(deps) == 1 or deps_valid(self.entities, deps, 1):
                self.deps.extend(deps)
                return hit[1]
        outer = self.deps
        mine: list[DepItem] = [(key, pk, table, record)]
        self.deps = mine
        started = cls.start_build(record)
        queued = len(self.deferred)
        if started is INVALID:
            value: object = INVALID
        elif self.depth >= MAX_DEPTH and started is not None and cls.nested():
            # Deep data: an instance that can be filled later, with nested members to read, waits.
            self.deps = outer
            return self._defer(cls, pk, record, table, started)
        else:
            # Held while its members are read, so a cycle back to it finds it.
            slots[pk] = (record, _IN_PROGRESS if started is None else started, None)
            self.depth += 1
            value = cls.finish_build(started, record, self)
            self.depth -= 1
        self.deps = outer
        outer.extend(mine)
        slots[pk] = (record, value, mine if len(self.deferred) == queued else self.deferred_token())
        if self.cycles and cls in self.cycles:
            self.close_cycle(cls, pk, mine)
        return value

    def came_back(self, owner: type[Entity] | str, pk: str, dep: Dep) -> None:
        """Note that a read recorded `dep` for entity class (or collection key) `owner`'s `pk` while its deps
        are not known: it is still being built (a cycle back to it, or it waits as deep data), or its entry holds
        this read's token (deep data read earlier in this read).
        """
        roots = self.cycles.get(owner)
        if roots is None:
            roots = self.cycles[owner] = {}
        came = roots.get(pk)
        if came is None:
            roots[pk] = [dep]
        else:
            came.append(dep)

    def close_cycle(self, cls: type[Entity], pk: str, mine: list[DepItem]) -> None:
        """Give the entries built inside the cycle root `cls`/`pk` that came back to it its deps, `mine`.

        Called as the root is cached (once `mine` is complete): coming back to it recorded its record
        alone, so the entries on the way back (which embed it) would stay cached when something it reads
        changes. Closed at once, a later read of them, even from outside the cycle, takes all of it. Its
        ancestors, still being built, are left alone: their deps will hold all of `mine`.
        """
        roots = self.cycles.get(cls)
        came = None if roots is None else roots.pop(pk, None)
        if came is None:
            return
        if not roots:
            del self.cycles[cls]
        entry = self.slots(cls).get(pk)
        assert isinstance(entry, tuple)
        self._share_deps(mine, {id(dep) for dep in came}, entry[2])

    def close_cycles(self) -> None:
        """At the end of a read, make each entry that read one `close_cycle` left open trusted by this read only.

        That one was deferred (deep data, filled after the walk) or holds this read's token (its deps are
        incomplete), and what read it may lie anywhere in the read, so it is found among all the read's deps.
        """
        marks = {id(dep) for roots in self.cycles.values() for came in roots.values() for dep in came}
        self.cycles = {}
        self._share_deps(self.deps, marks, self.deferred_token())

    def _share_deps(self, full: list[DepItem], marks: set[int], deps: EntryDeps) -> None:
        """Set to `deps` the deps of each entry read in `full` whose own deps hold a `marks` dep."""
        owners = self.owners
        if owners is None or owners[0] != len(self.cache):  # built once, again only when an owner was added
            by_key: dict[str, list[type[Entity] | str]] = {}
            for owner in self.cache:
                by_key.setdefault(owner if isinstance(owner, str) else owner.key, []).append(owner)
            owners = self.owners = (len(self.cache), by_key)
        by_key, cache = owners[1], self.cache
        for dep in full:
            if type(dep) is not tuple:  # a run of leaf reads: no cycle passes through those
                continue
            for owner in by_key.get(dep[0], ()):
                slots = cache[owner]
                pk = dep[1]
                entry = slots.get(pk)
                if type(entry) is not tuple:  # missing, or an instance sharing its record (it read nothing else)
                    continue
                own = entry[2]
                if type(own) is list and own is not deps and not marks.isdisjoint(map(id, own)):
                    slots[pk] = (entry[0], entry[1], deps, *entry[3:])  # a stored list's entry keeps its schema

    def abandon(self) -> None:
        """Forget what this read left half-done after it raised: an entry still being built (an empty or
        partly filled instance, its deps None), one holding this read's token (deep data never filled),
        and every entry that read one of those (it may embed that instance).

        Without this a later read took the half-built instance from the shared cache for a cycle back to
        it, or a finished entry embedding it as still valid: an empty `Todo()` or None instead of the error.
        """
        token = self.token
        broken: dict[str, set[str]] = {}
        for owner, slots in self.cache.items():
            dropped = [pk for pk, hit in slots.items() if type(hit) is tuple and (hit[2] is None or hit[2] is token)]
            for pk in dropped:
                del slots[pk]
            if dropped:
                broken.setdefault(owner if isinstance(owner, str) else owner.key, set()).update(dropped)
        if broken:
            for slots in self.cache.values():
                for pk in [pk for pk, hit in slots.items() if type(hit) is tuple and _reads_any(hit[2], broken)]:
                    del slots[pk]
        self.deps = []
        self.depth = 0
        self.deferred = ()
        self.cycles = {}

    def slots(self, owner: type[Entity] | str) -> Slots:
        """The cache entries of entity class (or collection key) `owner`, by pk."""
        slots = self.cache.get(owner)
        if slots is None:
            slots = self.cache[owner] = {}
        return slots

    def collection(self, coll: Collection[object], pk: str) -> object:
        """The list (or dict) stored for Collection `coll` under `pk` (None missing).

        Cached like entity instances, by the stored list and its item schema, so one
        stored list read at the top level and as a nested member is one object while
        nothing it holds changed.
        """
        key = coll.key
        table = self.entities.get(key)
        record: Any = None if table is None else table.get(pk)  # a stored list (or dict), as the node reads it
        if record is None or record is INVALID:
            self.deps.append((key, pk, table, record))
            return record
        item = coll.node.node
        slots = self.slots(key)
        hit = slots.get(pk)
        if isinstance(hit, tuple) and hit[0] is record and len(hit) == 4 and hit[3] is item:
            deps = hit[2]
            if type(deps) is list:
                if not self.checking or deps_valid(self.entities, deps, 1):
                    self.deps.extend(deps)
                    return hit[1]
            elif deps is self.token and self.checking:  # read earlier in this read, its deps incomplete
                read: Dep = (key, pk, table, record)
                self.deps.append(read)
                self.came_back(key, pk, read)  # so are the reader's (see `close_cycles`)
                return hit[1]
        outer = self.deps
        mine: list[DepItem] = [(key, pk, table, record)]
        self.deps = mine
        queued = len(self.deferred)
        value = coll.node.denormalize_value(record, self)
        self.deps = outer
        outer.extend(mine)
        if len(self.deferred) == queued:  # deep data deferred inside: its deps are incomplete, not cached
            slots[pk] = (record, value, mine, item)
        return value

    def build(self, cls: type[Entity], record: Mapping[str, object]) -> object:
        """An instance of entity class `cls` from a record that was never stored (so not cached); INVALID if invalid."""
        started = cls.start_build(record)
        return INVALID if started is INVALID else cls.finish_build(started, record, self)

    # ----- deep data ---------------------------------------------------------------------------
    def deferred_token(self) -> _ReadToken:
        """The token cached in place of the deps of an entity whose build deferred a descendant."""
        if self.token is None:
            self.token = _ReadToken()
        return self.token

    def _defer(
        self,
        cls: type[E],
        pk: str,
        record: Mapping[str, object],
        table: Mapping[str, object] | None,
        obj: E,
    ) -> E:
        """`obj` (from `start_build`), its fields filled once the current walk has unwound (deep data)."""
        self.deps.append((cls.key, pk, table, record))
        self.slots(cls)[pk] = (record, obj, None)
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
            mine: list[DepItem] = [(cls.key, pk, table, record)]
            self.deps = mine
            queued = len(queue)
            cls.finish_build(obj, record, self, strict=False)
            top.extend(mine)
            self.slots(cls)[pk] = (record, obj, mine if len(queue) == queued else self.deferred_token())
        self.deps = top
        queue.clear()

    def lookup_index(self, cls: type[Entity], fields: Mapping[str, object]) -> str | None:
        """Resolve a pk through `cls.indexes` from the given field values."""
        if not cls.indexes or self.indexes is None:
            return None
        per_key = self.indexes.get(cls.key)
        if per_key is None:
            return None
        for field in cls.indexes:
            text = index_text(fields.get(field))
            if text is None:
                continue
            table = per_key.get(field)
            pk = None if table is None else table.get(text)
            if isinstance(pk, str):  # not missing, not INVALID (a value no longer indexed)
                return pk
        return None


def _reads_any(deps: EntryDeps, broken: Mapping[str, set[str]]) -> bool:
    """Whether the entry deps `deps` record a read of an entity key -> pks in `broken`."""
    if type(deps) is not list:
        return False
    for dep in deps:
        if isinstance(dep, DepRun):
            pks = broken.get(dep.key)
            if pks and not pks.isdisjoint(dep.pks):
                return True
        else:
            pks = broken.get(dep[0])
            if pks and dep[1] in pks:
                return True
    return False


def deps_valid(entities: Mapping[str, Mapping[str, object]], deps: Sequence[DepItem], start: int = 0) -> bool:
    """True when every recorded read would read the same record from `entities` now."""
    get = entities.get
    for i in range(start, len(deps)):
        dep = deps[i]
        if dep.__class__ is not tuple:  # a run (cheaper to tell than isinstance: this runs per read)
            if not cast(DepRun, dep).valid(entities):
                return False
            continue
        key, pk, table, record = dep
        current = get(key)
        if current is table:
            continue
        if (None if current is None else current.get(pk)) is not record:
            return False
    return True


#: The entity tables `denormalize` reads: entity key -> pk -> record.
EntityTables: TypeAlias = "Mapping[str, Mapping[str, object]]"


# The result type follows the schema as `Controller.get`'s does; a schema no overload types reads as Any.
@overload
def denormalize(schema: type[E], input: object, entities: EntityTables, args: Sequence[object] = ()) -> E | None: ...
@overload
def denormalize(schema: Schema[T], input: object, entities: EntityTables, args: Sequence[object] = ()) -> T | None: ...
@overload
def denormalize(
    schema: list[type[E]], input: object, entities: EntityTables, args: Sequence[object] = ()
) -> list[E] | None: ...
@overload
def denormalize(
    schema: list[Schema[T]], input: object, entities: EntityTables, args: Sequence[object] = ()
) -> list[T] | None: ...
@overload
def denormalize(
    schema: Mapping[str, object], input: object, entities: EntityTables, args: Sequence[object] = ()
) -> dict[str, Any] | None: ...
@overload
def denormalize(schema: object, input: object, entities: EntityTables, args: Sequence[object] = ()) -> Any: ...
@no_gc
def denormalize(
    schema: object, input: object, entities: EntityTables, args: Sequence[object] = ()
) -> Any:  # the data the schema describes, for the caller to read
    """Rebuild the value of `input` by `schema` from `entities`; None when it is invalid."""
    from restlayer.schema._fast import denormalize_with

    value = denormalize_with(Unvisit(entities, tuple(args)), compile_schema(schema), input, tracked=False)
    return None if value is INVALID else value
