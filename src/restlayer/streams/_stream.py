"""`Stream`: one pushed connection kept open, reconnected with capped exponential backoff and jitter.

A subclass only opens one connection and yields its `Message`s
(`_messages`); this base turns each into store writes, remembers the last
event id for resuming, reconnects after any failure and reports its status.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import math
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union
from urllib.parse import urlsplit

from restlayer.errors import (
    BodyTooLargeError,
    ClosedError,
    ParamError,
    RestLayerError,
    StatusError,
    StreamTimeoutError,
)
from restlayer.rest._headers import check_headers, text_headers
from restlayer.streams._writes import Handler, Message, Target, Writes, handler_for

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from restlayer.core import Controller, Endpoint

__all__ = [
    "Backoff",
    "Covers",
    "ServerStopped",
    "Stream",
    "check_url",
    "checked_callable",
    "checked_controller",
    "frame_size",
    "frame_too_big",
    "refused",
    "refused_close",
    "refusing_status",
    "seconds",
]

log = logging.getLogger("restlayer")


class ServerStopped(Exception):
    """Raised inside a stream when the server says to stop (an SSE reply with status 204); never escapes `run`."""


#: Client errors that a later try may not repeat: request timeout, too early, too many requests.
_TRANSIENT_CLIENT_ERRORS = frozenset({408, 425, 429})


def refused(url: str, status: int) -> StatusError | None:
    """The error ending a stream whose connection `url` answered `status`; None when worth retrying.

    A client error (unauthorized, forbidden, not found, gone...) stays the same however often the
    stream reconnects, so it ends the stream; server errors and the transient client errors are retried.
    """
    if not 400 <= status < 500 or status in _TRANSIENT_CLIENT_ERRORS:
        return None
    return StatusError(f"stream {url} answered {status}: refused, not reconnecting", status=status)


#: WebSocket close codes refusing what this client sends, and the HTTP client error each stands for:
#: protocol error (1002) and invalid payload (1007) a 400, unsupported data (1003) a 415, policy
#: violation (1008) a 403, a message too big for the server (1009) a 413, a missing extension (1010,
#: the client's own close code, as some servers send it) a 400. A reconnect sends the same messages
#: (a resumed stream replays them too), to be refused the same way.
_REFUSING_CLOSES = {1002: 400, 1003: 415, 1007: 400, 1008: 403, 1009: 413, 1010: 400}


def refusing_status(code: int | None) -> int | None:
    """The HTTP client error a WebSocket close `code` stands for when it refuses the client; None otherwise.

    1002, 1003, 1007, 1008, 1009 and 1010 refuse what the client sends or is (see `_REFUSING_CLOSES`);
    4400-4499 are 4000 + the HTTP status, as graphql-transport-ws and many servers spell unauthorized
    (4401), forbidden (4403)... Like a refused handshake (see `refused`), a reconnect would be refused
    again, except for the transient ones (4408, 4425, 4429). Going away, internal errors, restarts
    and overloads (1001, 1006, 1011-1014) are the server's own state: worth reconnecting.
    """
    if code in _REFUSING_CLOSES:
        return _REFUSING_CLOSES[code]
    if code is None or not 4400 <= code < 4500 or code - 4000 in _TRANSIENT_CLIENT_ERRORS:
        return None
    return code - 4000


def refused_close(url: str, code: int | None, reason: str = "") -> StatusError | None:
    """The error ending a stream whose socket at `url` the server closed with `code`; None when worth reopening."""
    status = refusing_status(code)
    if status is None:
        return None
    why = f" ({reason})" if reason else ""
    return StatusError(f"stream {url} closed with code {code}{why}: refused, not reconnecting", status=status)


@dataclass(frozen=True)
class Backoff:
    """Waits between reconnects: `initial * factor ** (n - 1)` seconds, at most `cap`,
    shortened by up to `jitter` (a fraction) at random. A server's own reconnection
    time (SSE `retry:`) replaces `initial`. Every value is a finite number, `factor` at
    least 1 (ParamError otherwise); a stream waits at least `MIN_RECONNECT_WAIT` whatever the backoff says."""

    initial: float = 0.5
    factor: float = 2.0
    cap: float = 30.0
    jitter: float = 0.5
    #: Awaited with the wait in seconds; replace it to drive time in tests.
    sleep: Callable[[float], Awaitable[object]] = field(default=asyncio.sleep, repr=False, compare=False)
    random: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("initial", "factor", "cap", "jitter"):
            value = getattr(self, name)
            # `not value >= 0` refuses NaN too: a NaN wait is no wait (reconnects in a tight loop)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ParamError(f"Backoff: {name} must be a non-negative number, not {value!r}")
            if not _finite(value):  # an infinite wait never reconnects: the stream would stay down, silently
                raise ParamError(f"Backoff: {name} must be a finite number, not {value!r}")
        if self.jitter > 1:
            raise ParamError(f"Backoff: jitter is a fraction in [0, 1], not {self.jitter!r}")
        if self.factor < 1:
            raise ParamError(
                f"Backoff: factor must be >= 1 (waits that shrink would reconnect ever faster to a server "
                f"that is down), not {self.factor!r}"
            )

    def delay(self, failures: int, initial: float | None = None) -> float:
        """Seconds to wait after `failures` consecutive failed connections (1-based)."""
        base = self.initial if initial is None else initial
        try:
            grown = base * self.factor ** max(0, failures - 1)
        except OverflowError:  # a very long outage: the power is past any float, so past the cap (unless no wait)
            grown = self.cap if base else 0.0
        return min(self.cap, grown) * (1 - self.jitter * self.random())


def _finite(value: float) -> bool:
    """Whether `value` is a number a float can hold that is not infinite (`10**400` is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


#: The least wait before a stream reconnects, in seconds, whatever its backoff gives (0 when `initial`
#: or `cap` is 0): a server that is down or drops each connection at once must not be hit in a tight loop.
MIN_RECONNECT_WAIT = 0.1


#: Frames a stream takes in a row before letting the loop run other tasks: a burst read in one chunk
#: (thousands of small events) comes without any pause, and would block the loop until all are applied.
YIELD_EVERY = 100


Covers = Union["Endpoint[object]", Iterable["Endpoint[object]"], Callable[[str], bool], None]
"""What a stream keeps fresh (its `covers=`): an endpoint, endpoints, or a predicate on store keys."""


Listener = Callable[["Stream"], Awaitable[None] | None]
"""What `Stream.add_listener` takes: a function of the stream, plain or async."""


def _tests_keys(value: object) -> TypeIs[Endpoint[object]]:
    return callable(getattr(value, "test_key", None))


def _key_test(covers: Covers) -> Callable[[str], bool]:
    """`covers` as a key predicate: endpoints (their `test_key`), a predicate, or nothing."""
    if covers is None:
        return lambda key: False
    if _tests_keys(covers):
        return covers.test_key
    if callable(covers):
        return covers
    if isinstance(covers, (str, bytes)) or not isinstance(covers, Iterable):  # a str would be taken letter by letter
        raise ParamError(f"covers= takes endpoints or a key predicate, not {covers!r}")
    endpoints = list(covers)
    for endpoint in endpoints:
        if not _tests_keys(endpoint):
            raise ParamError(f"covers= takes endpoints or a key predicate, not {endpoint!r}")
    return lambda key: any(endpoint.test_key(key) for endpoint in endpoints)


def check_url(url: str, schemes: tuple[str, str], *, relative: bool = False) -> None:
    """ParamError unless `url` is absolute with one of `schemes` (or, when `relative` is allowed, has no scheme).

    A url no connection can open would otherwise fail every reconnect, forever, only in the log:
    so is one whose host or port cannot be read (an unclosed IPv6 bracket, a port not in 0-65535).
    """
    try:
        parts = urlsplit(url)
        _ = parts.port  # its ValueError: a port that is no number from 0 to 65535
    except ValueError as exc:
        raise ParamError(f"a stream url must name a host and port that can be read, not {url!r} ({exc})") from None
    if relative and not parts.scheme and not parts.netloc:
        return
    if parts.scheme.lower() not in schemes or not parts.netloc:
        raise ParamError(
            f"a stream url must start with {schemes[0]}:// or {schemes[1]}:// and name a host, not {url!r}"
        )


def _checked_backoff(backoff: object) -> Backoff:
    """`backoff=` (a `Backoff`, or anything with its `delay` and `sleep`; None: the default one); ParamError
    otherwise, rather than the stream dying with an AttributeError at its first reconnect."""
    if backoff is None:
        return Backoff()
    if isinstance(backoff, type):  # its `delay` is there, but takes no self: it fails at the first reconnect
        raise ParamError(
            f"backoff= must be a Backoff (restlayer.streams), not the class: Backoff() is one, not {backoff!r}"
        )
    if not (callable(getattr(backoff, "delay", None)) and callable(getattr(backoff, "sleep", None))):
        raise ParamError(f"backoff= must be a Backoff (restlayer.streams), not {backoff!r}")
    return backoff  # type: ignore[return-value]  # one like it: it has what a stream uses


def _checked_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """`headers` as a dict; ParamError unless names and values are text that can be sent: ASCII, no CR, LF
    or NUL, as for requests (else every connect would fail, and be retried forever). Another kind than a
    mapping (a str, a list) is one too, rather than whatever `dict()` raises or makes of it."""
    checked = text_headers(headers, "headers=")
    # A `Last-Event-ID` is sent as UTF-8 (see `SSEStream`): only CR, LF and NUL are refused in it.
    check_headers({n: v.encode() if n.lower() == "last-event-id" else v for n, v in checked.items()}, "headers=")
    return checked


#: The largest WebSocket message accepted by default, in bytes (the `websockets` library's default).
DEFAULT_MAX_SIZE = 2**20
#: WebSocket close code 1009: a message too big; the library closes with it when one exceeds `max_size`.
_MESSAGE_TOO_BIG = 1009


def frame_size(value: object, unit: str = "bytes") -> int | None:
    """`max_size=` checked: a number of `unit` (what the stream counts) >= 1, or None (no limit); else ParamError."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ParamError(f"max_size= must be a number of {unit} >= 1 or None (no limit), not {value!r}")
    return value


def frame_too_big(url: str, sent_code: int | None, max_size: int | None) -> BodyTooLargeError | None:
    """The error ending a socket at `url` that this client closed with `sent_code`, when for a message over `max_size`.

    `sent_code` is that of a close this client started: one echoing the server's close (a server's
    1009 refuses a message of this client's, see `refusing_status`) says nothing of `max_size`.

    Every reconnect would be sent that message again (a resumed stream replays it), to be refused
    again: only a larger `max_size` mends it. None for any other close.
    """
    if sent_code != _MESSAGE_TOO_BIG:
        return None
    return BodyTooLargeError(
        f"{url}: a message exceeds max_size={max_size} bytes; not reconnecting: raise max_size (None: no limit)",
        status=400,
    )


def seconds(name: str, value: object) -> float | None:
    """`value` as a number of seconds (None: no limit); ParamError for another kind, or one <= 0:
    no connection can be opened (nor read) in no time, so every connect would fail, retried forever."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ParamError(f"{name} must be a number of seconds > 0 or None (no limit), not {value!r}")
    return float(value)


def checked_callable(name: str, value: object) -> None:
    """ParamError unless `value` is a plain function (it is called for each connection or frame).

    An `async def` is refused too: its result is used as soon as it is called, so each frame
    would get a coroutine, never run, instead (every message ignored, or every connect failing).
    """
    if not callable(value):
        raise ParamError(f"{name} must be a function, not {value!r}")
    if inspect.iscoroutinefunction(value):
        raise ParamError(f"{name} must be a plain function, not an async one: {value!r}")


def checked_controller(what: str, value: object) -> Controller:
    """`value` when it is a (async) `restlayer.Controller`; ParamError otherwise.

    Streams write from tasks of the running loop into the controller's store: a blocking
    `restlayer.sync.Controller` (whose store lives in its own thread's loop) cannot take them.
    """
    from restlayer.core import Controller

    if isinstance(value, Controller):
        return value
    blocking = type(value).__module__ == "restlayer.sync"
    hint = " (a restlayer.sync.Controller runs its own loop: use the async one)" if blocking else ""
    raise ParamError(f"{what} needs a restlayer.Controller, not {type(value).__name__}{hint}")


def decode_json(text: str | bytes) -> object:
    """A message's data as JSON; a `ValueError` when it is not JSON."""
    return json.loads(text)


class Stream:
    """A long-lived connection whose messages become store writes (see `SSEStream`, `WebSocketStream`).

    `on`: a function `(message, writes)` or a table `{event type: endpoint | schema | function}`.
    `covers`: the endpoints (or a store-key predicate) whose data this stream keeps
    fresh; a `StreamManager` among the controller's managers pauses their polling
    while the stream is connected.
    Counters (`connects`, `applied`, `ignored`) and `connected` / `last_event_id`
    tell its state; `await stream.until(predicate)` waits for one.
    """

    def __init__(
        self,
        url: str,
        *,
        on: Mapping[str, Target] | Handler,
        name: str | None = None,
        backoff: Backoff | None = None,
        headers: Mapping[str, str] | None = None,
        covers: Covers = None,
    ) -> None:
        if not isinstance(url, str) or not url:
            raise ParamError(f"{type(self).__name__} needs a url (str), not {url!r}")
        if name is not None and not isinstance(name, str):  # what logs, task names and errors call it by
            raise ParamError(f"{type(self).__name__}: name= must be a str or None, not {name!r}")
        self.url = url
        self.name = name or url
        self.backoff = _checked_backoff(backoff)
        self.headers = _checked_headers(headers)
        self._handle = handler_for(on)
        self._covers = _key_test(covers)
        self._listeners: list[Listener] = []
        self.connected = False
        self.closed = False
        self._running = False  # `run` is under way (it refuses to run twice at once)
        self.last_event_id: str | None = None
        self.connects = 0
        self.applied = 0
        self.ignored = 0
        #: The server's reconnection time in seconds (SSE `retry:`), replacing `backoff.initial`.
        self.server_retry: float | None = None
        #: Set at each status change for `until`; with the loop it belongs to (a stream may run in several, in turn).
        self._changed: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, connected={self.connected})"

    # -- status --------------------------------------------------------------------------

    def _tick(self) -> None:
        """Wake whoever waits in `until`."""
        if self._changed is not None:
            self._changed[1].set()

    async def until(self, predicate: Callable[[Stream], bool], timeout: float = 10.0) -> None:
        """Wait until `predicate(stream)` holds (checked now, then at each status change); else StreamTimeoutError.

        A state that holds already returns at once, whatever the timeout (even 0). A stream that
        has ended (`closed`: its run returned or failed, and no new one started) changes no more:
        StreamTimeoutError at once, or as soon as it ends while waited for, not after `timeout`.
        ParamError for a `timeout` that is no number of seconds (NaN would wait without end).
        """
        _check_timeout(timeout)
        if predicate(self):
            return
        loop = asyncio.get_running_loop()
        if self._changed is None or self._changed[0] is not loop:
            self._changed = (loop, asyncio.Event())  # an Event of an earlier loop cannot be awaited in this one
        changed = self._changed[1]

        async def wait() -> bool:
            """Whether the predicate came to hold (False: the stream ended without it)."""
            while not predicate(self):
                if self._ended():
                    return False
                changed.clear()
                await changed.wait()
            return True

        try:
            reached = await asyncio.wait_for(wait(), timeout)
        except asyncio.TimeoutError:
            raise StreamTimeoutError(
                f"stream {self.name}: not in the awaited state after {timeout}s {self._state()}"
            ) from None
        if not reached:
            raise StreamTimeoutError(f"stream {self.name}: ended, not in the awaited state {self._state()}")

    def _ended(self) -> bool:
        """Whether the stream's run is over and no other is under way or launched: its state is final."""
        return self.closed and not self._running

    def _state(self) -> str:
        return f"(connected={self.connected}, applied={self.applied}, ignored={self.ignored})"

    def covers(self, key: str) -> bool:
        """Whether this stream pushes the changes of the store key `key` (then polling it can pause)."""
        return self._covers(key)

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(stream)` after each connect and each lost connection (awaited when it is async).

        An async listener is awaited by the stream's own run, also when the stream stops (the connection
        is then closed already): one that never returns holds up that stop, and `StreamManager.aclose()`
        with it, so keep it short (start a task of your own for long work). Its errors are only logged.
        ParamError for something that cannot be called (it would fail at each status change, only in the log).

        Returns the function that removes it (a manager that stops managing the stream calls it).
        """
        if not callable(listener):
            raise ParamError(f"add_listener takes a function of the stream, not {listener!r}")
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def _notify(self) -> None:
        self._tick()
        for listener in list(self._listeners):
            try:
                called = listener(self)
                if inspect.isawaitable(called):  # an async listener; a plain one has done its work already
                    await called
            except Exception:
                log.exception("stream %s: status listener failed", self.name)

    # -- one connection (subclasses) ------------------------------------------------------

    def _messages(self) -> AsyncGenerator[Message | None, None]:  # pragma: no cover - abstract
        """Open one connection and yield its messages (None for a frame that is not a message)."""
        raise NotImplementedError

    async def _opened(self) -> None:
        """Subclasses await this once the connection is established."""
        self.connected = True
        self.connects += 1
        log.debug("stream %s: connected (last event id %s)", self.name, self.last_event_id)
        await self._notify()

    # -- the loop --------------------------------------------------------------------------

    async def run(self, controller: Controller) -> None:
        """Keep the stream connected and apply its messages until cancelled, closed by the server,
        or `controller` closes (then it returns: a closed store takes no more writes).

        ClosedError at once when `controller` is closed already, RestLayerError when the stream runs
        already (in a manager, or another `run`); StatusError when the server refuses
        the connection with a client error (401, 403, 404...: reconnecting cannot mend it). The wait before reconnecting
        grows with each connection that applied no message (a server sending only comments,
        `retry:` or undecodable frames before dropping is backed off too).
        """
        checked_controller(f"stream {self.name}: run", controller)
        if controller.closed:
            raise ClosedError(f"The controller is closed: stream {self.name} connects no more")
        if self._running:  # a second connection would share this one's state (counters, last event id)
            raise RestLayerError(f"stream {self.name} is already running: one stream object is one connection")
        self._running = True
        self.closed = False
        closing = asyncio.Event()
        forget = controller.on_close(closing)
        try:
            await _until_set(closing, self._run(controller))
        finally:
            forget()
            self._running = False
            self.mark_ended()

    @property
    def running(self) -> bool:
        """Whether `run` is under way (a stream runs one connection at a time)."""
        return self._running

    def mark_launched(self) -> None:
        """For a manager: a task that will `run` the stream was created.

        Not ended any more (for `until`), though not yet running.
        """
        self.closed = False

    def mark_ended(self) -> None:
        """For a manager: the stream's run ended (also one cancelled before it began).

        Closed, and whoever waits in `until` is told.
        """
        self.closed = True
        self._tick()

    async def _run(self, controller: Controller) -> None:
        """The loop of `run`: connect, apply, reconnect after a backoff."""
        failures = 0
        self.closed = False
        try:
            while True:
                applied = False  # only an applied message shows the server works: frames that are none do not
                try:
                    async with contextlib.aclosing(self._messages()) as messages:
                        taken = 0
                        async for message in messages:
                            if controller.closed:  # closed while messages were on their way: none is stored
                                return
                            if message is not None and self.apply(controller, message):
                                applied = True
                            taken += 1
                            if taken % YIELD_EVERY == 0:
                                await asyncio.sleep(0)  # frames read at once come without a pause: let others run
                    reason = "the server ended the stream"
                except ServerStopped as exc:
                    log.info("stream %s: closed by the server: %s", self.name, exc)
                    return
                except RestLayerError:
                    raise  # the server refused this stream (see `refused`): reconnecting cannot mend it
                except Exception as exc:
                    reason = f"{type(exc).__name__}: {exc}"
                await self._lost(reason)
                failures = 1 if applied else failures + 1
                await self.backoff.sleep(self._wait(failures))
        finally:
            was_connected, self.connected, self.closed = self.connected, False, True
            if was_connected:
                await self._notify()  # what this stream covered must be polled again
            else:
                self._tick()

    def _wait(self, failures: int) -> float:
        """Seconds to wait before reconnecting after `failures` connections in a row that applied nothing:
        the backoff's delay, never less than `MIN_RECONNECT_WAIT`."""
        return max(MIN_RECONNECT_WAIT, self.backoff.delay(failures, self.server_retry))

    async def _lost(self, reason: str) -> None:
        if not self.connected:
            log.warning("stream %s: cannot connect (%s); retrying", self.name, reason)
            self._tick()
            return
        log.warning("stream %s: connection lost (%s); reconnecting", self.name, reason)
        self.connected = False
        await self._notify()

    def apply(self, controller: Controller, message: Message) -> bool:
        """Turn one message into store writes, all or none; False (logged, nothing changed) when it does not fit.

        ParamError for something that is not a `Message` (a caller's mistake, not a message to log and skip).
        """
        if not isinstance(message, Message):
            raise ParamError(f"stream {self.name}: apply takes a Message, not {type(message).__name__}")
        writes = Writes()
        try:
            if not self._handle(message, writes):
                return self._ignore(message, "no mapping for this event type")
            writes.commit(controller)
        except Exception as exc:
            return self._ignore(message, f"{type(exc).__name__}: {exc}")
        finally:
            if message.id is not None:
                self.last_event_id = message.id
        self.applied += 1
        self._tick()
        return True

    def _ignore(self, message: Message, reason: str) -> bool:
        log.warning("stream %s: event %r (id %s) ignored: %s", self.name, message.event, message.id, reason)
        self.ignored += 1
        self._tick()
        return False

    def malformed(self, event: str, event_id: str | None, reason: str) -> None:
        """Log a frame whose data cannot be decoded (its id still counts as seen)."""
        if event_id is not None:
            self.last_event_id = event_id
        self._ignore(Message(event, None, event_id), f"malformed data ({reason})")


def _check_timeout(timeout: object) -> None:
    """ParamError unless `timeout` (of `until`) is a number of seconds: not a bool, nor NaN (asyncio would
    raise a TypeError for a str, and wait without end for NaN); None and infinity wait without limit."""
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or math.isnan(timeout):
        raise ParamError(f"until: timeout must be a number of seconds, not {timeout!r}")


async def _until_set(event: asyncio.Event, work: Coroutine[object, object, None]) -> None:
    """Run `work` until it ends or `event` is set (then it is cancelled, and this returns normally).

    Either way it has ended when this returns: it is cancelled once and waited for, also when the
    caller is cancelled meanwhile (a second cancel would interrupt it while it closes its connection).
    """
    task = asyncio.ensure_future(work)
    stop = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        task.cancel()  # nothing when it has ended
        await _ended(task)
    if not task.cancelled():
        task.result()  # its error, if it failed


async def _ended(task: asyncio.Task[None]) -> None:
    """Wait until `task` has ended; a cancellation of the caller meanwhile is raised afterwards."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
