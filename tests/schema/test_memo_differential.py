"""MemoCache against plain denormalize on random schemas: after every write, every memoized read holds the same data.

Each example declares a few Entity classes whose members reach each other (one entity, lists, `Values`,
`Union`, nested `Collection`s, plain objects; self- and mutual references, so cycles), some with a
`process` hook or a `key` shared with another class, then writes random replies, one-record patches and
`Invalidate`s over the previous state. After each write every earlier result, and every stored entity, is
read through one MemoCache and by a plain `denormalize` of the same store; the two must hold the same data.

Few pks, shallow replies and mostly patches make cycles and changes below them likely: derandomized, the
run finds the stale reads of the code before the cycle fixes (7143989^) within its 200 examples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from restlayer.schema import Collection, Entity, Invalidate, MemoCache, Union, Values, denormalize, normalize

Shape = Literal["one", "list", "values", "union", "collection", "object", "invalidate"]
NESTED_SHAPES: tuple[Shape, ...] = ("one", "one", "list", "list", "values", "union", "collection", "object")
TOP_SHAPES: tuple[Shape, ...] = ("one", "list", "values", "union", "collection", "object")
MAX_NESTING = 2  # entity objects nested deeper than this are written as a bare pk
GONE = "gone"  # a name the `process` hook answers with None (the entity is deleted)


@dataclass(frozen=True)
class Member:
    """A schema by shape over entity classes (by index): a class's member `field`, or a write's top schema."""

    field: str
    shape: Shape
    targets: tuple[int, ...]  # two for a union, one otherwise


@dataclass(frozen=True)
class ClassSpec:
    """An Entity class: its nested members, whether it shares class 0's `key`, whether `process` rewrites input."""

    members: tuple[Member, ...]
    shares_key: bool
    processes: bool


@dataclass(frozen=True)
class Write:
    """`normalize(tops[top], data, args, state, meta(fetched_at))`."""

    top: int
    data: object
    args: tuple[object, ...]
    fetched_at: int


@dataclass(frozen=True)
class Case:
    """Classes, the top schemas writes use, and the writes in order."""

    classes: tuple[ClassSpec, ...]
    tops: tuple[Member, ...]
    writes: tuple[Write, ...]


# ----- the strategy ---------------------------------------------------------------------------------------

PKS: list[int | str] = [1, 2, "1", "2", 3]  # few pks, both spellings: records are reused and cycles close
pks = st.sampled_from(PKS)
names = st.sampled_from(["a", "b", GONE])
call_args = st.sampled_from([(), ({"u": 1},), ({"u": 2},)])


@st.composite
def members(draw: st.DrawFn, field: str, count: int, shapes: Sequence[Shape]) -> Member:
    """A member of one of `shapes` over `count` classes (a union names two, possibly the same)."""
    shape = draw(st.sampled_from(shapes))
    targets = st.integers(0, count - 1)
    return Member(field, shape, (draw(targets), draw(targets)) if shape == "union" else (draw(targets),))


@st.composite
def class_specs(draw: st.DrawFn) -> tuple[ClassSpec, ...]:
    """One to three classes, each with one to three members reaching any class (itself included); a class
    after the first may share class 0's key (and so its members: the two read one table)."""
    count = draw(st.integers(1, 3))
    specs: list[ClassSpec] = []
    for i in range(count):
        processes = draw(st.booleans())
        if i and draw(st.booleans()):  # another class over class 0's table: the same members, its own hooks
            specs.append(ClassSpec(specs[0].members, shares_key=True, processes=processes))
            continue
        fields = [f"n{j}" for j in range(draw(st.integers(1, 3)))]
        specs.append(ClassSpec(tuple(draw(members(f, count, NESTED_SHAPES)) for f in fields), False, processes))
    return tuple(specs)


def entity_data(draw: st.DrawFn, classes: Sequence[ClassSpec], index: int, depth: int) -> dict[str, object] | int | str:
    """A reply's record of class `index`: an object with some of its members, or (deep down) a bare pk."""
    if depth > MAX_NESTING or draw(st.integers(0, 5)) == 0:
        return draw(pks)
    data: dict[str, object] = {"id": draw(pks)}
    if draw(st.booleans()):
        data["name"] = draw(names)
    for member in classes[index].members:
        if draw(st.integers(0, 3)):  # a member left out keeps what the store holds
            data[member.field] = member_data(draw, classes, member, depth + 1)
    return data


def record(draw: st.DrawFn, classes: Sequence[ClassSpec], index: int, depth: int) -> dict[str, object]:
    """A record of class `index` as an object (where a bare pk is not accepted: unions, top-level entities)."""
    data = entity_data(draw, classes, index, depth)
    return data if isinstance(data, dict) else {"id": data}


