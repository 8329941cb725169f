"""`Invalidate`: a response naming an entity that the server deleted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, overload

from restlayer._text import to_text
from restlayer._typing import E, T
from restlayer.errors import DefinitionError, SchemaError
from restlayer.schema._base import Schema, required_node, schema_name
from restlayer.schema._entity import usable_pk
from restlayer.schema._union import Union

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Unvisit
    from restlayer.schema._entity import Entity
    from restlayer.schema._normalize import Normalizer


class Invalidate(Schema[Any], Generic[T]):
    """Marks the entity in the response deleted; the response may be the pk itself.

    `Invalidate[Todo]` names the entity type it deletes. As a schema it reads as `Any`:
    a deleting endpoint returns its reply (what names the deleted item), never an entity.
    """

    __slots__ = ("node", "schema")

    node: type[Entity] | Union

    @overload
    def __init__(self: Invalidate[E], schema: type[E]) -> None: ...
    @overload
    def __init__(self, schema: Schema[T]) -> None: ...
    def __init__(self, schema: type[Entity] | Schema[object]) -> None:
        self.schema = schema
        node = required_node(schema, "Invalidate")
        if not isinstance(node, (type, Union)):
            raise DefinitionError(f"Invalidate holds an Entity class or a Union, got {schema_name(node)}")
        self.node = node

    def __repr__(self) -> str:
        return f"Invalidate({schema_name(self.node)})"

    @property
    def key(self) -> str:
        return self.node.key

    def deletes_entities(self) -> bool:
        return True

    def normalize_value(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        name = None
        if isinstance(self.node, Union):
            name, node = self.node.pick(value, parent, key)
            if node is None:
                raise SchemaError("Invalidate could not pick a Union member", schema=repr(self))
        else:
            node = self.node
        if isinstance(value, Mapping):
            processed = node.process(value, parent, key, ctx.args)
            pk = node.compute_pk(processed if processed is not None else value, parent, key, ctx.args)
        elif isinstance(value, (str, int)) and not isinstance(value, bool):
            pk = usable_pk(to_text(value))
        else:
            raise SchemaError(f"Expected an object or a primary key, found {type(value).__name__}", schema=repr(self))
        if pk is None:
            raise SchemaError("Missing usable primary key", schema=repr(self))
        ctx.invalidate(node.key, pk)
        return pk if name is None else {"id": pk, "schema": name}

    def denormalize_value(self, value: object, unvisit: Unvisit) -> object:
        return self.node.denormalize_value(value, unvisit)
