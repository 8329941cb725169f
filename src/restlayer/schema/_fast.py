"""Specialised normalize/denormalize functions generated once per compiled schema.

The general engine dispatches through a method call per node and per member
(`Entity.normalize_value`, `normalize_members`, `Normalizer.store`, ...). For
the common case, an entity class that keeps the default `process`, `pk`,
`validate` and `from_json` hooks, this module writes one plain Python function
per schema node with the member names, defaults and table key baked in, so an
entity costs a handful of dict operations. Anything unusual (a non-dict value,
an unusable pk, a record already stored, an overridden hook, a schema type it
does not know) is handed to the general engine's own method on the same
`Normalizer`/`Unvisit`, so both produce the same result, the same store and the
same errors; tests compare them on random data.

The generated functions recurse like the schema does; a chain deeper than the
interpreter's recursion limit raises `RecursionError`, and the entry points then
redo the whole call with the general engine.
"""

# pyright: reportPrivateUsage=false
# (the engine reads Entity's `_plain_*`/`_defaults` flags, which exist for it)
from __future__ import annotations

import copy
import importlib.util
import os
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from operator import is_
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeGuard, TypeVar, cast

from restlayer._pmap import changed_between
from restlayer._text import to_text
from restlayer.errors import RestLayerError, SchemaError
from restlayer.schema import _exec
from restlayer.schema._base import INVALID, MAX_DEPTH, Node
from restlayer.schema._containers import Array, Object
from restlayer.schema._denormalize import DepItem, DepRun, deps_valid
from restlayer.schema._entity import Entity
from restlayer.schema._frozen import CONTAINERS, FrozenDict, FrozenList, freeze, freeze_members

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Unvisit
    from restlayer.schema._normalize import Normalizer

#: A node's normalize function (generated, or an executor plan's `norm`): (value, parent, key, ctx) -> result.
NormFn: TypeAlias = "Callable[[object, object, str | None, Normalizer], object]"
#: A node's denormalize function: (stored value, the read's state) -> value (or INVALID).
DenormFn: TypeAlias = "Callable[[object, Unvisit], object]"
#: What a plan bakes in of one entity class: its schema, key and indexes (all reassignable).
_Stamp: TypeAlias = "tuple[Mapping[str, object], str, tuple[str, ...]]"
_F = TypeVar("_F")
#: A cached plan: the entity classes it bakes in, their stamps when it was made, and its function.
_Cached: TypeAlias = "tuple[tuple[type[Entity], ...], list[_Stamp], _F | None]"


class _Executor(Protocol):
    """What `_fast` builds plans from: the executor module (`_exec`, compiled or run from its source)."""

    @property
    def NPlan(self) -> type[_exec.NPlan]: ...
    @property
    def NEntity(self) -> type[_exec.NEntity]: ...
    @property
    def NArray(self) -> type[_exec.NArray]: ...
    @property
    def NObject(self) -> type[_exec.NObject]: ...
    @property
    def DPlan(self) -> type[_exec.DPlan]: ...
    @property
    def DEntity(self) -> type[_exec.DEntity]: ...
    @property
    def DArray(self) -> type[_exec.DArray]: ...
    @property
    def DObject(self) -> type[_exec.DObject]: ...


_enabled = True
_norm_plans: dict[Node | None, _Cached[NormFn]] = {}
_denorm_plans: dict[str, dict[Node | None, _Cached[DenormFn]]] = {"d": {}, "u": {}}
_MAX_PLANS = 1024

#: Whether plans run on the compiled executor (`_exec` built by mypyc) instead of generated
#: functions; RESTLAYER_PURE=1 keeps the pure-Python engine even when the compiled one is built.
COMPILED = _exec.compiled() and os.environ.get("RESTLAYER_PURE", "") in ("", "0")
_executor: _Executor = _exec  # the executor module plans are built from (see `use_engine`)


def engine() -> str:
    """Which engine runs plans: "compiled" (the mypyc-built executor), "pure" (generated Python), or
    "executor" (the executor's Python source, interpreted: tests check and cover it without a compiler)."""
    if not COMPILED:
        return "pure"
    return "compiled" if _executor is _exec and _exec.compiled() else "executor"


def use_engine(name: str) -> None:
    """Run plans on the "compiled", "pure" or "executor" engine from now on (the test suite runs each)."""
    global COMPILED, _executor
    if name not in ("compiled", "pure", "executor"):
        raise ValueError(f"unknown engine {name!r}: 'compiled', 'pure' or 'executor'")
    if name == "compiled" and not _exec.compiled():
        raise RuntimeError("the compiled engine is not built here (python3 dev.py setup builds it)")
    COMPILED = name != "pure"  # pyright: ignore[reportConstantRedefinition]  # the switch tests flip
    _executor = _exec_source() if name == "executor" else _exec
    _norm_plans.clear()
    for plans in _denorm_plans.values():
        plans.clear()


