"""`Union`: one of several entity types, chosen by an attribute of the data."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from restlayer.errors import DefinitionError, SchemaError
from restlayer.schema._base import Schema, compile_schema, schema_name

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Unvisit
    from restlayer.schema._entity import Entity
    from restlayer.schema._normalize import Normalizer

#: A member name, or a function `(value, parent, key) -> name`.
Attribute = str | Callable[[Mapping[str, object], object, object], object]


class Union(Schema["Entity"]):
    """Polymorphic entity: `Union({"users": User, "groups": Group}, "type")`.

    Normalized to `{"id": pk, "schema": name}`; `schema_attribute` is a member
    name or a function `(value, parent, key) -> name`.
    """

    __slots__ = ("_attr", "nodes", "schema_attribute", "schemas")

    def __init__(self, schemas: Mapping[str, type[Entity]], schema_attribute: Attribute | None = None) -> None:
        if schema_attribute is None:
            raise DefinitionError("Union requires a schema_attribute (a member name or a function)")
        self.schemas = dict(schemas)
        self.nodes = {name: _member(name, s) for name, s in schemas.items()}
        self.schema_attribute = schema_attribute
        self._attr: Callable[[Mapping[str, object], object, object], object]
        if callable(schema_attribute):
            self._attr = schema_attribute
        else:
            name = schema_attribute
            self._attr = lambda value, parent, key: value.get(name)

    def __repr__(self) -> str:
        return "Union(" + self.key + ")"

    @property
    def key(self) -> str:
        """Member entity keys joined by `;` (used in Collection keys)."""
        return ";".join(n.key for n in self.nodes.values())

    def pick(
        self, value: object, parent: object = None, key: object = None
    ) -> tuple[str, type[Entity] | None] | tuple[None, None]:
        """(name, schema) for an un-normalized value, or (None, None) when unknown."""
        if not isinstance(value, Mapping):
            return None, None
        name = self._attr(value, parent, key)
        if name is None:
            return None, None
        if not isinstance(name, str):
            raise SchemaError(f"Union type attribute must be a string, found {type(name).__name__}", schema=repr(self))
        return name, self.nodes.get(name)

    def normalize_value(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        if not isinstance(value, Mapping):
            raise SchemaError(f"Expected an object, found {type(value).__name__}", schema=repr(self))
        name, node = self.pick(value, parent, key)
        if node is None:
            return value
        return {"id": node.normalize_value(value, parent, key, ctx), "schema": name}

    def denormalize_value(self, value: object, unvisit: Unvisit) -> object:
        if not isinstance(value, Mapping):
            return value
        name = value.get("schema")
        node = self.nodes.get(name) if "id" in value and isinstance(name, str) else None
        if node is not None:
            return node.denormalize_value(value["id"], unvisit)
        _, node = self.pick(value)
        return value if node is None else node.denormalize_value(value, unvisit)

    def query_key(self, args: tuple[object, ...], unvisit: Unvisit) -> object:
        """The member named by the first argument's attribute; without it, the first member that finds one."""
        if not args or not args[0]:
            return None
        try:
            name, node = self.pick(args[0])
        except SchemaError:
            name, node = None, None
        if node is not None:
            pk = node.query_key(args, unvisit)
            return None if pk is None else {"id": pk, "schema": name}
        for name, node in self.nodes.items():
            pk = node.query_key(args, unvisit)
            if pk is not None:
                return {"id": pk, "schema": name}
        return None


def _member(name: str, schema: object) -> type[Entity]:
    """A Union member: an Entity class (its pk and key name the stored record)."""
    node = compile_schema(schema)
    if not isinstance(node, type):
        raise DefinitionError(f"Union member {name!r} must be an Entity class, got {schema_name(node)}")
    return node
