"""Container schemas: `Array` (a list), `Object` (a dict with some members normalized), `Values`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, overload

from restlayer._typing import E, T
from restlayer.errors import SchemaError
from restlayer.schema._base import INVALID, InvalidType, Schema, compile_schema, normalize_members, schema_name
from restlayer.schema._frozen import FrozenDict, FrozenList, freeze, freeze_members

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Unvisit
    from restlayer.schema._normalize import Normalizer


def _items(value: object, owner: Schema[object]) -> list[object]:
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, Mapping):
        # Like the original, an object of records (keyed by id) is read as its values; any other
        # object (a page such as {"results": [...], "count": 3}) is not a list and is refused.
        items = list(value.values())
        if all(item is None or isinstance(item, Mapping) for item in items):
            return items
        raise SchemaError(
            "Expected a list, found an object whose values are not all records", schema=schema_name(owner)
        )
    raise SchemaError(f"Expected a list, found {type(value).__name__}", schema=schema_name(owner))


class Array(Schema[list[T]]):
    """A list of one schema; `[Todo]` is the shorthand. `None` items stay `None`; missing entities are dropped."""

    __slots__ = ("node", "schema")

    @overload
    def __init__(self: Array[E], schema: type[E]) -> None: ...
    @overload
    def __init__(self, schema: Schema[T]) -> None: ...
    @overload
    def __init__(self: Array[dict[str, Any]], schema: Mapping[str, object]) -> None: ...
    @overload
    def __init__(self: Array[Any], schema: None) -> None: ...
    def __init__(self, schema: object) -> None:
        self.schema = schema
        self.node = compile_schema(schema)

    def __repr__(self) -> str:
        return f"[{schema_name(self.node)}]"

    def has_entities(self) -> bool:
        node = self.node
        return node is not None and node.has_entities()

    def deletes_entities(self) -> bool:
        node = self.node
        return node is not None and node.deletes_entities()

    def normalize_value(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> FrozenList[object]:
        node = self.node
        out: list[object] = []
        index = -1
        try:
            for item in _items(value, self):
                index += 1
                if item is None:
                    out.append(None)  # kept in place, like the original
                    continue
                result = node.normalize_value(item, parent, key, ctx) if node else freeze(item)
                if result is not None:
                    out.append(result)
        except SchemaError as exc:
            exc.path = (index, *exc.path)
            raise
        return FrozenList(out)

    def denormalize_value(self, value: list[object], unvisit: Unvisit) -> list[object] | InvalidType:
        node = self.node
        if node is None:
            return value
        if not isinstance(value, (list, tuple)):  # not what normalize stores (an `update=` gone wrong): unusable
            return INVALID
        out: list[object] = []
        for item in value:
            if item is None:
                out.append(None)  # a None member of the response stays None
                continue
            result = node.denormalize_value(item, unvisit)
            if result is not None and result is not INVALID:  # missing or deleted: dropped
                out.append(result)
        return FrozenList(out)  # shared by every reader of a memoized read: read-only


class Object(Schema[dict[str, Any]]):
    """A dict whose named members are normalized; `{"results": [Todo]}` is the shorthand."""

    __slots__ = ("nodes", "schema")

    def __init__(self, schema: Mapping[str, object]) -> None:
        self.schema = dict(schema)
        self.nodes = {k: compile_schema(v) for k, v in schema.items()}

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {schema_name(v)}" for k, v in self.nodes.items()) + "}"

    def has_entities(self) -> bool:
        return any(node is not None and node.has_entities() for node in self.nodes.values())

    def deletes_entities(self) -> bool:
        return any(node is not None and node.deletes_entities() for node in self.nodes.values())

    def normalize_value(
        self, value: object, parent: object, key: str | None, ctx: Normalizer
    ) -> FrozenDict[str, object]:
        if not isinstance(value, (dict, Mapping)):
            raise SchemaError(f"Expected an object, found {type(value).__name__}", schema=repr(self))
        out: dict[str, object] = dict(value)
        normalize_members(out, self.nodes, value, ctx)
        freeze_members(out)
        return FrozenDict(out)

    def denormalize_value(self, value: object, unvisit: Unvisit) -> object:
        if not isinstance(value, (dict, Mapping)):
            return value
        out: dict[str, object] = dict(value)
        for name, node in self.nodes.items():
            child = out.get(name)
            if child is not None and node is not None:
                result = node.denormalize_value(child, unvisit)
                if result is INVALID:
                    return INVALID
                out[name] = result
        return FrozenDict(out)

    def query_key(self, args: tuple[object, ...], unvisit: Unvisit) -> dict[str, object]:
        """Each schema member queried (None when not found); literal members as written in the schema."""
        out: dict[str, object] = {}
        for name, node in self.nodes.items():
            if node is None:
                out[name] = self.schema[name]
                continue
            member = node.query_key(args, unvisit)
            out[name] = None if member is INVALID else member
        return out

    def found_all(self, key: Mapping[str, object]) -> bool:
        """Whether a `query_key` result found every schema member (else the read counts as not found)."""
        for name, node in self.nodes.items():
            if node is None:
                continue
            member = key.get(name)
            if member is None or (
                isinstance(node, Object) and isinstance(member, Mapping) and not node.found_all(member)
            ):
                return False
        return True


class Values(Schema[dict[str, T]]):
    """A dict of name -> one schema (e.g. id -> Todo); `None` members are dropped."""

    __slots__ = ("node", "schema")

    @overload
    def __init__(self: Values[E], schema: type[E]) -> None: ...
    @overload
    def __init__(self, schema: Schema[T]) -> None: ...
    @overload
    def __init__(self: Values[dict[str, Any]], schema: Mapping[str, object]) -> None: ...
    @overload
    def __init__(self: Values[Any], schema: None) -> None: ...
    def __init__(self, schema: object) -> None:
        self.schema = schema
        self.node = compile_schema(schema)

    def __repr__(self) -> str:
        return "{" + schema_name(self.node) + "}"

    def has_entities(self) -> bool:
        node = self.node
        return node is not None and node.has_entities()

    def deletes_entities(self) -> bool:
        node = self.node
        return node is not None and node.deletes_entities()

    def normalize_value(
        self, value: object, parent: object, key: str | None, ctx: Normalizer
    ) -> FrozenDict[str, object]:
        if not isinstance(value, (dict, Mapping)):
            raise SchemaError(f"Expected an object, found {type(value).__name__}", schema=repr(self))
        node = self.node
        out: dict[str, object] = {}
        for name, item in value.items():
            if item is None:
                continue
            try:
                out[name] = node.normalize_value(item, value, name, ctx) if node else freeze(item)
            except SchemaError as exc:
                exc.path = (name, *exc.path)
                raise
        return FrozenDict(out)

    def denormalize_value(self, value: Mapping[str, object], unvisit: Unvisit) -> dict[str, object]:
        node = self.node
        out: dict[str, object] = {}
        for name, item in value.items():
            result = node.denormalize_value(item, unvisit) if node and item is not None else item
            if result is not None and result is not INVALID:
                out[name] = result
        return FrozenDict(out)
