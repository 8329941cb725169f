"""`SQLiteStore`: the shared-store interface on a local file, so a script restarts with its cache warm.

`Controller(shared=SQLiteStore("cache.sqlite3"))` writes every committed
response through to the file; the next run loads the file's unexpired rows
into its store at start and serves fresh ones without a request. One process
per file: there is nobody to announce changes to, and the fetch lock is local.
Calls are short synchronous statements on the event loop's thread.
"""

from __future__ import annotations

import json
import math
import secrets
import sqlite3
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from types import NoneType
from typing import TypeGuard

from restlayer._time import length_ms
from restlayer.core import Patch, Snapshot, Write
from restlayer.core._patch import EndpointRow, EntityRow, IndexRow
from restlayer.errors import ParamError, SharedStoreError
from restlayer.stores._codec import (
    dumps,
    endpoint_record,
    lifetime_ms,
    log,
    parse_endpoint,
    parse_entity,
    snapshot,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    key TEXT NOT NULL, pk TEXT NOT NULL, fetched_at REAL NOT NULL, data TEXT NOT NULL, keep_until REAL NOT NULL,
    PRIMARY KEY (key, pk));
CREATE TABLE IF NOT EXISTS endpoints (
    key TEXT PRIMARY KEY, fetched_at REAL NOT NULL, data TEXT NOT NULL, expired INTEGER NOT NULL DEFAULT 0,
    keep_until REAL NOT NULL);
CREATE TABLE IF NOT EXISTS indexes (
    key TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL, pk TEXT, PRIMARY KEY (key, field, value));
"""


#: The columns restlayer reads and writes in each of its tables.
_COLUMNS = {
    "entities": frozenset({"key", "pk", "fetched_at", "data", "keep_until"}),
    "endpoints": frozenset({"key", "fetched_at", "data", "expired", "keep_until"}),
    "indexes": frozenset({"key", "field", "value", "pk"}),
}

_SQLITE_READONLY, _SQLITE_CANTOPEN = 8, 14  # primary result codes (sqlite3 has them, its type stubs do not)
_EXPIRED, _INVALIDATED = 1, 2  # the `expired` column: 0 fresh, 1 stale, 2 invalidated (a tombstone)


def _index_row(row: Sequence[object]) -> TypeGuard[IndexRow]:
    """Whether a row of the `indexes` table is (key, field, value, pk or NULL) as text; else it is logged."""
    key, field, value, pk = row
    if isinstance(key, str) and isinstance(field, str) and isinstance(value, str) and isinstance(pk, (str, NoneType)):
        return True
    log.warning("ignored a malformed stored index row: %r", tuple(row))
    return False


def _check_file(db: sqlite3.Connection, path: Path) -> None:
    """`ParamError` when the database at `path` belongs to another program: it holds tables restlayer
    does not use, or its tables of restlayer's names lack their columns. Such a file never becomes
    usable (opening it again would fail the same way), and creating restlayer's tables in it would
    change another program's data. Run before anything is written."""
    try:
        names = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    except sqlite3.OperationalError:  # locked, an I/O error...: may pass, the caller reports (and retries) it
        raise
    except sqlite3.DatabaseError as exc:  # "file is not a database", encrypted...
        raise ParamError(f"SQLiteStore: {path} is not a SQLite database restlayer can use ({exc})") from exc
    foreign = sorted(name for name in names if name not in _COLUMNS and not name.startswith("sqlite_"))
    if foreign:
        raise ParamError(
            f"SQLiteStore: {path} is another program's database (tables {', '.join(foreign)}); "
            "give the store a file of its own"
        )
    for table in set(names) & set(_COLUMNS):
        columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        lacking = sorted(_COLUMNS[table] - columns)
        if lacking:
            raise ParamError(
                f"SQLiteStore: {path} is another program's database (its table {table} has no "
                f"{', '.join(lacking)}); give the store a file of its own"
            )


def _check_not_dir(path: Path) -> None:
    """`ParamError` for a directory: it can never be opened as the store's file (retrying is no use)."""
    if path.is_dir():
        raise ParamError(f"SQLiteStore: {path} is a directory; give the path of a file (e.g. {path / 'cache.sqlite3'})")


def _check_existing(path: Path) -> None:
    """`_check_file` on `path` when it exists, read-only (a file not there yet is created at open)."""
    _check_not_dir(path)
    if not path.is_file():
        return
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0)
    except sqlite3.Error:
        return  # unreadable now: open() reports it (and retries, it may be transient)
    try:
        _check_file(db, path)
    except sqlite3.Error:
        return  # locked by a writer, say: open() looks again
    finally:
        db.close()


def _unwritable(exc: sqlite3.Error) -> bool:
    """Whether `exc`, raised by a write on an open file, says the file cannot be written.

    `SQLITE_READONLY` (and its variants): the file is read-only; `SQLITE_CANTOPEN`: its
    journal cannot be created (a read-only directory). Retrying does not help: it is a
    refusal of the write, not an unreachable store.
    """
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (_SQLITE_READONLY, _SQLITE_CANTOPEN)


