"""`Query` and `All`: reads computed from the store, with no fetch of their own."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, TypeVar, overload

from restlayer._pmap import OrderedPMap
from restlayer._typing import E, T
from restlayer.errors import DefinitionError, RestLayerError, SchemaError
from restlayer.schema._base import INVALID, InvalidType, Node, Schema, compile_schema, required_node, schema_name
from restlayer.schema._frozen import FrozenList, freeze
from restlayer.schema._union import Attribute, Union

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Unvisit
    from restlayer.schema._entity import Entity
    from restlayer.schema._normalize import Normalizer

#: What the schema inside a `Query` reads: the first argument of its `process`.
S = TypeVar("S")


class Query(Schema[T]):
    """A derived read: `Query(All(User), lambda users, *args: sorted(...))`.

    The value `process` returns is memoized and shared by every reader, so the
    lists and dicts in it are made read-only (`FrozenList`/`FrozenDict`), as in
    every other read; other values are returned as they are.
    """

    __slots__ = ("node", "process", "schema")

    node: Node
    process: Callable[..., T] | None

    # `process` is called as `process(value, *args)` with what `schema` read (never None): its first
    # parameter is typed from the schema, so a lambda's is inferred and a mismatched function caught.
    @overload
    def __init__(self: Query[E], schema: type[E], process: None = None) -> None: ...
    @overload
    def __init__(self, schema: Schema[T], process: None = None) -> None: ...
    # mypy infers a lambda's parameters only from an exact arity: `lambda users: ...` from the
    # first pair, `lambda users, params: ...` (the call's params, `ctrl.get(query, params)`) from the
    # second; a function taking more of the call's arguments matches the last pair.
    @overload
    def __init__(self, schema: type[E], process: Callable[[E], T]) -> None: ...
    @overload
    def __init__(self, schema: Schema[S], process: Callable[[S], T]) -> None: ...
    @overload
    def __init__(self, schema: type[E], process: Callable[[E, Any], T]) -> None: ...
    @overload
    def __init__(self, schema: Schema[S], process: Callable[[S, Any], T]) -> None: ...
    @overload
    def __init__(self, schema: type[E], process: Callable[Concatenate[E, ...], T]) -> None: ...
    @overload
    def __init__(self, schema: Schema[S], process: Callable[Concatenate[S, ...], T]) -> None: ...

    def __init__(self, schema: type[Entity] | Schema[object], process: Callable[..., T] | None = None) -> None:
        if process is not None and not callable(process):  # else every read would fail, far from here
            raise DefinitionError(f"Query: process must be callable (value, *args) or None, not {process!r}")
        self.schema = schema
        self.node = required_node(schema, "Query")
        self.process = process

    def __repr__(self) -> str:
        return f"Query({schema_name(self.node)})"

    def has_entities(self) -> bool:
        return self.node.has_entities()

    def deletes_entities(self) -> bool:
        return self.node.deletes_entities()

    def normalize_value(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        return self.node.normalize_value(value, parent, key, ctx)

    def denormalize_value(self, value: object, unvisit: Unvisit) -> object:
        result = self.node.denormalize_value(value, unvisit)
        if result is None or result is INVALID or self.process is None:
            return result
        try:
            return freeze(self.process(result, *unvisit.args))
        except RestLayerError:
            raise
        except Exception as exc:  # the caller's function: named, with the original as the cause
            label = getattr(self.process, "__qualname__", repr(self.process))
            raise RestLayerError(f"{self!r}: process {label} raised {type(exc).__name__}: {exc}") from exc

    def query_key(self, args: tuple[object, ...], unvisit: Unvisit) -> object:
        return self.node.query_key(args, unvisit)


class All(Schema[list[T]]):
    """Every stored entity of a type (or of several, with a Union-like attribute).

    `All(Todo)` reads one table; `All({"users": User, "groups": Group}, "type")`
    reads every member's table, as a `Union` of them would (an existing
    `Union` may be given instead of the dict). Anything else is refused here:
    it names no table, so every read of it would be wrong.
    """

    __slots__ = ("node", "schema", "union")

    schema: type[Entity] | Mapping[str, type[Entity]] | Union
    node: type[Entity] | Union  # what reads each stored item

    @overload
    def __init__(self: All[E], schema: type[E], schema_attribute: None = None) -> None: ...
    @overload
    def __init__(self: All[E], schema: Mapping[str, type[E]], schema_attribute: Attribute) -> None: ...
    @overload
    def __init__(self: All[Entity], schema: Union, schema_attribute: None = None) -> None: ...

    def __init__(
        self, schema: type[Entity] | Mapping[str, type[Entity]] | Union, schema_attribute: Attribute | None = None
    ) -> None:
        self.schema = schema
        self.union: Union | None
        if isinstance(schema, Mapping):
            self.union = self.node = Union(schema, schema_attribute)
        elif isinstance(schema, Union):
            self.union = self.node = _own_union(schema, schema_attribute)
        else:
            self.union, self.node = None, _entity_class(schema)

    def __repr__(self) -> str:
        return f"All({schema_name(self.schema)})"

    def normalize_value(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        node = self.node
        items: Iterable[object]
        if isinstance(value, Mapping):
            items = value.values()  # a dict: its values, like a list
        elif isinstance(value, (list, tuple)):
            items = value
        else:
            raise SchemaError(f"Expected a list, found {type(value).__name__}", schema=schema_name(self))
        return [node.normalize_value(v, parent, key, ctx) for v in items if v is not None]

    def denormalize_value(self, value: list[object] | InvalidType, unvisit: Unvisit) -> object:
        if value is INVALID:  # no table yet (read through a dict schema)
            return INVALID
        node = self.node
        out = []
        for item in value:
            result = node.denormalize_value(item, unvisit)
            if result is not None and result is not INVALID:
                out.append(result)
        return FrozenList(out)

    def query_key(self, args: tuple[object, ...], unvisit: Unvisit) -> object:
        """All live pks in insertion order; INVALID when no member type has a table yet."""
        if self.union is None:
            return _live_pks(self.node.key, unvisit)
        found: list[dict[str, str]] = []
        any_table = False
        for name, node in self.union.nodes.items():
            pks = _live_pks(node.key, unvisit)
            if pks is not INVALID:
                any_table = True
                found.extend({"id": pk, "schema": name} for pk in pks)
        return found if any_table else INVALID


def _own_union(union: Union, schema_attribute: Attribute | None) -> Union:
    """`All(Union(...))`: the Union reads each stored item; its own attribute classifies them."""
    if schema_attribute is not None:
        raise DefinitionError("All(Union(...)) takes no schema_attribute: the Union has its own")
    return union


def _entity_class(schema: object) -> type[Entity]:
    """The Entity class whose table `All(schema)` reads (DefinitionError for any other schema)."""
    node = compile_schema(schema)
    if not isinstance(node, type):
        raise DefinitionError(
            "All takes an Entity class, a Union, or a dict of Entity classes with a schema_attribute;"
            f" got {schema_name(node)}"
        )
    return node


def _live_pks(key: str, unvisit: Unvisit) -> list[str] | InvalidType:
    """The pks of `key`'s table in the order first stored, deleted ones skipped (INVALID: no table)."""
    table = unvisit.entities.get(key)
    if table is None:
        return INVALID
    order = table.in_order() if table.__class__ is OrderedPMap else list(table)
    get = table.get
    return [pk for pk in order if get(pk) is not INVALID]
