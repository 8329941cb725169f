"""`MemoCache`: denormalize with referential stability.

The same inputs give the *same object* as long as every record the read
touched is still the same object in the store; an entity instance is shared by
every read that reaches it. Because store tables are persistent maps, an
unchanged table is the same object, so most checks stop at one identity test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias, overload

from restlayer._gc import pause as gc_pause
from restlayer._gc import resume as gc_resume
from restlayer._typing import E, T
from restlayer.errors import RestLayerError
from restlayer.schema._base import INVALID, Node, Schema, compile_schema, schema_name
from restlayer.schema._containers import Object
from restlayer.schema._denormalize import Dep, DepItem, Hit, InstanceCache, Unvisit, expand_deps
from restlayer.schema._fast import Group, denormalize_with, dep_groups, groups_valid
from restlayer.schema._normalize import _tables_of

_MAX_RESULTS = 4096
# Stored tables as a reader sees them: entity key -> pk -> record.
Tables: TypeAlias = Mapping[str, Mapping[str, object]]
# A read's deps grouped by table: (key, table read, pks, records read).
Groups: TypeAlias = "list[Group]"


class Denormalized:
    """A read's outcome: `data`, whether it was `invalid`, whether a query `found` anything."""

    __slots__ = ("_deps", "_groups", "data", "found", "invalid")

    def __init__(
        self, data: Any, invalid: bool, found: bool, deps: list[DepItem]
    ) -> None:  # data: what the schema reads
        self.data = data
        self.invalid = invalid
        self.found = found
        self._deps = deps  # as recorded: runs of one table's reads kept compact
        self._groups: Groups | None = None

    @property
    def deps(self) -> list[Dep]:
        """Every record the read touched, in order: (entity key, pk, table read, record read)."""
        return expand_deps(self._deps)

    def unchanged_in(self, entities: Tables) -> bool:
        """Whether every record this read touched is still the same object in `entities` (deps grouped once)."""
        if self._groups is None:
            self._groups = dep_groups(self._deps)
        return groups_valid(entities, self._groups)

    def as_not_found(self) -> Denormalized:
        """The same read, counted as not found (a dict query with a missing member)."""
        return Denormalized(self.data, self.invalid, False, self._deps)

    @property
    def refs(self) -> list[tuple[str, str]]:
        """Every (entity key, pk) the read looked at, in order (duplicates removed)."""
        return list(dict.fromkeys((key, pk) for key, pk, _, _ in self.deps))

    def __repr__(self) -> str:
        return f"Denormalized(data={self.data!r}, invalid={self.invalid}, found={self.found})"


class _Entry:
    """A memoized read; holding `node` and `input` keeps their ids from being reused while it lives."""

    __slots__ = ("args", "entities", "input", "node", "result")

    def __init__(
        self, node: Node | None, input: object, args: tuple[object, ...], entities: Tables, result: Denormalized
    ):
        self.node = node
        self.input = input
        self.args = args
        self.entities = entities
        self.result = result

    def valid_for(self, entities: Tables) -> bool:
        """Whether every record the read touched is still the one in `entities`."""
        return self.result.unchanged_in(entities)


def _current(hit: Hit, record: object) -> bool:
    """Whether cache entry `hit` was built from `record` (a bare instance is its record's own entry)."""
    return hit[0] is record if isinstance(hit, tuple) else hit.__dict__ is record