def _now_ms() -> float:
    return time.time() * 1000


class SQLiteStore:
    """A `SharedStore` in one SQLite file (standard library only).

    `keep_ms`: how long a row stays in the file after it expires (served stale
    while refetched; milliseconds or a `datetime.timedelta`). Rows past that are
    deleted when the file is opened. A file of another program (other tables,
    or not SQLite) is refused with `ParamError`, here when it exists already,
    else when the store opens.
    """

    def __init__(self, path: str | Path, *, keep_ms: float | timedelta = 600_000) -> None:
        self.keep_ms = length_ms(keep_ms, "SQLiteStore: keep_ms", zero_ok=True)
        _check_existing(Path(path))
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._tables: bool | None = None  # whether the open file holds restlayer's tables (None: not looked yet)

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise SharedStoreError(f"{self.path}: the store is not open")
        return self._db

    async def open(self, on_patch: Callable[[Patch], None]) -> None:
        """Open (or create) the file and load its unexpired rows into the controller's store.

        `ParamError` (no use retrying) for another program's file, `SharedStoreError` for other failures.
        """
        await self.close()
        _check_not_dir(self.path)
        try:
            patch = self._open_writable()
        except ParamError:
            await self.close()
            raise
        except sqlite3.Error as exc:
            if self._db is None or not _unwritable(exc):  # not opened at all (a missing directory): may pass
                raise SharedStoreError(f"{self.path}: {exc}") from exc
            patch = await self._open_read_only(exc)
        if patch:
            on_patch(patch)

    def _open_writable(self) -> Patch:
        """Connect, create restlayer's tables, delete the rows whose `keep_until` has come, load the rest."""
        self._db = sqlite3.connect(self.path, isolation_level=None)
        _check_file(self._db, self.path)
        self._db.executescript(_SCHEMA)
        now = _now_ms()
        with self._db:
            self._db.execute("DELETE FROM entities WHERE keep_until <= ?", (now,))
            self._db.execute("DELETE FROM endpoints WHERE keep_until <= ?", (now,))
        return self._load()

    async def _open_read_only(self, cause: sqlite3.Error) -> Patch:
        """Open a file that cannot be written (read-only file, directory or file system) for reads only.

        Retrying the writable open would fail the same way forever, and the controller would
        never start warm from the file. Rows past their `keep_until` are left in the file and
        not loaded; each later write is refused (`SharedStoreError.refused`), not retried.
        """
        await self.close()
        log.warning("SQLiteStore: %s cannot be written (%s); reading it without storing changes", self.path, cause)
        try:
            self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
            _check_file(self._db, self.path)
            return self._load(_now_ms())
        except ParamError:
            await self.close()
            raise
        except sqlite3.Error as exc:
            raise SharedStoreError(f"{self.path}: {exc}", refused=_unwritable(exc)) from exc

    def _load(self, now: float | None = None) -> Patch:
        """Every stored row as one patch (malformed rows are logged and skipped).

        `now` (ms): leave out the rows whose `keep_until` is past (a file that could not be pruned).
        A file without restlayer's tables (read-only, so they could not be created) holds no rows.

        An endpoint naming an entity whose row is gone (pruned before it: each row
        lives until its own expiry, and a later, shorter-lived response may have
        rewritten a shared entity) is left out: loaded, it would read as valid data
        of `None`. A fetch of it still reads its stored response from the file.
        """
        db = self._conn()
        if not self._has_tables():
            return Patch()
        since = (-math.inf if now is None else now,)
        entities: list[EntityRow] = []
        for (text,) in db.execute("SELECT data FROM entities WHERE keep_until > ?", since):
            row = parse_entity(text)
            if row is not None:
                entities.append(row)
        present = {(row[0], row[1]) for row in entities}
        endpoints: list[EndpointRow] = []
        expired: list[str] = []
        invalidated: list[str] = []
        for key, text, state in db.execute("SELECT key, data, expired FROM endpoints WHERE keep_until > ?", since):
            if not isinstance(key, str):  # a foreign file's number: no endpoint key (keys are text everywhere)
                log.warning("ignored a malformed stored endpoint row: key %r is not text", key)
                continue
            parsed = parse_endpoint(text, key)
            if parsed is not None and all(ref in present for ref in parsed.deps):
                endpoints.append((key, json.loads(text).get("result"), parsed.meta))
                if state == _EXPIRED:
                    expired.append(key)
                elif state == _INVALIDATED:
                    invalidated.append(key)
        indexes = [row for row in db.execute("SELECT key, field, value, pk FROM indexes") if _index_row(row)]
        return Patch(tuple(entities), tuple(endpoints), tuple(indexes), tuple(invalidated), tuple(expired))

    def _has_tables(self) -> bool:
        """Whether the open file holds restlayer's tables (a read-only file may not: they were never created).

        Without them it holds no rows: reading it must not fail (that would take the store offline),
        and a write is refused as for any file that cannot be written.
        """
        if self._tables is None:
            names = {name for (name,) in self._conn().execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            self._tables = set(_COLUMNS) <= names
        return self._tables

    async def run(self) -> None:
        """Nothing is ever announced to a file: returns at once."""

    async def close(self) -> None:
        """Close the file (safe to call twice)."""
        db, self._db = self._db, None
        self._tables = None
        if db is not None:
            db.close()

    async def write(self, write: Write) -> None:
        """Store `write` in one transaction; rows older than the file's are skipped."""
        db = self._conn()
        try:
            if not self._has_tables():
                raise SharedStoreError(f"{self.path}: the file cannot be written", refused=True)
            with db:
                db.execute("BEGIN")
                if write.clear:
                    for table in ("entities", "endpoints", "indexes"):
                        db.execute(f"DELETE FROM {table}")
                self._write_rows(db, write)
        except sqlite3.Error as exc:
            raise SharedStoreError(f"{self.path}: {exc}", refused=_unwritable(exc)) from exc

    def _write_rows(self, db: sqlite3.Connection, write: Write) -> None:
        patch = write.patch
        for key, pk, record, meta in patch.entities:
            db.execute(
                "INSERT INTO entities VALUES (?, ?, ?, ?, ?) ON CONFLICT (key, pk) DO UPDATE SET "
                "fetched_at = excluded.fetched_at, data = excluded.data, keep_until = excluded.keep_until "
                "WHERE excluded.fetched_at >= entities.fetched_at",
                (key, pk, meta["fetched_at"], dumps([key, pk, record, meta]), self._until(meta, write.now)),
            )
        for key, result, meta in patch.endpoints:
            response, deps = write.responses.get(key, (None, ()))
            db.execute(
                "INSERT INTO endpoints VALUES (?, ?, ?, 0, ?) ON CONFLICT (key) DO UPDATE SET "
                "fetched_at = excluded.fetched_at, data = excluded.data, expired = 0, "
                "keep_until = excluded.keep_until WHERE excluded.fetched_at >= endpoints.fetched_at",
                (key, meta["fetched_at"], endpoint_record(response, result, meta, deps), self._until(meta, write.now)),
            )
        db.executemany("INSERT OR REPLACE INTO indexes VALUES (?, ?, ?, ?)", patch.indexes)
        db.executemany(
            f"UPDATE endpoints SET expired = {_INVALIDATED} WHERE key = ?", [(k,) for k in patch.invalidated]
        )
        db.executemany(
            f"UPDATE endpoints SET expired = {_EXPIRED} WHERE key = ? AND expired = 0", [(k,) for k in patch.expired]
        )

    def _until(self, meta: dict[str, float], now: float) -> float:
        """When a row written at `now` (ms, the controller's clock) may be pruned, in wall-clock ms.

        Its lifetime is measured on the controller's clock (the one its `expires_at` is on),
        but counted from the wall clock the file is pruned by at open, as Redis counts its TTLs:
        dated on an injected clock that does not read as wall time, every row was pruned at the
        next start.
        """
        return _now_ms() + lifetime_ms(meta, now or _now_ms(), self.keep_ms)

    async def read(self, key: str) -> Snapshot | None:
        """The stored response of `key` with its entities' current rows."""
        db = self._conn()
        try:
            if not self._has_tables():
                return None
            found = db.execute("SELECT data, expired FROM endpoints WHERE key = ?", (key,)).fetchone()
            if found is None or found[1] == _INVALIDATED:
                return None
            parsed = parse_endpoint(found[0], key)
            if parsed is None:
                return None
            rows = _rows(db, parsed.deps)
        except sqlite3.Error as exc:
            raise SharedStoreError(f"{self.path}: {exc}") from exc
        return snapshot(parsed, rows, bool(found[1]))

    async def rows(self, refs: Sequence[tuple[str, str]]) -> list[EntityRow]:
        """The current rows of the entities `refs` name (those stored)."""
        try:
            return _rows(self._conn(), refs) if self._has_tables() else []
        except sqlite3.Error as exc:
            raise SharedStoreError(f"{self.path}: {exc}") from exc

    async def keys(self) -> list[str]:
        """Every stored endpoint key."""
        try:
            if not self._has_tables():
                return []
            return [key for (key,) in self._conn().execute("SELECT key FROM endpoints")]
        except sqlite3.Error as exc:
            raise SharedStoreError(f"{self.path}: {exc}") from exc

    async def lock(self, key: str, ttl_ms: int) -> str | None:
        """One process per file: the lock is always free."""
        return secrets.token_hex(4)

    async def extend(self, key: str, token: str, ttl_ms: int) -> bool:
        """One process per file: the lock stays held."""
        return True


def _rows(db: sqlite3.Connection, refs: Sequence[tuple[str, str]]) -> list[EntityRow]:
    """The stored rows of `refs` (a malformed one is logged and left out)."""
    rows = []
    for ref in refs:
        text = db.execute("SELECT data FROM entities WHERE key = ? AND pk = ?", ref).fetchone()
        row = None if text is None else parse_entity(text[0])
        if row is not None:
            rows.append(row)
    return rows


__all__ = ["SQLiteStore"]