def member_data(draw: st.DrawFn, classes: Sequence[ClassSpec], member: Member, depth: int) -> object:
    """Data for `member` (None where a nested member may be null)."""
    target = member.targets[0]
    if member.shape == "one":
        return None if depth and draw(st.integers(0, 5)) == 0 else entity_data(draw, classes, target, depth)
    if member.shape in ("list", "collection"):
        return [entity_data(draw, classes, target, depth) for _ in range(draw(st.integers(0, 3)))]
    if member.shape == "values":
        return {f"k{k}": entity_data(draw, classes, target, depth) for k in range(draw(st.integers(0, 2)))}
    if member.shape == "union":
        side = draw(st.sampled_from([0, 1]))
        return {**record(draw, classes, member.targets[side], depth), "type": "ab"[side]}
    if member.shape == "object":
        items = [entity_data(draw, classes, target, depth) for _ in range(draw(st.integers(0, 2)))]
        return {"inner": entity_data(draw, classes, target, depth), "k": items, "x": 1}
    return draw(pks) if draw(st.booleans()) else {"id": draw(pks)}  # invalidate


WriteKind = Literal["reply", "patch", "record", "invalidate"]
#: Two patches to a reply (the first write is a reply): a patch changes one record alone, so it lands below
#: earlier reads without touching the records on their way there (the shape of the stale reads found so far).
REPLY_OR_PATCHES: list[WriteKind] = ["reply", "patch", "patch"]
WRITE_KINDS = REPLY_OR_PATCHES * 3 + ["record", "invalidate"]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """Classes, a few top schemas over them (plus each class alone and its Invalidate), and three to fourteen writes."""
    classes = draw(class_specs())
    replies = draw(st.lists(members("", len(classes), TOP_SHAPES), min_size=1, max_size=3))
    tops = (*replies, *(Member("", shape, (i,)) for i in range(len(classes)) for shape in ("one", "invalidate")))
    writes: list[Write] = []
    for n in range(draw(st.integers(3, 14))):
        kind = draw(st.sampled_from(WRITE_KINDS)) if n else "reply"
        if kind == "reply":
            top = draw(st.integers(0, len(replies) - 1))
        else:
            top = len(replies) + 2 * draw(st.integers(0, len(classes) - 1)) + (kind == "invalidate")
        member = tops[top]
        if kind == "patch":
            data: object = {"id": draw(pks), "name": draw(names)}
        elif member.shape == "one":
            data = record(draw, classes, member.targets[0], 0)
        else:
            data = member_data(draw, classes, member, 0)
        args = draw(call_args) if member.shape == "collection" else ()
        fetched_at = 0 if draw(st.integers(0, 4)) == 0 else 1000 * (n + 1)  # now and then an outdated reply
        writes.append(Write(top, data, args, fetched_at))
    return Case(classes, tuple(tops), tuple(writes))


# ----- building the schemas -------------------------------------------------------------------------------


def process_hook(
    cls: type[Entity], input: Mapping[str, object], parent: object, key: str | None, args: tuple[object, ...]
) -> Mapping[str, object] | None:
    """Delete the entity when its name is GONE, else store the input with a mark of its own."""
    return None if input.get("name") == GONE else {**input, "processed": True}


def nest_key(parent: Mapping[str, object], key: str) -> Mapping[str, object]:
    """A nested Collection's list is the parent's own (keyed by the parent's id)."""
    return {"parent": parent.get("id")}


def schema_of(member: Member, classes: Sequence[type[Entity]], nested: bool) -> object:
    """The restlayer schema `member` describes over the built `classes`."""
    target = classes[member.targets[0]]
    if member.shape == "one":
        return target
    if member.shape == "list":
        return [target]
    if member.shape == "values":
        return Values(target)
    if member.shape == "union":
        return Union({"a": target, "b": classes[member.targets[1]]}, "type")
    if member.shape == "collection":
        return Collection([target], nest_key=nest_key) if nested else Collection([target])
    if member.shape == "object":
        return {"inner": target, "k": [target]}
    return Invalidate(target)


