"""`Union`: one of several entity types, chosen by an attribute of the data."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from restlayer.errors import SchemaError
from restlayer.schema._base import Schema, compile_schema

if TYPE_CHECKING:
    from restlayer.schema._denormalize import Unvisit
    from restlayer.schema._entity import Entity  # noqa: F401  (named in the base class below)
    from restlayer.schema._normalize import Normalizer

Attribute = str | Callable[[Any, Any, Any], str]


class Union(Schema["Entity"]):
    """Polymorphic entity: `Union({"users": User, "groups": Group}, "type")`.

    Normalized to `{"id": pk, "schema": name}`; `schema_attribute` is a member
    name or a function `(value, parent, key) -> name`.
    """

    __slots__ = ("_attr", "nodes", "schema_attribute", "schemas")

    def __init__(self, schemas: Mapping[str, Any], schema_attribute: Attribute | None = None) -> None:
        if schema_attribute is None:
            raise TypeError("Union requires a schema_attribute (a member name or a function)")
        self.schemas = dict(schemas)
        self.nodes = {name: compile_schema(s) for name, s in schemas.items()}
        self.schema_attribute = schema_attribute
        if callable(schema_attribute):
            self._attr = schema_attribute
        else:
            name = schema_attribute
            self._attr = lambda value, parent, key: value.get(name)

    def __repr__(self) -> str:
        return "Union(" + ";".join(getattr(n, "key", repr(n)) for n in self.nodes.values()) + ")"

    @property
    def key(self) -> str:
        """Member entity keys joined by `;` (used in Collection keys)."""
        return ";".join(getattr(n, "key", repr(n)) for n in self.nodes.values())

    def pick(self, value: Any, parent: Any = None, key: Any = None) -> tuple[str | None, Any]:
        """(name, schema) for an un-normalized value, or (None, None) when unknown."""
        if not isinstance(value, Mapping):
            return None, None
        name = self._attr(value, parent, key)
        if name is None:
            return None, None
        if not isinstance(name, str):
            raise SchemaError(f"Union type attribute must be a string, found {type(name).__name__}", schema=repr(self))
        return name, self.nodes.get(name)

    def normalize_value(self, value: Any, parent: Any, key: str | None, ctx: Normalizer) -> Any:
        if not isinstance(value, Mapping):
            raise SchemaError(f"Expected an object, found {type(value).__name__}", schema=repr(self))
        name, node = self.pick(value, parent, key)
        if node is None:
            return value
        return {"id": node.normalize_value(value, parent, key, ctx), "schema": name}

    def denormalize_value(self, value: Any, unvisit: Unvisit) -> Any:
        if not isinstance(value, Mapping):
            return value
        name = value.get("schema")
        node = self.nodes.get(name) if "id" in value and isinstance(name, str) else None
        if node is not None:
            return node.denormalize_value(value["id"], unvisit)
        _, node = self.pick(value)
        return value if node is None else node.denormalize_value(value, unvisit)

    def query_key(self, args: tuple[Any, ...], unvisit: Unvisit) -> Any:
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
