"""What every schema shares: the deletion marker, the schema protocol and shorthand compilation.

Plain `dict` and `list` schemas (`{"results": [Todo]}`) are shorthands; they are
compiled once into `Object` and `Array` nodes so the hot paths dispatch with a
single method call per node instead of type tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeAlias

from restlayer._sentinel import Sentinel
from restlayer._typing import T_co
from restlayer.errors import SchemaError

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Unvisit
    from restlayer.schema._entity import Entity
    from restlayer.schema._normalize import Normalizer


INVALID: Any = Sentinel("INVALID")

MAX_DEPTH = 64
"""Entities nested deeper than this in one stretch are finished later from a queue, so normalize
and denormalize never recurse deeper than about MAX_DEPTH entities: any depth of data fits the stack."""


class Schema(Generic[T_co]):
    """Base of the schema nodes other than `Entity` (which implements the same methods as classmethods).

    `T_co` is the type a read returns (`Array(Todo)` is a `Schema[list[Todo]]`);
    it exists for type checkers only and costs nothing at run time.

    `normalize_value` turns input into its normalized form (writing entities
    through the `Normalizer`); `denormalize_value` rebuilds the value (or
    returns `INVALID`); `query_key` derives a denormalizable input from call
    arguments, or `None` when the store cannot answer.
    """

    __slots__ = ()

    def normalize_value(
        self, value: Any, parent: Any, key: str | None, ctx: Normalizer
    ) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def denormalize_value(self, value: Any, unvisit: Unvisit) -> Any:  # pragma: no cover
        raise NotImplementedError

    def query_key(self, args: tuple[Any, ...], unvisit: Unvisit) -> Any:
        """Most schemas cannot be read from the store without a response."""
        return None


def normalize_members(record: dict[str, Any], nodes: dict[str, Any], parent: Any, ctx: Normalizer) -> None:
    """Replace each present member of `record` named in `nodes` by its normalized form, in place.

    Shared by `Object` and `Entity`; a failure gains the member name in its path.
    """
    for name, node in nodes.items():
        child = record.get(name)
        if child is not None and node is not None:
            try:
                record[name] = node.normalize_value(child, parent, name, ctx)
            except SchemaError as exc:
                exc.path = (name, *exc.path)
                raise


#: What a `schema` argument accepts: an Entity class, a schema node, a dict or
#: one-item list shorthand, or None (data kept as is).
SchemaLike: TypeAlias = "type[Entity] | Schema[Any] | Mapping[str, Any] | list[Any] | None"

Node = Any  # a compiled schema: an Entity class or a Schema instance (or None for "as is")

_compiled: dict[Any, Node] = {}
_MAX_COMPILED = 4096


def _signature(schema: Any) -> Any:
    """A hashable description of a shorthand, so equal shorthands share one node."""
    if isinstance(schema, list):
        return ("list", *(_signature(s) for s in schema))
    if isinstance(schema, dict):
        return ("dict", *((k, _signature(v)) for k, v in schema.items()))
    try:
        hash(schema)
    except TypeError:
        return ("id", id(schema))
    return schema


def compile_schema(schema: Any) -> Node:
    """The node tree for `schema`, compiling dict/list shorthands (cached by their structure)."""
    if schema is None or isinstance(schema, Schema):
        return schema
    if isinstance(schema, type):
        if hasattr(schema, "normalize_value"):
            return schema
        raise TypeError(f"{schema.__name__} is not a schema (expected an Entity subclass)")
    if isinstance(schema, (dict, list)):
        signature = _signature(schema)
        node = _compiled.get(signature)
        if node is None:
            node = _compile_shorthand(schema)
            if len(_compiled) >= _MAX_COMPILED:
                _compiled.clear()
            _compiled[signature] = node
        return node
    return None  # a plain value in a schema position means "keep the data as is"


def _compile_shorthand(schema: dict[str, Any] | list[Any]) -> Node:
    from restlayer.schema._containers import Array, Object

    if isinstance(schema, list):
        if len(schema) != 1:
            raise TypeError(f"A list schema holds exactly one schema, got {len(schema)}")
        return Array(schema[0])
    return Object(schema)


def schema_name(node: Any) -> str:
    """A readable name for error messages."""
    if isinstance(node, type):
        return node.__name__
    return repr(node)


KeyFn = Callable[..., Any]
