"""The names a shared store keeps rows under (a key and its schema's fingerprint): for tests reading Redis or a file."""

from __future__ import annotations

from typing import Any

from restlayer.core._versions import fingerprint, row_keys, versioned


def endpoint_store_key(endpoint: Any, *args: Any) -> str:
    """The name a shared store keeps `endpoint(*args)` under: its key and its schema's fingerprint."""
    return versioned(endpoint.key(*args), fingerprint(endpoint.schema))


def row_store_key(schema: Any, key: str | None = None) -> str:
    """The name a shared store keeps the rows of entity key `key` (default: `schema`'s own) written with `schema`."""
    key = schema.key if key is None else key
    return versioned(key, row_keys(schema)[key])
