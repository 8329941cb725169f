"""`Retry`: send a request again when it failed for a transient reason.

Opt-in per endpoint (`RestEndpoint(retry=Retry(...))`, or `resource(retry=...)`
for every member). Only idempotent methods are retried unless `methods` says
otherwise; a `Retry-After` header sets the wait; every retry is logged at DEBUG
on the `restlayer` logger. The wait goes through `sleep` (injectable), so
cancelling the caller cancels the wait and no further attempt is made.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, TypeVar

import httpx

from restlayer.errors import ParamError

__all__ = ["DEFAULT_EXCEPTIONS", "DEFAULT_STATUSES", "IDEMPOTENT_METHODS", "Retry"]

log = logging.getLogger("restlayer")
T = TypeVar("T")

#: Methods a server must treat as safe to repeat (RFC 9110 section 9.2.2).
IDEMPOTENT_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
#: Statuses that say "try again later": Too Many Requests, Service Unavailable.
DEFAULT_STATUSES: Final = frozenset({429, 503})
#: Transport failures worth another attempt: connect/read/write errors, timeouts,
#: and a server closing the connection without a reply.
DEFAULT_EXCEPTIONS: Final[tuple[type[BaseException], ...]] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)


def _positive(name: str, value: object, *, allow_zero: bool = True) -> None:
    """Refuse a count or duration that is not a non-negative number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (not allow_zero and value == 0):
        kind = "non-negative" if allow_zero else "positive"
        raise ParamError(f"Retry: {name} must be a {kind} number, not {value!r}")


@dataclass(frozen=True)
class Retry:
    """How many times, after how long, and for which failures a request is sent again.

    `attempts` retries at most (so `attempts + 1` requests); the n-th retry waits
    `min(max_backoff, backoff * factor ** (n - 1))` seconds, shortened by up to
    `jitter` (a fraction) at random, unless the reply says `Retry-After`
    (honoured up to `max_retry_after` seconds; a longer one is not retried).
    `statuses` and `exceptions` (matched against the error and its causes) say
    what is transient; `methods` which requests may be repeated.
    """

    attempts: int = 3
    backoff: float = 0.5
    factor: float = 2.0
    max_backoff: float = 30.0
    jitter: float = 0.1
    statuses: Iterable[int] = DEFAULT_STATUSES
    exceptions: tuple[type[BaseException], ...] = DEFAULT_EXCEPTIONS
    methods: Iterable[str] = IDEMPOTENT_METHODS
    retry_after: bool = True
    max_retry_after: float = 60.0
    #: Awaited with the wait in seconds; replace it to drive time in tests.
    sleep: Callable[[float], Awaitable[object]] = field(default=asyncio.sleep, repr=False, compare=False)
    #: Returns a float in [0, 1) for the jitter.
    random: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int) or self.attempts < 0:
            raise ParamError(f"Retry: attempts must be an int >= 0, not {self.attempts!r}")
        for name in ("backoff", "max_backoff", "max_retry_after"):
            _positive(name, getattr(self, name))
        _positive("factor", self.factor, allow_zero=False)
        _positive("jitter", self.jitter)
        if self.jitter > 1:
            raise ParamError(f"Retry: jitter is a fraction in [0, 1], not {self.jitter!r}")
        if isinstance(self.statuses, (int, str)) or not all(isinstance(s, int) for s in self.statuses):
            raise ParamError(f"Retry: statuses must be a collection of ints, not {self.statuses!r}")
        if isinstance(self.methods, str) or not all(isinstance(m, str) for m in self.methods):
            raise ParamError(f"Retry: methods must be a collection of method names, not {self.methods!r}")
        if not isinstance(self.exceptions, tuple) or not all(
            isinstance(e, type) and issubclass(e, BaseException) for e in self.exceptions
        ):
            raise ParamError(f"Retry: exceptions must be a tuple of exception classes, not {self.exceptions!r}")
        object.__setattr__(self, "statuses", frozenset(self.statuses))
        object.__setattr__(self, "methods", frozenset(m.upper() for m in self.methods))

    # -- decisions (pure, testable without I/O) ----------------------------------------

    def allows(self, method: str) -> bool:
        """Whether requests with this method may be repeated."""
        return method.upper() in self.methods

    def delay(self, retry: int) -> float:
        """Seconds to wait before the `retry`-th retry (1-based), jitter applied."""
        try:
            grown = self.backoff * self.factor ** (retry - 1)
        except OverflowError:  # a very late retry: the power is past any float, so past the cap (unless no wait)
            grown = self.max_backoff if self.backoff else 0.0
        return min(self.max_backoff, grown) * (1 - self.jitter * self.random())

    def is_transient(self, error: BaseException) -> bool:
        """Whether `error` (or one of its causes) is a transient failure."""
        response = getattr(error, "response", None)
        if isinstance(response, httpx.Response) and response.status_code in self.statuses:
            return True
        seen: set[int] = set()
        current: BaseException | None = error
        while current is not None and id(current) not in seen:
            if isinstance(current, self.exceptions):
                return True
            seen.add(id(current))
            current = current.__cause__ or current.__context__
        return False

    def wait_for(self, retry: int, response: httpx.Response | None, now: float | None = None) -> float | None:
        """The wait before the `retry`-th retry, or None when the server asks for too long."""
        asked = _retry_after(response, time.time() if now is None else now) if self.retry_after else None
        if asked is None:
            return self.delay(retry)
        return asked if asked <= self.max_retry_after else None

    # -- running ---------------------------------------------------------------------------

    async def run(self, method: str, url: str, send: Callable[[], Awaitable[T]]) -> T:
        """`await send()`, again after a wait each time it fails transiently, `attempts` times at most.

        A returned `httpx.Response` with a transient status (a GraphQL endpoint
        hands errors back as replies) counts as a failure too.
        """
        if not self.allows(method):
            return await send()
        retry = 0
        while True:
            try:
                result = await send()
            except Exception as exc:
                wait = self._next_wait(retry, exc, getattr(exc, "response", None))
                if wait is None:
                    raise
                reason = _describe(exc)
            else:
                if not isinstance(result, httpx.Response) or result.status_code not in self.statuses:
                    return result
                wait = self._next_wait(retry, None, result)
                if wait is None:
                    return result
                await result.aclose()
                reason = f"status {result.status_code}"
            retry += 1
            log.debug("retry %d/%d of %s %s in %.3fs after %s", retry, self.attempts, method, url, wait, reason)
            await self.sleep(wait)

    def _next_wait(self, done: int, error: BaseException | None, response: object) -> float | None:
        """The wait before one more attempt, or None to give up now."""
        if done >= self.attempts or (error is not None and not self.is_transient(error)):
            return None
        return self.wait_for(done + 1, response if isinstance(response, httpx.Response) else None)


def _retry_after(response: httpx.Response | None, now: float) -> float | None:
    """Seconds a reply's `Retry-After` asks for (delta-seconds or an HTTP date), None if absent."""
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def _describe(error: BaseException) -> str:
    """Short reason for the log line: the status when there was a reply, else the error type."""
    response = getattr(error, "response", None)
    if isinstance(response, httpx.Response):
        return f"status {response.status_code}"
    cause = error.__cause__ or error
    return f"{type(cause).__name__}: {cause}"