class MemoCache:
    """Memoized denormalization and store queries (one per store, shared by every reader)."""

    def __init__(self) -> None:
        # Entity instances by class, then pk: two classes sharing one `key` never share instances.
        self._entities: InstanceCache = {}
        # By node id and input: a scalar by value and type (1, 1.0 and True are equal but name other
        # pks), a container by id. The node and input are held by the entry, so their ids stay theirs.
        self._results: dict[tuple[object, ...], _Entry] = {}
        # By node id: the node, and the query keys of its recent argument tuples.
        self._queries: dict[int, tuple[Node, list[tuple[tuple[object, ...], object]]]] = {}

    # The result types follow the schema as `Controller.get`'s do; a schema no overload types reads as Any.
    @overload
    def denormalize(
        self, schema: type[E], input: object, entities: Tables, args: Sequence[object] = ()
    ) -> E | None: ...
    @overload
    def denormalize(
        self, schema: Schema[T], input: object, entities: Tables, args: Sequence[object] = ()
    ) -> T | None: ...
    @overload
    def denormalize(
        self, schema: list[type[E]], input: object, entities: Tables, args: Sequence[object] = ()
    ) -> list[E] | None: ...
    @overload
    def denormalize(
        self, schema: list[Schema[T]], input: object, entities: Tables, args: Sequence[object] = ()
    ) -> list[T] | None: ...
    @overload
    def denormalize(
        self, schema: Mapping[str, object], input: object, entities: Tables, args: Sequence[object] = ()
    ) -> dict[str, Any] | None: ...
    @overload
    def denormalize(self, schema: object, input: object, entities: Tables, args: Sequence[object] = ()) -> Any: ...
    def denormalize(
        self, schema: object, input: object, entities: Tables, args: Sequence[object] = ()
    ) -> Any:  # the data the schema describes, for the caller to read
        """Like `denormalize()`, returning the same object while its data is unchanged."""
        return self.denormalize_detail(schema, input, entities, args).data

    def denormalize_detail(
        self, schema: object, input: object, entities: Tables, args: Sequence[object] = ()
    ) -> Denormalized:
        """`denormalize` plus validity and the records read (for expiry and garbage collection)."""
        node = compile_schema(schema)
        args = tuple(args)
        hashable = input is None or isinstance(input, (str, int, float))
        slot = (id(node), input.__class__, input) if hashable else (id(node), id(input))
        entry = self._results.get(slot)
        if (
            entry is not None
            and entry.node is node
            and (hashable or entry.input is input)
            and entry.args == args
            and (entry.entities is entities or entry.valid_for(entities))
        ):
            entry.entities = entities
            return entry.result
        unvisit = Unvisit(entities, args, cache=self._entities, checking=True)
        gc_pause()  # a hit above allocates next to nothing; a rebuild is a bulk call
        try:
            value = denormalize_with(unvisit, node, input)
            if unvisit.cycles:
                unvisit.close_cycles()
        finally:
            gc_resume()
        invalid = value is INVALID
        result = Denormalized(None if invalid else value, invalid, True, unvisit.deps)
        if len(self._results) >= _MAX_RESULTS:
            self._results.pop(next(iter(self._results)))
        self._results[slot] = _Entry(node, input, args, entities, result)
        return result

    def forget(self, schema: object, input: object) -> None:
        """Drop the memoized read of `input` (a result the store no longer holds).

        Only time and memory are at stake: the entry keeps `input`, every instance it built
        and the tables it read alive until the bounded cache evicts it, and a replaced pk's
        entry would only be checked and found stale. Reading `input` again rebuilds it, with
        the same instances for records that did not change (they are cached by pk).
        """
        node = compile_schema(schema)
        hashable = input is None or isinstance(input, (str, int, float))
        slot = (id(node), input.__class__, input) if hashable else (id(node), id(input))
        entry = self._results.get(slot)
        if entry is not None and entry.node is node and (hashable or entry.input is input):
            del self._results[slot]

    @overload
    def query(self, schema: type[E], args: Sequence[object], state: object) -> E | None: ...
    @overload
    def query(self, schema: Schema[T], args: Sequence[object], state: object) -> T | None: ...
    @overload
    def query(self, schema: list[type[E]], args: Sequence[object], state: object) -> list[E] | None: ...
    @overload
    def query(self, schema: list[Schema[T]], args: Sequence[object], state: object) -> list[T] | None: ...
    @overload
    def query(self, schema: Mapping[str, object], args: Sequence[object], state: object) -> dict[str, Any] | None: ...
    @overload
    def query(self, schema: object, args: Sequence[object], state: object) -> Any: ...
    def query(self, schema: object, args: Sequence[object], state: object) -> Any:
        """Answer a read of `schema` from the store alone (Query, All, Entity, Collection, dict)."""
        return self.query_detail(schema, args, state).data

    def query_detail(self, schema: object, args: Sequence[object], state: object) -> Denormalized:
        """`query` plus whether anything was found and what was read."""
        node = compile_schema(schema)
        args = tuple(args)
        entities, indexes, _ = _tables_of(state)
        if node is None:
            return Denormalized(None, False, False, [])
        probe = Unvisit(entities, args, indexes=indexes)
        key = _query_key(node, args, probe)
        if key is None:
            return Denormalized(None, False, False, probe.deps)
        if key is INVALID:
            return Denormalized(None, True, True, probe.deps)
        key = self._stable_query_key(node, args, key)
        result = self.denormalize_detail(node, key, entities, args)
        if isinstance(node, Object) and isinstance(key, Mapping) and not node.found_all(key):
            # A dict with a missing member: its data is shown, but the read counts as not found.
            return result.as_not_found()
        return result

    def _stable_query_key(self, node: Node, args: tuple[object, ...], key: object) -> object:
        """Reuse the previous query-key object when equal, so the result memo can hit."""
        if isinstance(key, (str, int, float)):
            return key
        held = self._queries.get(id(node))
        if held is None or held[0] is not node:  # keyed by id: the node is held so its id stays its own
            if len(self._queries) >= _MAX_RESULTS:
                self._queries.pop(next(iter(self._queries)))
            held = self._queries[id(node)] = (node, [])
        known = held[1]
        for i, (known_args, known_key) in enumerate(known):
            if known_args == args:
                if known_key == key:
                    return known_key
                known[i] = (args, key)
                return key
        known.append((args, key))
        if len(known) > 64:
            del known[0]
        return key

    def clear(self) -> None:
        """Forget everything (after a store reset)."""
        self._entities.clear()
        self._results.clear()
        self._queries.clear()

    def prune(self, entities: Tables) -> None:
        """Drop what `entities` no longer backs: instances whose record changed or went, reads that did.

        What stays keeps its identity (a sweep that removed other data changes no reader's objects),
        and the cache's tables are rebuilt, so the memory of what went is returned.
        """
        kept: InstanceCache = {}
        for owner, slots in self._entities.items():
            # keyed by entity class (instances) or by collection key (stored lists)
            table = entities.get(owner if isinstance(owner, str) else owner.key)
            if table is None:
                continue
            get = table.get
            current = {pk: hit for pk, hit in slots.items() if _current(hit, get(pk))}
            if current:
                kept[owner] = current
        self._entities = kept
        self._results = {slot: entry for slot, entry in self._results.items() if entry.valid_for(entities)}
        self._queries = dict(self._queries)


def _query_key(node: Node, args: tuple[object, ...], probe: Unvisit) -> object:
    """`node.query_key(args, probe)`: the input a read of the store denormalizes.

    It runs the schema's user functions (a Collection's `args_key`, a page's cursor remover, a
    Union's attribute function): any failure but a RestLayerError becomes one naming the schema,
    the original as its cause, as a failure while denormalizing does, so reads (`ctrl.get`,
    `cache`, `dle`, `get_response`) raise what every other read error is.
    """
    try:
        return node.query_key(args, probe)
    except RestLayerError:
        raise
    except Exception as exc:
        raise RestLayerError(f"querying {schema_name(node)} raised {type(exc).__name__}: {exc}") from exc