def build_classes(specs: Sequence[ClassSpec]) -> list[type[Entity]]:
    """Entity classes E0, E1, ... for `specs`; schemas are set once every class exists (they form cycles)."""
    classes: list[type[Entity]] = []
    for i, spec in enumerate(specs):
        fields: dict[str, object] = {"id": 0, "name": ""}
        fields.update({m.field: None for m in spec.members})
        namespace: dict[str, object] = {"__annotations__": dict.fromkeys(fields, "Any"), **fields}
        if spec.shares_key:
            namespace["key"] = "E0"
        if spec.processes:
            namespace["process"] = classmethod(process_hook)
        classes.append(cast("type[Entity]", type(f"E{i}", (Entity,), namespace)))
    for cls, spec in zip(classes, specs, strict=True):
        cls.schema = {m.field: schema_of(m, classes, nested=True) for m in spec.members}
    return classes


# ----- comparing data -------------------------------------------------------------------------------------


def first_difference(memoized: object, plain: object) -> tuple[tuple[object, ...], object, object] | None:
    """Where two reads hold different data (path, memoized part, plain part), or None when they hold the same.

    Entities compare by class name and fields, containers item by item, never by identity. Each pair of
    objects is compared once, so a cycle is followed round once and shared data is not compared again.
    """
    seen: set[tuple[int, int]] = set()
    todo: list[tuple[tuple[object, ...], object, object]] = [((), memoized, plain)]
    while todo:
        path, m, p = todo.pop()
        if (id(m), id(p)) not in seen:
            seen.add((id(m), id(p)))
            parts = same_shape_parts(m, p)
            if parts is None:
                return path, shallow(m), shallow(p)
            todo.extend(((*path, *step), a, b) for step, a, b in parts)
    return None


def same_shape_parts(m: object, p: object) -> list[tuple[tuple[object, ...], object, object]] | None:
    """The parts of `m` and `p` to compare next (path step, part of m, part of p), or None when they differ here."""
    if isinstance(m, Entity) and isinstance(p, Entity):
        if type(m).__name__ != type(p).__name__ or m.__dict__.keys() != p.__dict__.keys():
            return None
        at = f"{type(m).__name__}:{m.__dict__.get('id')!r}"
        return [((at, k), v, p.__dict__[k]) for k, v in m.__dict__.items()]
    if type(m) is not type(p):
        return None
    if isinstance(m, Mapping):
        ms, ps = cast("Mapping[object, object]", m), cast("Mapping[object, object]", p)
        return [((k,), v, ps[k]) for k, v in ms.items()] if ms.keys() == ps.keys() else None
    if isinstance(m, (list, tuple)):
        ml, pl = cast("Sequence[object]", m), cast("Sequence[object]", p)
        return [((i,), a, b) for i, (a, b) in enumerate(zip(ml, pl, strict=True))] if len(ml) == len(pl) else None
    return [] if m == p else None


def shallow(value: object) -> object:
    """`value` with nested entities written as `Class:pk` (an entity's repr never ends on cyclic data)."""
    if isinstance(value, Entity):
        return {"class": type(value).__name__, **{k: ref(v) for k, v in value.__dict__.items()}}
    return ref(value)


def ref(value: object) -> object:
    """`value` with every entity in it written as `Class:pk`."""
    if isinstance(value, Entity):
        return f"{type(value).__name__}:{value.__dict__.get('id')!r}"
    if isinstance(value, Mapping):
        return {k: ref(v) for k, v in cast("Mapping[object, object]", value).items()}
    if isinstance(value, (list, tuple)):
        return [ref(v) for v in cast("Sequence[object]", value)]
    return value


# ----- the property ---------------------------------------------------------------------------------------


def meta(fetched_at: int) -> dict[str, float]:
    """A write's meta, fetched at `fetched_at` (writes may arrive out of order)."""
    return {"fetched_at": fetched_at, "date": fetched_at, "expires_at": 10**12}


@settings(max_examples=200, derandomize=True, database=None)
@given(cases())
def test_memoized_reads_hold_the_data_of_plain_reads_after_every_write(case: Case) -> None:
    """One MemoCache is read after every write, as a store's readers do, and checked against plain reads."""
    classes = build_classes(case.classes)
    tops = [schema_of(top, classes, nested=False) for top in case.tops]
    memo = MemoCache()
    state: Any = None
    reads: list[tuple[str, object, object, tuple[object, ...]]] = []
    for n, write in enumerate(case.writes):
        state = normalize(tops[write.top], write.data, write.args, state, meta(write.fetched_at))
        reads.append((f"write {n}", tops[write.top], state.result, write.args))
        stored = [(f"{cls.__name__}:{pk}", cls, pk, ()) for cls in classes for pk in state.entities.get(cls.key, ())]
        for label, schema, result, args in reads + stored:
            memoized = memo.denormalize(schema, result, state.entities, args)
            difference = first_difference(memoized, denormalize(schema, result, state.entities, args))
            assert difference is None, f"after write {n}, the memoized read of {label} differs at {difference}"
