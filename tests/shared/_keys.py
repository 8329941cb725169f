"""The names a shared store keeps rows under (a key and its schema's fingerprint), for tests reading Redis or a
file, and a second version of the example API's Todo, for the tests of two versions sharing one store."""

from __future__ import annotations

from typing import Any

from restlayer.core._versions import fingerprint, row_keys, versioned
from restlayer.schema import Entity


def endpoint_store_key(endpoint: Any, *args: Any) -> str:
    """The name a shared store keeps `endpoint(*args)` under: its key and its schema's fingerprint."""
    return versioned(endpoint.key(*args), fingerprint(endpoint.schema))


def row_store_key(schema: Any, key: str | None = None) -> str:
    """The name a shared store keeps the rows of entity key `key` (default: `schema`'s own) written with `schema`."""
    key = schema.key if key is None else key
    return versioned(key, row_keys(schema)[key])


class Todo2(Entity):
    """The next version of the example API's Todo: `title` is read as `headline`."""

    key = "Todo"
    id: int | None = None
    userId: int = 1
    headline: str = ""
    completed: bool = False

    @classmethod
    def process(cls, value: Any, parent: Any, key: Any, args: Any) -> Any:
        value = dict(value)
        if "title" in value:
            value["headline"] = value.pop("title")
        return value
