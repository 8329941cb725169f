"""Store backends a `Controller(shared=...)` writes through: Redis (a fleet) and SQLite (warm restarts).

`SQLiteStore` needs only the standard library; `RedisStore` needs the
`restlayer[redis]` extra and is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from restlayer.stores.sqlite import SQLiteStore

if TYPE_CHECKING:
    from restlayer.stores.redis import RedisStore


def __getattr__(name: str) -> object:
    """`RedisStore`, imported on first use (redis-py is an optional extra)."""
    if name == "RedisStore":
        from restlayer.stores.redis import RedisStore

        return RedisStore
    raise AttributeError(name)


__all__ = ["RedisStore", "SQLiteStore"]
