"""What every schema shares: the deletion marker, the schema protocol and shorthand compilation.

Plain `dict` and `list` schemas (`{"results": [Todo]}`) are shorthands; they are
compiled once into `Object` and `Array` nodes so the hot paths dispatch with a
single method call per node instead of type tests.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeAlias, cast

from restlayer._text import to_text
from restlayer._typing import T_co
from restlayer.errors import DefinitionError, SchemaError

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Unvisit
    from restlayer.schema._entity import Entity
    from restlayer.schema._normalize import Normalizer


class InvalidType(enum.Enum):
    """The type of `INVALID`: one member, so `x is INVALID` narrows `T | InvalidType` to `T` for checkers."""

    INVALID = "INVALID"

    def __repr__(self) -> str:
        return "INVALID"

    __str__ = __repr__

    def __bool__(self) -> Literal[False]:
        return False


INVALID: Final = InvalidType.INVALID
"""Stands for a deleted entity in the store, and for an invalid read while denormalizing."""

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
    arguments, or `None` when the store cannot answer. `has_entities` and
    `deletes_entities` tell readers what the type does, so a new schema type
    needs no change anywhere else.
    """

    __slots__ = ()

    def normalize_value(
        self, value: object, parent: object, key: str | None, ctx: Normalizer
    ) -> object:  # pragma: no cover - abstract
        raise NotImplementedError

    # `value` is stored (normalized) JSON, whose shape each schema knows and reads unchecked.
    def denormalize_value(self, value: Any, unvisit: Unvisit) -> object:  # pragma: no cover
        raise NotImplementedError

    def query_key(self, args: tuple[object, ...], unvisit: Unvisit) -> object:
        """Most schemas cannot be read from the store without a response."""
        return None

    def has_entities(self) -> bool:
        """Whether values of this schema reference stored entities, so a read must denormalize them.

        Default: True (the safe answer); containers answer for their members.
        """
        return True

    def deletes_entities(self) -> bool:
        """Whether normalizing by this schema marks entities deleted (an `Invalidate` inside).

        Default: False; containers answer for their members.
        """
        return False


def index_text(value: object) -> str | None:
    """The key an `indexes` field's value is indexed and looked up under; None when it has none.

    A dict, list or other container has no text of its own: its repr would let a string that
    reads like it find the record, and an equal value written in another order miss it, so such
    values are not indexed and a lookup by one finds nothing.
    """
    if value is None or isinstance(value, (Mapping, list, tuple, set, frozenset)):
        return None
    return to_text(value)


def normalize_members(
    record: dict[str, object], nodes: Mapping[str, Node | None], parent: object, ctx: Normalizer
) -> None:
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


SchemaLike: TypeAlias = "type[Entity] | Schema[object] | Mapping[str, object] | list[Any] | None"
"""What a `schema` argument accepts: an Entity class, a schema node, a dict or one-item list shorthand, or None.

None keeps the data as it is. (`list[Any]`: a list is invariant, so `[Todo]` held in a
`list[type[Todo]]` variable must fit too.)
"""

#: A list shorthand of another shorthand (`[[Todo]]`, `[{"results": [Todo]}]`); endpoints read it as `list[Any]`.
NestedListShorthand: TypeAlias = "list[list[Any] | Mapping[str, object]]"

#: A compiled schema: an Entity class or a Schema instance (`None` stands for "as is").
Node: TypeAlias = "Schema[object] | type[Entity]"

_compiled: dict[Hashable, Node | None] = {}
_MAX_COMPILED = 4096


def _signature(schema: object) -> Hashable:
    """A hashable description of a shorthand, so equal shorthands share one node."""
    if type(schema) is list and len(schema) == 1 and isinstance(schema[0], type):
        return ("list", schema[0])  # `[Todo]`, the common case, without the general walk
    if isinstance(schema, list):
        return ("list", *(_signature(s) for s in schema))
    if isinstance(schema, dict):
        return ("dict", *((k, _signature(v)) for k, v in schema.items()))
    try:
        hash(schema)
    except TypeError:
        return ("id", id(schema))
    return schema


def compile_schema(schema: object) -> Node | None:
    """The node tree for `schema`, compiling dict/list shorthands (cached by their structure)."""
    if schema is None or isinstance(schema, Schema):
        return schema
    if isinstance(schema, type):
        if hasattr(schema, "normalize_value"):
            return cast("type[Entity]", schema)  # an Entity class (or one built to the same protocol)
        raise DefinitionError(f"{schema.__name__} is not a schema (expected an Entity subclass)")
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


def required_node(schema: object, owner: str) -> Node:
    """`compile_schema` for a schema that must be there (`Query(...)`, `Invalidate(...)`): None is a TypeError."""
    node = compile_schema(schema)
    if node is None:
        raise DefinitionError(f"{owner} needs a schema (an Entity class or a schema node), got {schema!r}")
    return node


def _compile_shorthand(schema: Mapping[str, object] | list[object]) -> Node:
    from restlayer.schema._containers import Array, Object

    if isinstance(schema, list):
        if len(schema) != 1:
            raise DefinitionError(f"A list schema holds exactly one schema, got {len(schema)}")
        node: Node = Array(schema[0])  # type: ignore[call-overload]  # any member: compiled in turn
        return node
    return Object(schema)


def schema_name(node: object) -> str:
    """A readable name for error messages."""
    if isinstance(node, type):
        return node.__name__
    return repr(node)


KeyFn = Callable[..., object]
