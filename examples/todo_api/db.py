"""sqlite3 persistence for the example API: users, todos and comments.

The API speaks camelCase (``userId``) while the tables use snake_case columns; the
mapping lives in :data:`RESOURCES`. One connection guarded by a lock is shared by
every thread, so the server and the test thread may both touch it.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

Record = dict[str, Any]


@dataclass(frozen=True)
class Field:
    """One API field of a resource: its column, Python type and create-time rules."""

    name: str
    column: str
    py_type: type
    required: bool = False
    default: Any = None


@dataclass(frozen=True)
class Resource:
    """A table exposed by the API; ``fields`` excludes the ``id`` primary key."""

    name: str
    fields: tuple[Field, ...]

    def field(self, name: str) -> Field | None:
        """The field called ``name`` (API spelling), or None."""
        for f in self.fields:
            if f.name == name:
                return f
        return None

    @property
    def field_names(self) -> tuple[str, ...]:
        """Every API field name, ``id`` first."""
        return ("id", *(f.name for f in self.fields))


RESOURCES: dict[str, Resource] = {
    "users": Resource(
        "users",
        (
            Field("username", "username", str, required=True),
            Field("name", "name", str, default=""),
            Field("email", "email", str, default=""),
        ),
    ),
    "todos": Resource(
        "todos",
        (
            Field("userId", "user_id", int, default=1),
            Field("title", "title", str, required=True),
            Field("completed", "completed", bool, default=False),
        ),
    ),
    "comments": Resource(
        "comments",
        (
            Field("todoId", "todo_id", int, required=True),
            Field("userId", "user_id", int, default=1),
            Field("body", "body", str, required=True),
        ),
    ),
}

SEED_USERS: tuple[Record, ...] = (
    {"id": 1, "username": "bret", "name": "Leanne Graham", "email": "leanne@example.com"},
    {"id": 2, "username": "antonette", "name": "Ervin Howell", "email": "ervin@example.com"},
    {"id": 3, "username": "samantha", "name": "Clementine Bauch", "email": "clem@example.com"},
)
SEED_TODOS: tuple[Record, ...] = (
    {"id": 1, "userId": 1, "title": "delectus aut autem", "completed": False},
    {"id": 2, "userId": 1, "title": "quis ut nam facilis", "completed": False},
    {"id": 3, "userId": 1, "title": "fugiat veniam minus", "completed": True},
    {"id": 4, "userId": 2, "title": "et porro tempora", "completed": True},
    {"id": 5, "userId": 2, "title": "laboriosam mollitia", "completed": False},
    {"id": 6, "userId": 2, "title": "qui ullam ratione", "completed": True},
)
SEED_COMMENTS: tuple[Record, ...] = (
    {"id": 1, "todoId": 1, "userId": 2, "body": "Looks good to me"},
    {"id": 2, "todoId": 1, "userId": 3, "body": "Needs more detail"},
    {"id": 3, "todoId": 4, "userId": 1, "body": "Done already?"},
)
SEED: dict[str, tuple[Record, ...]] = {
    "users": SEED_USERS,
    "todos": SEED_TODOS,
    "comments": SEED_COMMENTS,
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    email TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS todos (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL,
    title TEXT NOT NULL,
    completed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    todo_id INTEGER NOT NULL,
    user_id INTEGER NOT NULL,
    body TEXT NOT NULL
);
"""


def fits_integer_column(value: int) -> bool:
    """Whether SQLite can store `value` as an INTEGER (a signed 64-bit number)."""
    return -(2**63) <= value < 2**63


def _resource(name: str) -> Resource:
    """Look up a resource by table name; unknown names are a programming error."""
    try:
        return RESOURCES[name]
    except KeyError:
        raise ValueError(f"unknown resource {name!r}") from None