def _exec_source() -> _Executor:
    """The executor module run from its Python source (a separate module object when `_exec` is compiled)."""
    if not _exec.compiled():
        return _exec
    path = Path(__file__).with_name("_exec.py")
    spec = importlib.util.spec_from_file_location("restlayer.schema._exec_source", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return cast("_Executor", module)  # the same classes as `_exec`'s, run from source


@contextmanager
def disabled() -> Generator[None, None, None]:
    """Run the block with the general engine only (tests compare both engines)."""
    global _enabled
    was, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = was


def _plain_entity(node: object) -> TypeGuard[type[Entity]]:
    """An Entity class whose hooks are all the defaults, so its work can be written out."""
    return (
        isinstance(node, type)
        and issubclass(node, Entity)
        and node._plain_pk
        and node._plain_build
        and node._plain_store
        and not node._checks_valid
        and not node.indexes
        and node.process.__func__ is Entity.process.__func__  # type: ignore[attr-defined]
        and node.normalize_value.__func__ is Entity.normalize_value.__func__  # type: ignore[attr-defined]
        and node.denormalize_value.__func__ is Entity.denormalize_value.__func__  # type: ignore[attr-defined]
    )


def _array(node: object) -> TypeGuard[Array[object]]:
    """Whether `node` is an `Array` (a bare `isinstance` leaves pyright an `Array[Unknown]`; off the hot path)."""
    return isinstance(node, Array)


def _classes(node: Node | None) -> tuple[type[Entity], ...]:
    """Every entity class a plan for `node` bakes in (their schema, key and indexes are reassignable)."""
    out: list[type[Entity]] = []
    seen: set[int] = set()

    def walk(n: object) -> None:
        if id(n) in seen:
            return
        seen.add(id(n))
        if _array(n):
            walk(n.node)
        elif isinstance(n, Object):
            for child in n.nodes.values():
                walk(child)
        elif isinstance(n, type) and issubclass(n, Entity):
            out.append(n)
            for child in n.nested().values():
                walk(child)

    walk(node)
    return tuple(out)


def _stamp(classes: tuple[type[Entity], ...]) -> list[_Stamp]:
    """What `classes` are now (a plan is stale once this differs from the stamp it was made with)."""
    return [(c.schema, c.key, c.indexes) for c in classes]


def _plan(cache: dict[Node | None, _Cached[_F]], node: Node | None, build: Callable[[Node], _F]) -> _F | None:
    """The cached plan for `node` (None: not eligible), rebuilt when a class it bakes in changed."""
    hit = cache.get(node)
    if hit is not None and _stamp(hit[0]) == hit[1]:
        return hit[2]
    fn = build(node) if (_plain_entity(node) or _array(node) or isinstance(node, Object)) else None
    classes = _classes(node)
    if len(cache) >= _MAX_PLANS:
        cache.clear()
    cache[node] = (classes, _stamp(classes), fn)
    return fn


def normalizer(node: Node | None) -> NormFn | None:
    """The generated normalize function for compiled `node`, or None when the general engine should run."""
    if not _enabled:
        return None
    build: Callable[[Node], NormFn] = _executor_n if COMPILED else lambda n: _Gen("n").function(n)
    return _plan(_norm_plans, node, build)


def denormalizer(node: Node | None, tracked: bool = True) -> DenormFn | None:
    """The generated denormalize function for compiled `node`, or None when the general engine should run.

    `tracked=False` gives the variant that records no dependencies (for one-off reads).
    """
    if not _enabled:
        return None
    mode = "d" if tracked else "u"
    build: Callable[[Node], DenormFn] = (
        (lambda n: _executor_d(n, tracked)) if COMPILED else (lambda n: _Gen(mode).function(n))
    )
    return _plan(_denorm_plans[mode], node, build)


def _executor_n(node: Node) -> NormFn:
    """The compiled executor's normalize plan for `node` (one plan object per schema node)."""
    plans: dict[int, _exec.NPlan] = {}

    def plan(n: Node) -> _exec.NPlan:
        known = plans.get(id(n))
        if known is not None:
            return known
        made: _exec.NPlan  # narrowed to each plan class as it is made
        if _plain_entity(n):
            made = plans[id(n)] = _executor.NEntity(n)  # before its members: a member may lead back here
            made.fields = [(f, plan(c)) for f, c in n.nested().items() if c is not None]
        elif _array(n) and n.node is not None:
            made = plans[id(n)] = _executor.NArray(n.normalize_value, plan(n.node))
        elif isinstance(n, Object):
            made = plans[id(n)] = _executor.NObject(n.normalize_value)
            made.fields = [(f, plan(c)) for f, c in n.nodes.items() if c is not None]
        else:
            made = plans[id(n)] = _executor.NPlan(n.normalize_value)
        return made

    fn: NormFn = plan(node).norm
    return fn


def _executor_d(node: Node, tracked: bool) -> DenormFn:
    """The compiled executor's denormalize plan for `node` (see `denormalizer` for `tracked`)."""
    plans: dict[int, _exec.DPlan] = {}

    def plan(n: Node) -> _exec.DPlan:
        known = plans.get(id(n))
        if known is not None:
            return known
        made: _exec.DPlan  # narrowed to each plan class as it is made
        if _plain_entity(n):
            made = plans[id(n)] = _executor.DEntity(n)
            made.fields = [(f, plan(c), f in n._truthy_defaults) for f, c in n.nested().items() if c is not None]
        elif isinstance(n, Array) and n.node is not None:
            made = plans[id(n)] = _executor.DArray(n.denormalize_value, plan(n.node))
        elif isinstance(n, Object):
            made = plans[id(n)] = _executor.DObject(n.denormalize_value)
            made.fields = [(f, plan(c)) for f, c in n.nodes.items() if c is not None]
        else:
            made = plans[id(n)] = _executor.DPlan(n.denormalize_value)
        return made

    top = plan(node)
    fn: DenormFn = top.denorm if tracked else top.denorm_once
    return fn


#: Deps read from one table: (key, table, pks, records, {pk: record} or None when a pk has two records).
Group = tuple[str, "Mapping[str, object] | None", list[str], list[object], "dict[str, object] | None"]
_Open = tuple[str, "Mapping[str, object] | None", list[str], list[object]]


def dep_groups(deps: Sequence[DepItem]) -> list[Group]:
    """`deps` grouped by the table they were read from (a group that is one run keeps the run's lists)."""
    groups: dict[tuple[str, int], _Open] = {}
    borrowed: set[tuple[str, int]] = set()  # groups holding a run's own lists: copied before they grow
    for dep in deps:
        if dep.__class__ is tuple:  # a single read (cheaper to tell than isinstance: this runs per read)
            key, pk, table, record = dep
            group = groups.get((key, id(table)))
            if group is None or (borrowed and (key, id(table)) in borrowed):
                group = _open(groups, borrowed, key, table)
            group[2].append(pk)
            group[3].append(record)
            continue
        run = cast(DepRun, dep)
        slot = (run.key, id(run.table))
        if slot not in groups:
            groups[slot] = (run.key, run.table, run.pks, run.records)  # never changed after its read
            borrowed.add(slot)
            continue
        group = _open(groups, borrowed, run.key, run.table)
        group[2].extend(run.pks)
        group[3].extend(run.records)
    return [(key, table, pks, records, _index(pks, records)) for key, table, pks, records in groups.values()]


def _open(
    groups: dict[tuple[str, int], _Open], borrowed: set[tuple[str, int]], key: str, table: Mapping[str, object] | None
) -> _Open:
    """The group of `key`'s `table`, made (or copied from a run's lists) so that it can grow."""
    slot = (key, id(table))
    group = groups.get(slot)
    if group is None:
        group = groups[slot] = (key, table, [], [])
    elif slot in borrowed:
        borrowed.discard(slot)
        group = groups[slot] = (key, table, list(group[2]), list(group[3]))
    return group


def _index(pks: list[str], records: list[object]) -> dict[str, object] | None:
    """pk -> the record read (None when one pk was read as two records: a table changed in place)."""
    index = dict(zip(pks, records, strict=True))
    if len(index) != len(pks) and any(index[pk] is not record for pk, record in zip(pks, records, strict=True)):
        return None
    return index


def groups_valid(entities: Mapping[str, Mapping[str, object]], groups: list[Group]) -> bool:
    """Same answer as `deps_valid` on the grouped deps: one identity test per unchanged table; for a
    table derived from the one read, only the keys changed since; else a C-level scan of the pks read."""
    get = entities.get
    for key, table, pks, records, index in groups:
        current = get(key)
        if current is table:
            continue
        if current is None:
            if any(r is not None for r in records):
                return False
            continue
        changed = None if index is None else changed_between(table, current)
        if changed is None or index is None:
            if not all(map(is_, map(current.get, pks), records)):
                return False
            continue
        for pk in changed:
            if pk in index and current.get(pk) is not index[pk]:
                return False
    return True


class _Gen:
    """Writes the source of one function per node (shared across cycles) and execs it once."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.counter = 0
        self.hoisted: dict[str, tuple[int, str]] = {}  # entity key -> (slot, its constant), per function
        self.names: dict[int, str] = {}
        self.lines: list[str] = []
        self.env: dict[str, object] = {
            "SchemaError": SchemaError,
            "INVALID": INVALID,
            "to_text": to_text,
            "deps_valid": deps_valid,
            "DepRun": DepRun,
            "RUN_MIN": _exec.RUN_MIN,
            "deepcopy": copy.deepcopy,
            "setdict": object.__setattr__,
            "new": object.__new__,
            "NO_META": {"fetched_at": 0, "date": 0, "expires_at": 0},
            "NOTHING": {},
            "MAX_DEPTH": MAX_DEPTH,
            "FrozenList": FrozenList,
            "FrozenDict": FrozenDict,
            "freeze_members": freeze_members,
            "freeze": freeze,
            "no_containers": CONTAINERS.isdisjoint,  # given map(type, values): no plain list/dict/tuple
        }
        # Normalize: how many inline entities with a nested schema enclose the code being
        # written (`level`), the deepest such entity of the function (`deepest`), and whether
        # a call out of the function at level > 0 set `ctx.depth` (restored at the end).
        self.level: int = 0
        self.deepest: int = -1
        self.moved_depth: bool = False

    def function(self, node: Node) -> Callable[..., object]:
        """The function for `node`, its signature the mode's (`NormFn` for "n", else `DenormFn`)."""
        name = self.ref(node)
        code = compile("\n".join(self.lines), f"<restlayer fast {self.mode}>", "exec")
        exec(code, self.env)
        fn = self.env[name]
        assert callable(fn)
        return fn

    def const(self, value: object) -> str:
        name = f"c{len(self.env)}"
        self.env[name] = value
        return name

    def ref(self, node: Node) -> str:
        """The name of the function handling `node` (writing it on first use; never None)."""
        known = self.names.get(id(node))
        if known is not None:
            return known
        name = f"{self.mode}{len(self.names)}"
        self.names[id(node)] = name
        self.const(node)  # keep it alive while the plan lives
        if (
            self.mode == "n"
            and (_plain_entity(node) or _array(node) or isinstance(node, Object))
            and not (_array(node) and node.node is None)
        ):
            self.norm_function(name, node)
        elif _plain_entity(node):
            self.entity(name, node)
        elif _array(node) and node.node is not None:
            self.array(name, node)
        elif isinstance(node, Object):
            self.object(name, node)
        else:
            method = node.normalize_value if self.mode == "n" else node.denormalize_value
            self.env[name] = method
        return name

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    # ----- normalize ---------------------------------------------------------------------
    def norm_function(self, name: str, node: Node) -> None:
        """One function normalizing `node`, with nested containers and entities written inline."""
        outer = self.hoisted, self.level, self.deepest, self.moved_depth
        self.hoisted, self.level, self.deepest, self.moved_depth = {}, 0, -1, False
        body = self.norm(node, "value", "parent", "key", "out", "    ", (), top=True)
        lines = [f"def {name}(value, parent, key, ctx):"]
        if self.deepest >= 0:
            # Entities this deep are deferred by the general engine (deep data): near that depth,
            # the general engine does the whole node, so both store in the same order.
            general = self.const(node.normalize_value)
            lines += [
                "    depth0 = ctx.depth",
                f"    if depth0 + {self.deepest} >= MAX_DEPTH:",
                f"        return {general}(value, parent, key, ctx)",
            ]
        if self.moved_depth:
            cleanup_depth = ["    ctx.depth = depth0"]
        else:
            cleanup_depth = []
        lines += [
            "    pending = ctx.pending",
            "    pending_meta = ctx.pending_meta",
            "    stored_tables = ctx.entities",
            "    meta = ctx.meta",
        ]
        cleanup: list[str] = []
        for j, ekey in self.hoisted.values():
            # Each entity table's pending rows, pending meta and stored lookup, fetched once per call.
            lines += [
                f"    T{j} = pending.get({ekey})",
                f"    if T{j} is None:",
                f"        T{j} = pending[{ekey}] = {{}}",
                f"        M{j} = pending_meta[{ekey}] = {{}}",
                f"        made{j} = True",
                "    else:",
                f"        M{j} = pending_meta[{ekey}]",
                f"        made{j} = False",
                f"    S{j} = stored_tables.get({ekey})",
                f"    S{j} = NOTHING.get if S{j} is None else S{j}.get",
            ]
            cleanup += [  # a table this call opened and never wrote stays absent, as in the general engine
                f"    if made{j} and not T{j}:",
                f"        del pending[{ekey}]",
                f"        del pending_meta[{ekey}]",
            ]
        self.hoisted, self.level, self.deepest, self.moved_depth = outer
        self.emit(*lines, *body, *cleanup, *cleanup_depth, "    return out", "")

    def call_out(self, ind: str, dst: str, fn: str, args: str) -> list[str]:
        """A call to another function, with `ctx.depth` set to this point's entity depth first."""
        if self.level == 0:
            return [f"{ind}{dst} = {fn}({args})"]
        self.moved_depth = True
        return [f"{ind}ctx.depth = depth0 + {self.level}", f"{ind}{dst} = {fn}({args})"]

    def fresh(self) -> str:
        self.counter += 1
        return str(self.counter)

    def norm(
        self,
        node: Node,
        src: str,
        parent: str,
        key: str,
        dst: str,
        ind: str,
        stack: tuple[Node, ...],
        top: bool = False,
    ) -> list[str]:
        """Statements setting `dst` to the normalized form of `src` (inline when worth it)."""
        inline = top or (len(stack) < 4 and node not in stack)
        if inline and _plain_entity(node):
            return self.norm_entity(node, src, parent, key, dst, ind, (*stack, node))
        if inline and _array(node) and node.node is not None:
            return self.norm_array(node, src, parent, key, dst, ind, (*stack, node))
        if inline and isinstance(node, Object):
            return self.norm_object(node, src, parent, key, dst, ind, (*stack, node))
        return self.call_out(ind, dst, self.ref(node), f"{src}, {parent}, {key}, ctx")

    def member(
        self, node: Node, src: str, parent: str, fname: str, dst: str, ind: str, stack: tuple[Node, ...]
    ) -> list[str]:
        """A member normalized with its name prefixed to any error path (as `normalize_members`)."""
        return [
            f"{ind}try:",
            *self.norm(node, src, parent, fname, dst, ind + "    ", stack),
            f"{ind}except SchemaError as exc:",
            f"{ind}    exc.path = ({fname}, *exc.path)",
            f"{ind}    raise",
        ]

    def norm_entity(
        self, cls: type[Entity], src: str, parent: str, key: str, dst: str, ind: str, stack: tuple[Node, ...]
    ) -> list[str]:
        i = self.fresh()
        general, ekey, cls_ref = self.const(cls.normalize_value), self.const(cls.key), self.const(cls)
        pk, rec = f"pk{i}", f"rec{i}"
        j = self.hoisted.setdefault(cls.key, (len(self.hoisted), ekey))[0]
        ints = [f"{ind}if {pk}.__class__ is int:", f"{ind}    {pk} = str({pk})"]
        body = [
            f"{ind}{pk} = {src}.get('id') if {src}.__class__ is dict else None",
            *([] if cls._text_id else ints),  # a text-id class's int id goes to the general engine
            f"{ind}if {pk}.__class__ is not str or {pk} == '' or {pk} == 'undefined':",
            *self.call_out(ind + "    ", dst, general, f"{src}, {parent}, {key}, ctx"),  # anything unusual
            f"{ind}else:",
            f"{ind}    {rec} = dict({src})",
        ]
        inner = ind + "    "
        nested = cls.nested()
        if nested:
            self.deepest = max(self.deepest, self.level)
            self.level += 1
        for field, child in nested.items():
            if child is None:
                continue
            fname, c = self.const(field), f"child{self.fresh()}"
            body += [
                f"{inner}{c} = {rec}.get({fname})",
                f"{inner}if {c} is not None:",
                *self.member(child, c, rec, fname, f"{rec}[{fname}]", inner + "    ", stack),
            ]
        if nested:
            self.level -= 1
        body += [
            f"{inner}if not no_containers(map(type, {rec}.values())):",
            f"{inner}    freeze_members({rec})  # stored data is read-only",
            f"{inner}if {pk} not in T{j}:",
            f"{inner}    existing = S{j}({pk})",
            f"{inner}    if existing is None:",
            f"{inner}        T{j}[{pk}] = {rec}",
            f"{inner}        M{j}[{pk}] = meta",
            f"{inner}    elif existing.__class__ is dict:  # stored before: the default merge, older data loses",
            f"{inner}        metas = ctx.entities_meta.get({ekey})",
            f"{inner}        stored_meta = None if metas is None else metas.get({pk})",
            f"{inner}        if stored_meta is None:",
            f"{inner}            stored_meta = NO_META",
            f"{inner}        if meta['fetched_at'] < stored_meta['fetched_at']:",
            f"{inner}            T{j}[{pk}] = {{**{rec}, **existing}}",
            f"{inner}            M{j}[{pk}] = stored_meta",
            f"{inner}        else:",
            f"{inner}            T{j}[{pk}] = {{**existing, **{rec}}}",
            f"{inner}            M{j}[{pk}] = meta",
            f"{inner}    else:",
            f"{inner}        ctx.store({cls_ref}, {pk}, {rec})",
            f"{inner}else:",
            f"{inner}    ctx.store({cls_ref}, {pk}, {rec})",
            f"{inner}{dst} = {pk}",
        ]
        return body

    def norm_array(
        self, node: Array[object], src: str, parent: str, key: str, dst: str, ind: str, stack: tuple[Node, ...]
    ) -> list[str]:
        assert node.node is not None  # `norm` writes only an Array with a member schema inline
        i = self.fresh()
        general = self.const(node.normalize_value)
        out, index, item, result = f"out{i}", f"index{i}", f"item{i}", f"result{i}"
        return [
            f"{ind}if {src}.__class__ is list:",
            f"{ind}    {out} = []",
            f"{ind}    {index} = -1",
            f"{ind}    try:",
            f"{ind}        for {item} in {src}:",
            f"{ind}            {index} += 1",
            f"{ind}            if {item} is None:",
            f"{ind}                {out}.append(None)  # kept in place",
            f"{ind}                continue",
            *self.norm(node.node, item, parent, key, result, ind + "            ", stack),
            f"{ind}            if {result} is not None:",
            f"{ind}                {out}.append({result})",
            f"{ind}    except SchemaError as exc:",
            f"{ind}        exc.path = ({index}, *exc.path)",
            f"{ind}        raise",
            f"{ind}    {dst} = FrozenList({out})",
            f"{ind}else:",
            *self.call_out(ind + "    ", dst, general, f"{src}, {parent}, {key}, ctx"),
        ]

    def norm_object(
        self, node: Object, src: str, parent: str, key: str, dst: str, ind: str, stack: tuple[Node, ...]
    ) -> list[str]:
        i = self.fresh()
        general = self.const(node.normalize_value)
        out = f"out{i}"
        body = [
            f"{ind}if {src}.__class__ is dict:",
            f"{ind}    {out} = dict({src})",
        ]
        for field, child in node.nodes.items():
            if child is None:
                continue
            fname, c = self.const(field), f"child{self.fresh()}"
            body += [
                f"{ind}    {c} = {out}.get({fname})",
                f"{ind}    if {c} is not None:",
                *self.member(child, c, src, fname, f"{out}[{fname}]", ind + "        ", stack),
            ]
        return [
            *body,
            f"{ind}    if not no_containers(map(type, {out}.values())):",
            f"{ind}        freeze_members({out})",
            f"{ind}    {dst} = FrozenDict({out})",
            f"{ind}else:",
            *self.call_out(ind + "    ", dst, general, f"{src}, {parent}, {key}, ctx"),
        ]

    # ----- denormalize -------------------------------------------------------------------
    def entity(self, name: str, cls: type[Entity]) -> None:
        return self.entity_d(name, cls)

    def array(self, name: str, node: Array[object]) -> None:
        assert node.node is not None  # `ref` sends only an Array with a member schema here
        fn = self.ref(node.node)
        if _plain_entity(node.node) and self.mode == "d" and self.shared_d(node.node, "") is not None:
            self.entity_array(f"{name}_short", node.node, fn, self.const(node.denormalize_value))
            return self.leaf_array(name, node.node, fn, self.const(node.denormalize_value))
        if _plain_entity(node.node):
            return self.entity_array(name, node.node, fn, self.const(node.denormalize_value))
        general = self.const(node.denormalize_value)
        self.emit(
            f"def {name}(value, unvisit):",
            "    if not isinstance(value, (list, tuple)):  # not what normalize stores: the general engine's answer",
            f"        return {general}(value, unvisit)",
            "    out = []",
            "    for item in value:",
            "        if item is None:",
            "            out.append(None)  # a None member of the response stays None",
            "        else:",
            f"            result = {fn}(item, unvisit)",
            "            if result is not None and result is not INVALID:",
            "                out.append(result)",
            "    return FrozenList(out)  # shared by every reader of a memoized read: read-only",
            "",
        )

    def object(self, name: str, node: Object) -> None:
        general = self.const(node.denormalize_value)
        members = [(self.const(f), self.ref(c)) for f, c in node.nodes.items() if c is not None]
        body = [
            f"def {name}(value, unvisit):",
            "    if value.__class__ is not FrozenDict and value.__class__ is not dict:",
            f"        return {general}(value, unvisit)",
            "    out = dict(value)",
        ]
        for fname, fn in members:
            body += [
                f"    child = out.get({fname})",
                "    if child is not None:",
                f"        result = {fn}(child, unvisit)",
                "        if result is INVALID:",
                "            return INVALID",
                f"        out[{fname}] = result",
            ]
        self.emit(*body, "    return FrozenDict(out)", "")

    def entity_d(self, name: str, cls: type[Entity]) -> None:
        general, key, cls_ref = self.const(cls.denormalize_value), self.const(cls.key), self.const(cls)
        tracked = self.mode == "d"
        body = [
            f"def {name}(value, unvisit):",
            "    if value.__class__ is not str:",
            "        if value.__class__ is dict:  # an entity given inline, never normalized",
            "            record = value",
            *self.build_d(cls, "        ", cached=False),
            "                setdict(obj, '__dict__', values)",
            "            return obj",
            f"        return {general}(value, unvisit)",
        ]
        if cls.schema:  # deep data: the general engine defers entities this deep
            body += ["    if unvisit.depth >= MAX_DEPTH:", f"        return {general}(value, unvisit)"]
        body += [
            f"    table = unvisit.entities.get({key})",
            "    record = None if table is None else table.get(value)",
            "    if record is None or record is INVALID:",
            *([f"        unvisit.deps.append(({key}, value, table, record))"] if tracked else []),
            "        return record",
            *self.slots_lines(cls_ref),
            "    hit = slots.get(value)",
            "    if hit.__class__ is not tuple and hit is not None:  # an instance sharing its record",
            "        if hit.__dict__ is record:",
            *([f"            unvisit.deps.append(({key}, value, table, record))"] if tracked else []),
            "            return hit",
            "    elif hit is not None and hit[0] is record:",
            "        deps = hit[2]",
        ]
        if tracked:
            body += [
                "        if deps.__class__ is not list:  # a cycle back to an instance being built, or deep data",
                f"            return {general}(value, unvisit)",
                "        if not unvisit.checking or len(deps) == 1 or deps_valid(unvisit.entities, deps, 1):",
                "            unvisit.deps.extend(deps)",
                "            return hit[1]",
            ]
        else:  # a one-off read: nobody looks at its dependencies, and its cache is its own
            body += [
                "        if deps is None:  # a cycle back to an instance being built",
                f"            return {general}(value, unvisit)",
                "        return hit[1]",
            ]
        shared = self.shared_d(cls, key)
        if shared is not None:
            body += [f"    if {shared[0]}:", *("        " + line for line in shared[1]), "        return obj"]
        if tracked:
            body += ["    outer = unvisit.deps", f"    unvisit.deps = mine = [({key}, value, table, record)]"]
        body += self.build_d(cls, "", cached=True)
        body.append("        setdict(obj, '__dict__', values)")
        body += self.cache_entry(cls, "", tracked)
        body += ["    return obj", ""]
        self.emit(*body)

    @staticmethod
    def slots_lines(cls_ref: str) -> list[str]:
        """Lines binding `slots`: the instance cache's entries of entity class `cls_ref`, by pk."""
        return [
            "    cache = unvisit.cache",
            f"    slots = cache.get({cls_ref})",
            "    if slots is None:",
            f"        slots = cache[{cls_ref}] = {{}}",
        ]

    def shared_d(self, cls: type[Entity], key: str) -> tuple[str, list[str]] | None:
        """For an entity without nested members: the test that `record` has exactly its fields, in order,
        and the lines making `obj` share the record's dict, its own cache entry (as the compiled engine does).
        """
        if any(child is not None for child in cls.nested().values()):
            return None
        names = tuple(cls._defaults)
        body = [
            f"obj = new({self.const(cls)})",
            "setdict(obj, '__dict__', record)  # stored data is never changed, nor is an instance",
            "slots[value] = obj",
        ]
        if self.mode == "d":
            body.append(f"unvisit.deps.append(({key}, value, table, record))")
        return f"len(record) == {len(names)} and tuple(record) == {self.const(names)}", body

    def cache_entry(self, cls: type[Entity], indent: str, tracked: bool) -> list[str]:
        """Lines storing the built `obj` in the instance cache (after `build_d`)."""
        if not tracked:
            return [indent + "    slots[value] = (record, obj, ())"]
        deps = "mine"
        if cls.schema:  # a descendant deferred (deep data): these deps are incomplete
            deps = "mine if len(unvisit.deferred) == queued else unvisit.deferred_token()"
        lines = [
            indent + "    unvisit.deps = outer",
            indent + "    outer.extend(mine)",
            indent + f"    slots[value] = (record, obj, {deps})",
        ]
        if cls.schema:  # held while it is built (`build_d`): a cycle may have come back to it
            lines += [
                indent + f"    if unvisit.cycles and {self.const(cls)} in unvisit.cycles:",
                indent + f"        unvisit.close_cycle({self.const(cls)}, value, mine)",
            ]
        return lines

    def entity_array(self, name: str, cls: type[Entity], fn: str, general: str) -> None:
        """A list of pks of one plain entity class: the lookups and the build written into the loop."""
        key, cls_ref = self.const(cls.key), self.const(cls)
        tracked = self.mode == "d"
        body = [
            f"def {name}(value, unvisit):",
            "    if not isinstance(value, (list, tuple)):  # not what normalize stores: the general engine's answer",
            f"        return {general}(value, unvisit)",
        ]
        if cls.schema:  # deep data: the general engine defers entities this deep
            body += ["    if unvisit.depth >= MAX_DEPTH:", f"        return {general}(value, unvisit)"]
        body += [
            "    out = []",
            f"    table = unvisit.entities.get({key})",
            "    get = NOTHING.get if table is None else table.get",
            *self.slots_lines(cls_ref),
            "    for value in value:",
            "        if value is None:",
            "            out.append(None)  # a None member of the response stays None",
            "            continue",
            "        if value.__class__ is not str:",
            f"            obj = {fn}(value, unvisit)  # an id of another type, or an entity given inline",
            "        else:",
            "            record = get(value)",
            "            if record is None or record is INVALID:",
            *([f"                unvisit.deps.append(({key}, value, table, record))"] if tracked else []),
            "                continue",
            "            hit = slots.get(value)",
            "            if hit is not None and hit.__class__ is not tuple and hit.__dict__ is record:",
            *([f"                unvisit.deps.append(({key}, value, table, record))"] if tracked else []),
            "                obj = hit  # an instance sharing its record",
            *(
                [
                    "            elif hit.__class__ is tuple and hit[0] is record and hit[2].__class__ is list and (",
                    "                    not unvisit.checking or len(hit[2]) == 1",
                    "                    or deps_valid(unvisit.entities, hit[2], 1)):",
                    "                unvisit.deps.extend(hit[2])",
                ]
                if tracked
                else ["            elif hit.__class__ is tuple and hit[0] is record and hit[2] is not None:"]
            ),
            "                obj = hit[1]",
            "            elif hit.__class__ is tuple and hit[0] is record:",
            f"                obj = {fn}(value, unvisit)  # a cycle, deep data or a stale entry: one by one",
        ]
        shared = self.shared_d(cls, key)
        if shared is not None:
            body += [f"            elif {shared[0]}:", *("                " + line for line in shared[1])]
        body += ["            else:"]
        if tracked:
            body += [
                "                outer = unvisit.deps",
                f"                unvisit.deps = mine = [({key}, value, table, record)]",
            ]
        body += self.build_d(cls, "            ", cached=True)
        body.append("                    setdict(obj, '__dict__', values)")
        body += self.cache_entry(cls, "            ", tracked)
        body += [
            "        if obj is not None and obj is not INVALID:",
            "            out.append(obj)",
            "    return FrozenList(out)  # shared by every reader of a memoized read: read-only",
            "",
        ]
        self.emit(*body)

    def leaf_array(self, name: str, cls: type[Entity], fn: str, general: str) -> None:
        """A list of pks of a plain entity class without nested members, in a tracked read: consecutive reads
        of its table recorded as one `DepRun` (as the compiled engine does); anything else through `fn`.
        A list shorter than `RUN_MIN` goes to `{name}_short` (written by `entity_array`)."""
        key, cls_ref = self.const(cls.key), self.const(cls)
        test = self.shared_d(cls, key)
        assert test is not None
        body = [
            f"def {name}(value, unvisit):",
            "    if not isinstance(value, list) or len(value) < RUN_MIN:",
            f"        return {name}_short(value, unvisit)",
        ]
        if cls.schema:  # deep data: the general engine defers entities this deep
            body += ["    if unvisit.depth >= MAX_DEPTH:", f"        return {general}(value, unvisit)"]
        body += [
            "    out = []",
            f"    table = unvisit.entities.get({key})",
            "    get = NOTHING.get if table is None else table.get",
            *self.slots_lines(cls_ref),
            "    deps = unvisit.deps",
            "    at = -1  # len(deps) just after the current run was appended (another dep since: a new run)",
            "    for value in value:",
            "        if value is None:",
            "            out.append(None)  # a None member of the response stays None",
            "            continue",
            "        if value.__class__ is not str:",
            f"            obj = {fn}(value, unvisit)  # an id of another type, or an entity given inline",
            "        else:",
            "            obj = record = get(value)",
            "            if record is not None and record is not INVALID:",
            "                hit = slots.get(value)",
            "                if hit is not None and hit.__class__ is not tuple and hit.__dict__ is record:",
            "                    obj = hit  # an instance sharing its record",
            f"                elif hit.__class__ is not tuple and record.__class__ is dict and {test[0]}:",
            f"                    obj = new({cls_ref})",
            "                    setdict(obj, '__dict__', record)  # stored data is never changed, nor is an instance",
            "                    slots[value] = obj",
            "                else:",
            f"                    obj = {fn}(value, unvisit)  # records its own dep",
            "                    if obj is not None and obj is not INVALID:",
            "                        out.append(obj)",
            "                    continue",
            "            if len(deps) != at:",
            f"                run = DepRun({key}, table)",
            "                pks = run.pks.append",
            "                records = run.records.append",
            "                deps.append(run)",
            "                at = len(deps)",
            "            pks(value)",
            "            records(record)",
            "        if obj is not None and obj is not INVALID:",
            "            out.append(obj)",
            "    return FrozenList(out)  # shared by every reader of a memoized read: read-only",
            "",
        ]
        self.emit(*body)

    def build_d(self, cls: type[Entity], indent: str, cached: bool) -> list[str]:
        """Lines building `obj` from `record` (ending inside `if obj is not INVALID:`).

        `cached`: a stored entity (`slots[value]`), built one level deeper (`unvisit.depth`), as the
        general engine does; an entity given inline is built at its parent's depth, uncached.
        """
        defaults, cls_ref = self.const(dict(cls._defaults)), self.const(cls)
        body = [f"    values = {{**{defaults}, **record}}"]
        for field in cls._mutable_defaults:
            fname = self.const(field)
            # a copy of its own, read-only: the instance is shared by every reader
            body += [f"    if {fname} not in record:", f"        values[{fname}] = freeze(deepcopy(values[{fname}]))"]
        body.append(f"    obj = new({cls_ref})")
        deep = cached and bool(cls.schema)
        if deep:
            body += [
                "    slots[value] = (record, obj, None)  # a cycle back here finds it",
                "    queued = len(unvisit.deferred)",
                "    depth = unvisit.depth",
                "    unvisit.depth = depth + 1",
            ]
        for field, child in cls.nested().items():
            if child is None:
                continue
            fn, fname = self.ref(child), self.const(field)
            body += [
                f"    child = record.get({fname})",
                "    if child is not None and obj is not INVALID:",
                f"        result = {fn}(child, unvisit)",
                "        if result is INVALID:",
                "            obj = INVALID" if field in cls._truthy_defaults else "            result = None",
                f"        values[{fname}] = result",
            ]
        if deep:
            body.append("    unvisit.depth = depth")
        body.append("    if obj is not INVALID:")
        return [indent + line for line in body]


def denormalize_with(unvisit: Unvisit, node: Node | None, input: object, tracked: bool = True) -> object:
    """Denormalize `input` by compiled `node` through its generated function when there is one.

    With `tracked=False` the read may leave `unvisit.deps` incomplete (nobody reads them).
    """
    fn = denormalizer(node, tracked) if input is not None else None
    try:
        if fn is None:
            return unvisit(node, input)
        try:
            value = fn(input, unvisit)
        except RecursionError:
            # Too deep for the generated functions: forget this read's half-built instances
            # and let the general engine do the whole read.
            _abandon(unvisit, tracked)
            return unvisit(node, input)
        if unvisit.deferred:  # deep data: the general engine left entities to finish
            unvisit.finish_deferred()
        return value
    except BaseException as exc:  # a user hook (from_json, validate...) raised, or the caller was cancelled
        _abandon(unvisit, tracked)  # nothing half-built stays cached: the next read raises again
        if isinstance(exc, RestLayerError) or not isinstance(exc, Exception):
            raise
        what = node.__name__ if isinstance(node, type) else repr(node)
        raise RestLayerError(f"reading {what} raised {type(exc).__name__}: {exc}") from exc


def _abandon(unvisit: Unvisit, tracked: bool) -> None:
    """Forget what a read that raised left half-done in its instance cache (see `Unvisit.abandon`)."""
    if not tracked:  # a one-off read's own cache (the executor files half-built instances as built)
        unvisit.cache.clear()
    unvisit.abandon()
