"""`RedisStore`: one normalized store for a whole fleet of processes, through Redis.

Every key of a namespace carries the hash tag `{namespace}`, so one write (a
Lua script: compare `fetched_at`, store the newer rows, set their lifetimes,
release the key's lock, publish the patch) touches one slot and runs
atomically, on a single Redis or on Redis Cluster. The price: one namespace
lives on one cluster node; spread load with several namespaces.

Layout (``P`` = ``rl:{namespace}:``): ``P e:<json [entity key, pk]>`` and
``P r:<endpoint key>`` are hashes (``f`` = fetched_at, ``d`` = JSON, ``x`` = expired),
``P l:<endpoint key>`` the fleet-wide fetch lock, ``P announce`` the channel (``P announce@<db>``
for a database other than 0: Redis publishes to every database's clients). An announcement
carries its rows, or past `_ANNOUNCED_MAX` bytes only their names (each subscriber reads them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import secrets
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import timedelta
from typing import TypeGuard

try:
    import redis.asyncio as aioredis
    from redis.asyncio.client import PubSub
    from redis.asyncio.connection import parse_url
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.commands.core import AsyncScript
    from redis.exceptions import RedisError, ResponseError
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("RedisStore needs redis-py: pip install 'restlayer[redis]'") from exc

from restlayer._time import length_ms
from restlayer.core import Patch, Snapshot, Write
from restlayer.core._patch import EntityRow
from restlayer.errors import ParamError, SharedStoreError
from restlayer.stores._codec import dumps, endpoint_record, lifetime_ms, parse_endpoint, parse_entity, snapshot

log = logging.getLogger("restlayer.shared")

# A value of another type (or a hash without a numeric `f`) under one of restlayer's key names was
# written by another program: it is replaced, never allowed to fail the whole write.
_WRITE = """
local e, r = {}, {}
for i = 1, #KEYS do
  local b = 3 + (i - 1) * 5
  local kind, key = ARGV[b + 1], KEYS[i]
  local t = redis.call('TYPE', key).ok
  if kind == 'e' or kind == 'r' then
    if t ~= 'hash' and t ~= 'none' then redis.call('DEL', key) end
    local cur = nil
    if t == 'hash' then cur = tonumber(redis.call('HGET', key, 'f')) end
    if (not cur) or cur <= tonumber(ARGV[b + 2]) then
      redis.call('HSET', key, 'f', ARGV[b + 2], 'd', ARGV[b + 3])
      redis.call('HDEL', key, 'x')
      redis.call('PEXPIRE', key, ARGV[b + 4])
      if kind == 'e' then e[#e + 1] = ARGV[b + 5] else r[#r + 1] = ARGV[b + 5] end
    end
  elseif kind == 'x' then
    redis.call('DEL', key)
  elseif kind == 'o' then
    if t == 'hash' then redis.call('HSET', key, 'x', '1') end
  elseif kind == 'u' then
    if t == 'string' and redis.call('GET', key) == ARGV[b + 3] then redis.call('DEL', key) end
  end
end
local rows = '"e":[' .. table.concat(e, ',') .. '],"r":[' .. table.concat(r, ',') .. ']'
redis.call('PUBLISH', ARGV[1], ARGV[2] .. rows .. ARGV[3])
return #e + #r
"""

_EXTEND = """
if redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

# `SET NX PX`, except that a value no restlayer process set is replaced (returns 2 then): every fleet
# lock is a string with a lifetime, so another type, or a string without one, would never go away and
# every reader of the key would wait out all its rounds of `lock_ms` before fetching without the lock.
_LOCK = """
local t = redis.call('TYPE', KEYS[1]).ok
local foreign = 0
if t ~= 'none' then
  if t == 'string' and redis.call('PTTL', KEYS[1]) >= 0 then return 0 end
  redis.call('DEL', KEYS[1])
  foreign = 1
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1 + foreign
"""

_FAILURES = (RedisError, OSError, asyncio.TimeoutError)

# Bytes of rows one announcement carries; a larger one names its rows (each subscriber reads them).
# Redis disconnects a subscriber whose pending output passes `client-output-buffer-limit pubsub`
# (32 MB at once, 8 MB for a minute by default): a large value announced whole took every process
# of the fleet offline, and the announcements published while they reconnected were lost.
_ANNOUNCED_MAX = 256 * 1024


def _foreign(error: object) -> bool:
    """Whether `error` (a command's) says the key holds a value of another type: another program's."""
    return isinstance(error, ResponseError) and str(error).startswith("WRONGTYPE")


def _database(url: str) -> int:
    """The database number `url` selects (0 when it names none).

    SharedStoreError for a URL redis-py cannot connect with (found now, not in the background at first use).
    """
    try:
        db = parse_url(url).get("db")
    except (TypeError, ValueError) as exc:
        raise SharedStoreError(f"invalid Redis URL {url!r}: {exc}") from exc
    return int(db or 0)


def _channel(prefix: str, db: int) -> str:
    """The namespace's announcement channel in database `db`.

    Redis delivers a publication to the subscribers of every database, so two fleets on one
    server in different databases (production and staging, say) under the same namespace would
    merge each other's rows; the database number (past 0, whose name stays as it was) keeps them apart.
    """
    return f"{prefix}announce" if db == 0 else f"{prefix}announce@{db}"


def _seconds(timeout: object) -> float:
    """`timeout` checked: a finite number of seconds > 0 (else every call would fail as "unreachable")."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
        raise ParamError(f"RedisStore: timeout must be a finite number of seconds > 0, not {timeout!r}")
    return timeout


def _pool_size(max_connections: object) -> int:
    """`max_connections` checked: an int >= 1."""
    if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
        raise ParamError(f"RedisStore: max_connections must be an int >= 1, not {max_connections!r}")
    return max_connections


class RedisStore:
    """A `SharedStore` on Redis: `Controller(shared=RedisStore("redis://127.0.0.1:6379/0", namespace="app"))`.

    `keep_ms`: how long data stays in Redis after it expires (served stale while
    refetched; milliseconds or a `datetime.timedelta`); `timeout`: seconds before an
    unanswered Redis call counts as down;
    `max_connections`: concurrent Redis calls of this process (more wait their turn).
    """

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "restlayer",
        keep_ms: float | timedelta = 600_000,
        timeout: float = 30.0,
        max_connections: int = 64,
    ) -> None:
        if not namespace or any(c in namespace for c in "{}"):
            raise SharedStoreError(f"namespace {namespace!r} must be non-empty and without braces")
        db = _database(url)
        self.url = url
        self.namespace = namespace
        self.keep_ms = length_ms(keep_ms, "RedisStore: keep_ms", zero_ok=True)
        self.timeout = _seconds(timeout)
        self.max_connections = _pool_size(max_connections)
        self.prefix = f"rl:{{{namespace}}}:"
        self.channel = _channel(self.prefix, db)
        self.source = secrets.token_hex(8)
        self._client: aioredis.Redis | None = None
        self._listener: aioredis.Redis | None = None
        self._pubsub: PubSub | None = None
        self._script: AsyncScript | None = None
        self._extend: AsyncScript | None = None
        self._lock: AsyncScript | None = None
        self._on_patch: Callable[[Patch], None] | None = None

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, namespace={self.namespace!r})"

    # ----- keys -------------------------------------------------------------------------------
    def entity_key(self, key: str, pk: str) -> str:
        """The Redis key of one entity row."""
        return f"{self.prefix}e:{dumps([key, pk])}"

    def endpoint_key(self, key: str) -> str:
        """The Redis key of one endpoint's stored response."""
        return f"{self.prefix}r:{key}"

    def lock_key(self, key: str) -> str:
        """The Redis key of an endpoint key's fleet-wide fetch lock."""
        return f"{self.prefix}l:{key}"

    # ----- connection ---------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _calls(self) -> AsyncIterator[aioredis.Redis]:
        """The client, with every Redis or socket failure turned into SharedStoreError.

        An error reply (`ResponseError`: out of memory, a read-only replica) is one `refused`:
        Redis answered, so reconnecting would not help and the store is not offline.
        """
        if self._client is None:
            raise SharedStoreError("RedisStore is not open")
        try:
            yield self._client
        except ResponseError as exc:  # the server answered: the connection is fine, this call was refused
            log.debug("redis refused a call", exc_info=True)
            raise SharedStoreError(f"redis at {self.url} refused: {exc}", refused=True) from exc
        except _FAILURES as exc:
            log.debug("redis call failed", exc_info=True)
            raise SharedStoreError(f"redis at {self.url}: {exc}") from exc

    async def open(self, on_patch: Callable[[Patch], None]) -> None:
        """Connect and subscribe to the namespace's announcements."""
        await self.close()
        self._on_patch = on_patch
        self._client = self._connect(self.timeout)
        # The subscription waits for announcements indefinitely: its own client, without a read timeout
        # (a dead server closes the socket, which ends the wait).
        self._listener = self._connect(None)
        async with self._calls() as client:
            await self._ping(client)
            self._script = client.register_script(_WRITE)
            self._extend = client.register_script(_EXTEND)
            self._lock = client.register_script(_LOCK)
            self._pubsub = self._listener.pubsub(ignore_subscribe_messages=True)
            await self._pubsub.subscribe(self.channel)

    async def _ping(self, client: aioredis.Redis) -> None:
        """Check the connection; ParamError when the server refuses the URL's database.

        A database number past the server's `databases` (or any but 0 on Redis Cluster) can
        never be selected: reported as a configuration error at once, not retried forever
        as if the server were down.
        """
        try:
            await client.ping()
        except ResponseError as exc:
            message = str(exc)
            if "DB index" not in message and "SELECT" not in message:
                raise
            await self.close()
            raise ParamError(f"RedisStore: {self.url} names a database the server cannot select: {message}") from exc

    def _opened(self, script: AsyncScript | None) -> AsyncScript:
        """A script registered by `open` (SharedStoreError before that)."""
        if script is None:
            raise SharedStoreError("RedisStore is not open")
        return script

    def _connect(self, read_timeout: float | None) -> aioredis.Redis:
        """A client whose calls wait (up to `timeout`) for one of `max_connections` connections."""
        pool = aioredis.BlockingConnectionPool.from_url(
            self.url,
            max_connections=self.max_connections,
            timeout=self.timeout,
            socket_timeout=read_timeout,
            socket_connect_timeout=self.timeout,
            socket_keepalive=True,
        )
        return aioredis.Redis(connection_pool=pool, retry=Retry(NoBackoff(), 0), retry_on_error=[])

    async def run(self) -> None:
        """Hand every announced patch to `on_patch` until the connection drops."""
        pubsub = self._pubsub
        if pubsub is None:
            raise SharedStoreError("RedisStore is not open")
        try:
            while pubsub.subscribed:
                await self._next_message(pubsub)
        except _FAILURES as exc:
            raise SharedStoreError(f"redis at {self.url}: {exc}") from exc
        raise SharedStoreError(f"redis at {self.url}: subscription ended")

    async def _next_message(self, pubsub: PubSub) -> None:
        """Wait for the subscription's next message and deliver it; ping it after `timeout` s of silence.

        A connection that dies without closing (a host gone, a dropped route, a frozen proxy)
        leaves a blocking read waiting forever: a process that never writes would not notice,
        and would miss every announcement from then on. An unanswered ping fails the wait instead.
        """
        response = await pubsub.parse_response(block=False, timeout=self.timeout)
        if response is None:
            await pubsub.ping()
            response = await pubsub.parse_response(block=False, timeout=self.timeout)
            if response is None:
                raise SharedStoreError(f"redis at {self.url}: the subscription did not answer for {self.timeout} s")
        message = await pubsub.handle_message(response, ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        if message is not None and message.get("type") == "message":
            await self._deliver(message["data"])

    async def _deliver(self, data: bytes) -> None:
        """Hand an announcement to `on_patch`; a malformed one (anyone may publish on the channel) is logged.

        JSON nested deeper than Python parses raises RecursionError: caught too, or it would end
        `run` as if the connection had dropped (offline, local data expired, announcements missed).
        Rows announced by name (a large write) are read from Redis first.
        """
        try:
            patch = Patch.from_json(await self._dereferenced(json.loads(data)))
        except (ValueError, RecursionError) as exc:
            log.warning("ignored a malformed announcement on %s: %s", self.channel, exc)
            return
        if self._on_patch is not None:
            try:
                self._on_patch(patch)
            except Exception:
                log.exception("applying an announced patch failed")

    async def _dereferenced(self, message: object) -> object:
        """`message` with the rows it announces by name (`[key, pk]`, `[endpoint key]`) read from Redis.

        A row gone or replaced since is read as it is now (a replacement is announced too); a
        missing one is left out, as are those of this process's own announcements (it holds
        them already). A malformed message is returned as it is, for `Patch.from_json`.
        """
        if not isinstance(message, dict):
            return message
        entities, endpoints = message.get("e"), message.get("r")
        if not isinstance(entities, list) or not isinstance(endpoints, list):
            return message
        named = [(row[0], row[1]) for row in entities if _entity_ref(row)]
        keys = [row[0] for row in endpoints if _endpoint_ref(row)]
        if not named and not keys:
            return message
        rows: list[EntityRow] = []
        results: list[list[object]] = []
        if message.get("src") != self.source:
            async with self._calls() as client:
                rows = await self._rows(client, named)
                results = await self._results(client, keys)
        return {
            **message,
            "e": [row for row in entities if not _entity_ref(row)] + [list(row) for row in rows],
            "r": [row for row in endpoints if not _endpoint_ref(row)] + results,
        }

    async def _results(self, client: aioredis.Redis, keys: Sequence[str]) -> list[list[object]]:
        """The announced form (`[key, result, meta]`) of the stored responses of `keys` (those stored)."""
        if not keys:
            return []
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.hget(self.endpoint_key(key), "d")
        texts = await pipe.execute(raise_on_error=False)
        results: list[list[object]] = []
        for key, text in zip(keys, texts, strict=True):
            if isinstance(text, Exception) and not _foreign(text):
                raise text
            parsed = None if text is None or isinstance(text, Exception) else parse_endpoint(text, key)
            if parsed is not None:
                results.append([key, parsed.result, parsed.meta])
        return results

    async def close(self) -> None:
        """Disconnect (safe to call twice)."""
        pubsub, clients = self._pubsub, (self._listener, self._client)
        self._pubsub = self._client = self._listener = None
        with contextlib.suppress(*_FAILURES):
            if pubsub is not None:
                await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
            for client in clients:
                if client is not None:
                    await client.aclose()
                    await client.connection_pool.disconnect()  # a pool given to the client is not closed by it

    # ----- writes -------------------------------------------------------------------------------
    async def write(self, write: Write) -> None:
        """Store and announce `write` in one script run (older rows than Redis holds are skipped)."""
        if write.clear:
            await self.clear()
        keys, args = self._operations(write)
        patch = write.patch
        head = f'{{"src":{dumps(self.source)},'
        tail = (
            ","
            + dumps(
                {
                    "i": [list(r) for r in patch.indexes],
                    "x": list(patch.invalidated),
                    "o": list(patch.expired),
                    "u": list(patch.released),
                }
            )[1:]
        )
        async with self._calls():
            await self._opened(self._script)(keys=keys, args=[self.channel, head, tail, *args])

    def _operations(self, write: Write) -> tuple[list[str], list[str | int]]:
        """Script KEYS and the five ARGV of each (kind, fetched_at, stored, ttl, announced).

        Rows announced whole past `_ANNOUNCED_MAX` bytes in all are announced by name instead.
        """
        keys: list[str] = []
        args: list[str | int] = []
        rows: list[tuple[str, str]] = []  # (announced whole, announced by name) of each row
        for key, pk, record, meta in write.patch.entities:
            row = dumps([key, pk, record, meta])
            keys.append(self.entity_key(key, pk))
            args += ["e", repr(float(meta["fetched_at"])), row, lifetime_ms(meta, write.now, self.keep_ms), ""]
            rows.append((row, dumps([key, pk])))
        for key, result, meta in write.patch.endpoints:
            response, deps = write.responses.get(key, (None, ()))
            keys.append(self.endpoint_key(key))
            args += [
                "r",
                repr(float(meta["fetched_at"])),
                endpoint_record(response, result, meta, deps),
                lifetime_ms(meta, write.now, self.keep_ms),
                "",
            ]
            rows.append((dumps([key, result, meta]), dumps([key])))
        by_name = sum(len(whole) for whole, _ in rows) > _ANNOUNCED_MAX
        for i, (whole, name) in enumerate(rows):
            args[i * 5 + 4] = name if by_name else whole
        for kind, names in (("x", write.patch.invalidated), ("o", write.patch.expired)):
            for key in names:
                keys.append(self.endpoint_key(key))
                args += [kind, "0", "", 0, ""]
        for key, token in write.unlock:
            keys.append(self.lock_key(key))
            args += ["u", "0", token, 0, ""]
        return keys, args

    async def clear(self) -> None:
        """Delete every key of the namespace (not atomic: concurrent writers may add keys back)."""
        async with self._calls() as client:
            batch: list[bytes] = []
            async for name in client.scan_iter(match=self._pattern(""), count=500):
                batch.append(name)
                if len(batch) >= 500:
                    await client.unlink(*batch)
                    batch = []
            if batch:
                await client.unlink(*batch)

    def _pattern(self, kind: str) -> str:
        escaped = "".join("\\" + c if c in "*?[]\\" else c for c in self.prefix)
        return f"{escaped}{kind}*"

    # ----- reads --------------------------------------------------------------------------------
    async def read(self, key: str) -> Snapshot | None:
        """The stored response of `key` and the current rows of the entities it references."""
        async with self._calls() as client:
            try:
                stored = await client.hgetall(self.endpoint_key(key))
            except ResponseError as exc:
                if not _foreign(exc):
                    raise
                log.warning("ignored a malformed stored value for %s: %s", key, exc)
                return None
            if not stored or b"d" not in stored:
                return None
            parsed = parse_endpoint(stored[b"d"], key)
            if parsed is None:
                return None
            rows = await self._rows(client, parsed.deps)
        return snapshot(parsed, rows, b"x" in stored)

    async def rows(self, refs: Sequence[tuple[str, str]]) -> list[EntityRow]:
        """The current rows of the entities `refs` name (those stored)."""
        async with self._calls() as client:
            return await self._rows(client, refs)

    async def _rows(self, client: aioredis.Redis, refs: Sequence[tuple[str, str]]) -> list[EntityRow]:
        if not refs:
            return []
        pipe = client.pipeline(transaction=False)
        for ref in refs:
            pipe.hget(self.entity_key(*ref), "d")
        texts = await pipe.execute(raise_on_error=False)
        for text in texts:
            if isinstance(text, Exception) and not _foreign(text):
                raise text
        return [row for row in (_entity_of(text) for text in texts if text is not None) if row is not None]

    async def keys(self) -> list[str]:
        """Every endpoint key stored in the namespace."""
        start = len(self.prefix) + 2
        async with self._calls() as client:
            names = [name[start:] async for name in client.scan_iter(match=self._pattern("r:"), count=500)]
        return [key for key in map(_key_text, names) if key is not None]

    async def lock(self, key: str, ttl_ms: int) -> str | None:
        """A token when this process now holds the key's fetch, else None (another process holds it).

        Like `SET NX PX`, but another program's value on the lock key (one without a lifetime, or not
        a string) is replaced and logged: it would otherwise hold the key for every process, forever.
        """
        token = secrets.token_hex(8)
        async with self._calls():
            taken = await self._opened(self._lock)(keys=[self.lock_key(key)], args=[token, int(ttl_ms)])
        if taken == 2:
            log.warning("replaced a foreign value on the fetch lock of %s", key)
        return token if taken else None

    async def extend(self, key: str, token: str, ttl_ms: int) -> bool:
        """Push the lock's expiry `ttl_ms` further while `token` still holds it."""
        async with self._calls():
            return bool(await self._opened(self._extend)(keys=[self.lock_key(key)], args=[token, int(ttl_ms)]))


def _entity_ref(row: object) -> TypeGuard[list[str]]:
    """Whether an announced entity row is one named (`[key, pk]`), not given whole."""
    return isinstance(row, list) and len(row) == 2 and all(isinstance(part, str) for part in row)


def _endpoint_ref(row: object) -> TypeGuard[list[str]]:
    """Whether an announced endpoint row is one named (`[endpoint key]`), not given whole."""
    return isinstance(row, list) and len(row) == 1 and isinstance(row[0], str)


def _entity_of(text: object) -> EntityRow | None:
    """A stored entity row; None (logged) for a malformed one or another program's value (`WRONGTYPE`)."""
    if isinstance(text, Exception):
        log.warning("ignored a malformed stored entity row: %s", text)
        return None
    return parse_entity(text)


def _key_text(name: bytes) -> str | None:
    """An endpoint key from its Redis name; None (logged) when the name is not UTF-8 (not restlayer's)."""
    try:
        return name.decode()
    except UnicodeDecodeError:
        log.warning("ignored a malformed stored key %r: not UTF-8", name)
        return None