class TodoDB:
    """Thread-safe sqlite store of users, todos and comments, seeded on creation.

    ``path=None`` puts the database file in a fresh temporary directory that
    :meth:`close` removes. Ids are AUTOINCREMENT so a deleted id is never reused
    (until :meth:`reset`), which keeps cache tests unambiguous.
    """

    def __init__(self, path: str | Path | None = None, *, seed: bool = True) -> None:
        self._tmpdir: str | None = None
        if path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="restlayer-todo-api-")
            path = Path(self._tmpdir) / "todo.sqlite3"
        self.path = str(path)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None
        )
        self._conn.row_factory = sqlite3.Row
        with self._lock:
            # Example data, not a bank: skip fsyncs so reset() between tests is ~free.
            self._conn.execute("PRAGMA synchronous = OFF")
            self._conn.execute("PRAGMA journal_mode = MEMORY")
            self._conn.executescript(_SCHEMA)
        if seed:
            self.reset()

    # -- lifecycle -------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection; raises once :meth:`close` was called."""
        if self._conn is None:
            raise RuntimeError("TodoDB is closed")
        return self._conn

    def close(self) -> None:
        """Close the connection and delete the temporary directory, if we made one."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)
                self._tmpdir = None

    def __enter__(self) -> TodoDB:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def reset(self) -> None:
        """Drop every row and restore the seed data (ids restart after the seed)."""
        with self._lock:
            conn = self.conn
            conn.execute("BEGIN")
            try:
                for name in RESOURCES:
                    conn.execute(f"DELETE FROM {name}")
                conn.execute("DELETE FROM sqlite_sequence")
                for name, rows in SEED.items():
                    for row in rows:
                        self._insert(name, row)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    # -- queries ---------------------------------------------------------------

    def find(
        self,
        resource: str,
        filters: Mapping[str, Any] | None = None,
        *,
        order_by: str = "id",
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Record]:
        """Rows of ``resource`` matching ``filters`` (API field -> exact value).

        ``order_by`` is an API field name, optionally prefixed with ``-`` for
        descending; ties are broken by id so the order is always deterministic.
        """
        res = _resource(resource)
        where, params = self._where(res, filters or {})
        desc = order_by.startswith("-")
        key = order_by.removeprefix("-")
        column = self._column(res, key)
        direction = "DESC" if desc else "ASC"
        sql = f"SELECT * FROM {res.name}{where} ORDER BY {column} {direction}, id {direction}"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params = [*params, limit, offset]
        with self._lock:
            rows = self.conn.execute(sql, params).fetchall()
        return [self._to_record(res, row) for row in rows]

    def count(self, resource: str, filters: Mapping[str, Any] | None = None) -> int:
        """How many rows of ``resource`` match ``filters``."""
        res = _resource(resource)
        where, params = self._where(res, filters or {})
        with self._lock:
            (n,) = self.conn.execute(f"SELECT COUNT(*) FROM {res.name}{where}", params).fetchone()
        return int(n)

    def get(self, resource: str, id: int) -> Record | None:
        """The row with primary key ``id``, or None."""
        res = _resource(resource)
        if not fits_integer_column(id):  # SQLite would raise OverflowError: no such row can exist
            return None
        with self._lock:
            row = self.conn.execute(f"SELECT * FROM {res.name} WHERE id = ?", (id,)).fetchone()
        return None if row is None else self._to_record(res, row)

    def insert(self, resource: str, values: Mapping[str, Any]) -> Record:
        """Insert a row (API field names; ``id`` optional) and return it as stored."""
        with self._lock:
            new_id = self._insert(resource, values)
            record = self.get(resource, new_id)
        assert record is not None
        return record

    def update(self, resource: str, id: int, values: Mapping[str, Any]) -> Record | None:
        """Set the given API fields of row ``id``; returns the new row or None if absent."""
        res = _resource(resource)
        if not fits_integer_column(id):
            return None
        cols = [(self._column(res, k), self._to_column(res, k, v)) for k, v in values.items()]
        with self._lock:
            if cols:
                assignments = ", ".join(f"{c} = ?" for c, _ in cols)
                self.conn.execute(
                    f"UPDATE {res.name} SET {assignments} WHERE id = ?",
                    [*(v for _, v in cols), id],
                )
            return self.get(resource, id)

    def delete(self, resource: str, id: int) -> bool:
        """Delete row ``id``; True when it existed."""
        res = _resource(resource)
        if not fits_integer_column(id):
            return False
        with self._lock:
            cur = self.conn.execute(f"DELETE FROM {res.name} WHERE id = ?", (id,))
        return cur.rowcount > 0

    # -- helpers ---------------------------------------------------------------

    def _insert(self, resource: str, values: Mapping[str, Any]) -> int:
        """INSERT without locking or reading back; returns the new id."""
        res = _resource(resource)
        names: Sequence[str] = [k for k in values if k in res.field_names]
        cols = [self._column(res, k) for k in names]
        vals = [self._to_column(res, k, values[k]) for k in names]
        placeholders = ", ".join("?" for _ in cols)
        cur = self.conn.execute(f"INSERT INTO {res.name} ({', '.join(cols)}) VALUES ({placeholders})", vals)
        assert cur.lastrowid is not None
        return cur.lastrowid

    @staticmethod
    def _column(res: Resource, name: str) -> str:
        """The column behind API field ``name``; unknown names raise ValueError."""
        if name == "id":
            return "id"
        f = res.field(name)
        if f is None:
            raise ValueError(f"unknown field {name!r} for {res.name}")
        return f.column

    @staticmethod
    def _to_column(res: Resource, name: str, value: Any) -> Any:
        """Python value -> sqlite value (bools become 0/1)."""
        f = res.field(name)
        if f is not None and f.py_type is bool and value is not None:
            return 1 if value else 0
        return value

    def _where(self, res: Resource, filters: Mapping[str, Any]) -> tuple[str, list[Any]]:
        """A ``WHERE`` clause (or "") with its parameters for exact-match filters."""
        if not filters:
            return "", []
        parts = [f"{self._column(res, k)} = ?" for k in filters]
        params = [self._to_column(res, k, v) for k, v in filters.items()]
        return " WHERE " + " AND ".join(parts), params

    @staticmethod
    def _to_record(res: Resource, row: sqlite3.Row) -> Record:
        """sqlite row -> API dict in field order, ``id`` first."""
        record: Record = {"id": row["id"]}
        for f in res.fields:
            value = row[f.column]
            record[f.name] = bool(value) if f.py_type is bool else value
        return record
