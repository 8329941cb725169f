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
        if isinstance(self.node, Union):
            name, node, pk = self._union_target(self.node, value, parent, key, ctx)
        else:
            name, node, pk = None, self.node, self._pk(self.node, value, parent, key, ctx)
        ctx.invalidate(node.key, pk)
        return pk if name is None else {"id": pk, "schema": name}

    def _pk(self, node: type[Entity], value: object, parent: object, key: str | None, ctx: Normalizer) -> str:
        """The pk `value` names for entity type `node`: a record's (processed), or the value itself."""
        if isinstance(value, Mapping):
            processed = node.process(value, parent, key, ctx.args)
            pk = node.compute_pk(processed if processed is not None else value, parent, key, ctx.args)
        elif isinstance(value, (str, int)) and not isinstance(value, bool):
            pk = usable_pk(to_text(value))
        else:
            raise SchemaError(f"Expected an object or a primary key, found {type(value).__name__}", schema=repr(self))
        if pk is None:
            raise SchemaError("Missing usable primary key", schema=repr(self))
        return pk

    def _union_target(
        self, union: Union, value: object, parent: object, key: str | None, ctx: Normalizer
    ) -> tuple[str, type[Entity], str]:
        """(member name, entity type, pk) to delete: the member the value names by its type attribute.

        A delete's reply (or, for an empty reply, its URL params) seldom names the type, so without
        it the one member that stores a record under the pk is meant; none or several is an error.
        """
        name, node = union.pick(value, parent, key)
        if name is not None and node is not None:
            return name, node, self._pk(node, value, parent, key, ctx)
        storing: list[tuple[str, type[Entity], str]] = []
        for member_name, member in union.nodes.items():
            try:
                pk = self._pk(member, value, parent, key, ctx)
            except SchemaError:
                continue
            if isinstance(ctx.get(member.key, pk), Mapping):
                storing.append((member_name, member, pk))
        if len(storing) == 1:
            return storing[0]
        which = "no member stores" if not storing else "several members store"
        raise SchemaError(
            f"Invalidate could not pick a Union member: the value names no known type and {which} its pk",
            schema=repr(self),
        )

    def denormalize_value(self, value: object, unvisit: Unvisit) -> object:
        return self.node.denormalize_value(value, unvisit)
