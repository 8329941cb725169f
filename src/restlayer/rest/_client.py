"""The one `httpx.AsyncClient` the library shares, one per running event loop.

An httpx client's connections belong to the loop that opened them, so a client
is never handed to another loop, and one whose loop has closed is replaced.

The shared client keeps no cookies: it serves every Controller of the loop, so a
session cookie one of them received would otherwise be sent by all the others
(and survive `reset_entire_store()`). Cookies given to `configure_client(cookies=...)`
are sent by every shared client, and still none a server sets is kept. A cookie
session needs a client of its own, passed as the endpoint's `client`.

What a shared client is configured to send (its headers, its cookies) is for the
API it was configured for: a redirect to another origin goes without it, as it
goes without the endpoint's own headers (`configured_names`).

`configure_client` sets what the shared clients are built with.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import urllib.request
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from http.cookiejar import Cookie, CookieJar, DefaultCookiePolicy

import httpx

from restlayer.errors import ParamError
from restlayer.rest._headers import check_headers

#: Defaults of the shared client: follow redirects like `fetch` does.
DEFAULT_TIMEOUT = httpx.Timeout(30.0)
DEFAULTS: dict[str, object] = {"follow_redirects": True, "timeout": DEFAULT_TIMEOUT}

_CLIENT_OPTIONS = frozenset(inspect.signature(httpx.AsyncClient.__init__).parameters) - {"self"}

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()
#: Requests under way on each shared client, and the clients `aclose()` retired while some were.
_in_use: dict[httpx.AsyncClient, int] = {}
_retired: set[httpx.AsyncClient] = set()
_last: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None = None
_options: dict[str, object] = dict(DEFAULTS)
_factory: Callable[[], httpx.AsyncClient] | None = None


def configure_client(factory: Callable[[], httpx.AsyncClient] | None = None, **options: object) -> None:
    """Set how the shared clients are built: `httpx.AsyncClient` keywords, or a `factory` returning a client.

    Keywords (`timeout`, `limits`, `proxy`, `transport`, `auth`, `headers`,
    `follow_redirects`, `verify`, ...) are laid over the defaults (redirects
    followed, 30 s timeout); with no arguments the defaults come back. Clients
    already open keep their settings until `aclose()`; new ones use these.
    """
    global _factory, _options
    unknown = sorted(set(options) - _CLIENT_OPTIONS)
    if unknown:
        raise ParamError(f"configure_client: {', '.join(unknown)} not an httpx.AsyncClient option")
    if factory is not None and options:
        raise ParamError("configure_client: give either a factory or httpx.AsyncClient options, not both")
    if factory is not None and not callable(factory):
        raise ParamError(f"configure_client: factory must be callable, not {factory!r}")
    if options:
        _check_values(options)
    _factory = factory
    _options = {**DEFAULTS, **options}


def _check_values(options: dict[str, object]) -> None:
    """`ParamError` now for option values httpx cannot use, rather than a bare TypeError or
    AttributeError from the first request of whichever controller opens a shared client."""
    transport = options.get("transport")
    if transport is not None and not isinstance(transport, httpx.AsyncBaseTransport):
        raise ParamError(f"configure_client: transport must be an httpx.AsyncBaseTransport, not {transport!r}")
    build: Callable[..., httpx.AsyncClient] = httpx.AsyncClient
    try:
        trial = build(**{**DEFAULTS, **options})  # opens no connection: nothing to close
    except Exception as exc:
        raise ParamError(
            f"configure_client: httpx.AsyncClient refused {', '.join(sorted(options))}: {type(exc).__name__}: {exc}"
        ) from exc
    _check_timeout(trial.timeout)
    _check_max_redirects(options.get("max_redirects", 0))
    _check_event_hooks(options.get("event_hooks"))
    follow = options.get("follow_redirects", True)
    if not isinstance(follow, bool):  # httpx keeps any value, and every request reads its truth ("no" is yes)
        raise ParamError(f"configure_client: follow_redirects must be True or False, not {follow!r}")
    if options.get("headers") is not None:
        _check_client_headers(options["headers"])
    if options.get("cookies") is not None:
        _cookieless_jar(options["cookies"])  # a ParamError for cookies httpx would fail to send


def _check_max_redirects(count: object) -> None:
    """A count >= 0: httpx keeps any value, and the first redirect then fails with a bare TypeError."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ParamError(f"configure_client: max_redirects must be a count >= 0, not {count!r}")


def _check_event_hooks(hooks: object) -> None:
    """`{"request": [...], "response": [...]}` of functions: httpx ignores any other event name (a typo
    installs no hook) and keeps what is no function, for the first request to fail with a bare TypeError."""
    if hooks is None:
        return
    if not isinstance(hooks, Mapping) or not set(hooks) <= {"request", "response"}:
        raise ParamError(
            f"configure_client: event_hooks maps 'request' and 'response' to lists of functions, not {hooks!r}"
        )
    for event, functions in hooks.items():
        if not isinstance(functions, (list, tuple)) or not all(callable(hook) for hook in functions):
            raise ParamError(f"configure_client: event_hooks[{event!r}] must be a list of functions, not {functions!r}")


def _check_client_headers(headers: object) -> None:
    """The shared clients' headers pass the check an endpoint's own do (a token name, ASCII value, no CR, LF or
    NUL, no padding): else every request would fail only when sent, as a transport failure (status 500) that
    error policies take for a server down rather than the caller's mistake."""

    check_headers(headers, "configure_client")


def _check_timeout(timeout: httpx.Timeout) -> None:
    """Each of the timeout's parts must be None (no limit) or a number of seconds >= 0."""
    for part in ("connect", "read", "write", "pool"):
        value = getattr(timeout, part)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value is not None and not (number and value >= 0):
            raise ParamError(f"configure_client: timeout {part} must be None or seconds >= 0, not {value!r}")


class _RefuseStoring(DefaultCookiePolicy):
    """Sends the cookies a jar holds, as the default policy does, and stores none a server sets."""

    def set_ok(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        """No cookie a reply sets is kept: the shared client serves every Controller of the loop."""
        return False


def _cookieless_jar(given: object = None) -> CookieJar:
    """A cookie jar holding the cookies `given` to `configure_client` and refusing every cookie a server sets.

    httpx would use a jar given as `cookies` as the client's own, storing what servers set in it for every
    Controller to send; so the given cookies are copied in (a jar's as they are when the client is built).
    """
    jar = CookieJar(policy=_RefuseStoring())
    if given is None:
        return jar
    if not isinstance(given, (Mapping, list, tuple, httpx.Cookies, CookieJar)):
        raise ParamError(
            f"configure_client: cookies must be a dict of names to values, a list of (name, value) pairs, "
            f"httpx.Cookies or a CookieJar, not {given!r}"
        )
    build: Callable[..., httpx.Cookies] = httpx.Cookies  # the accepted kinds are checked above
    try:
        cookies = build(given)
        for cookie in cookies.jar:
            jar.set_cookie(cookie)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ParamError(f"configure_client: cookies {given!r} cannot be sent: {type(exc).__name__}: {exc}") from exc
    return jar


def _new_client() -> httpx.AsyncClient:
    """Build a shared client from the configured factory or options."""
    if _factory is not None:
        try:
            client = _factory()
        except Exception as exc:  # the user's code: a RestLayerError like any failure, the original as cause
            raise ParamError(f"configure_client: the factory raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(client, httpx.AsyncClient):
            raise ParamError(f"configure_client: the factory returned {client!r}, not an httpx.AsyncClient")
        return client
    build: Callable[..., httpx.AsyncClient] = httpx.AsyncClient  # the options were checked by name
    return build(**{**_options, "cookies": _cookieless_jar(_options.get("cookies"))})


@functools.cache
def _httpx_defaults() -> frozenset[tuple[str, str]]:
    """The headers httpx gives every client unasked (Accept, User-Agent, ...), as lower-case (name, value)."""
    build: Callable[..., httpx.AsyncClient] = httpx.AsyncClient
    return frozenset((name.lower(), value) for name, value in build().headers.items())  # opens no connection


def configured_names(client: httpx.AsyncClient) -> frozenset[str]:
    """Lower-case names of what shared `client` adds to every request by its configuration: the headers
    beyond httpx's defaults (`configure_client(headers=...)`, a factory's), and `cookie` when it holds cookies.

    They are credentials for the configured API (an API key, a session cookie; a cookie given as a
    plain name and value has no domain, so the jar sends it to any host): the endpoint drops them on a
    redirect to another origin as it drops its own headers, where httpx would drop only Authorization.
    """
    defaults = _httpx_defaults()
    names = {name.lower() for name, value in client.headers.items() if (name.lower(), value) not in defaults}
    if len(client.cookies.jar):
        names.add("cookie")
    return frozenset(names)


def same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    """Same scheme, host and port (an implicit default port equals the explicit one)."""
    return a.scheme == b.scheme and a.host == b.host and _port(a) == _port(b)


def _port(url: httpx.URL) -> int | None:
    return url.port or {"http": 80, "https": 443}.get(url.scheme)


def carry_on_redirect(
    request: httpx.Request, next_request: httpx.Request, own_names: frozenset[str] | set[str], left_origin: bool
) -> bool:
    """Apply the redirect rule to `next_request`, the hop after `request`; whether the redirect has left the origin.

    `own_names` (lower case) are the headers the caller added for its API (its own, and `configured_names` on a
    shared client): once a hop leaves the first origin, it and every later hop (even one coming back) goes
    without them, where httpx would drop only Authorization. While on the origin they are kept, the Cookie
    header included (httpx rebuilds a redirect's Cookie from the client's jar alone).
    """
    left_origin = left_origin or not same_origin(request.url, next_request.url)
    if left_origin:
        for name in own_names:
            next_request.headers.pop(name, None)
    elif "cookie" in own_names and "cookie" in request.headers:
        next_request.headers["Cookie"] = request.headers["Cookie"]
    return left_origin


def get_client() -> httpx.AsyncClient:
    """The shared client of the running loop, created on first use."""
    global _last
    loop = asyncio.get_running_loop()
    last = _last
    if last is not None and last[0] is loop and not last[1].is_closed:
        return last[1]
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = _clients[loop] = _new_client()
    _last = (loop, client)
    return client


async def aclose() -> None:
    """Close the running loop's shared client; a later request opens a new one.

    Requests still under way on it (another controller's) finish first: the last one closes it.
    """
    global _last
    loop = asyncio.get_running_loop()
    client = _clients.pop(loop, None)
    if _last is not None and _last[0] is loop:
        _last = None
    if client is None:
        return
    if client in _in_use:
        _retired.add(client)
    else:
        await client.aclose()


def hold(client: httpx.AsyncClient) -> None:
    """A request (or stream) starts on shared `client`: `aclose()` lets it finish instead of cutting it off."""
    _in_use[client] = _in_use.get(client, 0) + 1


async def release(client: httpx.AsyncClient) -> None:
    """That request is done; the last one on a client that `aclose()` retired closes it."""
    left = _in_use[client] - 1
    if left:
        _in_use[client] = left
        return
    del _in_use[client]
    if client in _retired:
        _retired.discard(client)
        await client.aclose()


class _HeldBody(httpx.AsyncByteStream):
    """A streamed reply's body that keeps its request's hold on the shared client until it is closed.

    A body dropped unclosed lets go of the hold when it is collected, so a client `aclose()`
    retired is still closed rather than kept open for good.
    """

    def __init__(self, body: httpx.AsyncByteStream, client: httpx.AsyncClient) -> None:
        self._body = body
        self._client = client
        self._dropped = weakref.finalize(self, _drop_hold, client, asyncio.get_running_loop())

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._body:
            yield chunk

    async def aclose(self) -> None:
        """Close the body, then release the hold once (the last request on a retired client closes it)."""
        try:
            await self._body.aclose()
        finally:
            if self._dropped.detach() is not None:
                await release(self._client)


_closing: set[asyncio.Task[None]] = set()


def _drop_hold(client: httpx.AsyncClient, loop: asyncio.AbstractEventLoop) -> None:
    """`release(client)` for a body collected unclosed (no await there): a retired client's close is
    scheduled on its loop, unless that loop is closed (its connections went with it)."""
    left = _in_use.get(client, 0) - 1
    if left > 0:
        _in_use[client] = left
        return
    _in_use.pop(client, None)
    if client not in _retired:
        return
    _retired.discard(client)
    with suppress(RuntimeError):  # the loop closed meanwhile
        if not loop.is_closed():
            loop.call_soon_threadsafe(_close_soon, client)


def _close_soon(client: httpx.AsyncClient) -> None:
    """Close `client` in a task of the running loop, kept until done (a loop holds its tasks weakly)."""
    task = asyncio.ensure_future(client.aclose())
    _closing.add(task)
    task.add_done_callback(_closing.discard)


def hold_until_closed(client: httpx.AsyncClient, response: httpx.Response) -> bool:
    """Hand the request's hold on shared `client` to `response`, whose body is still to be read: `aclose()`
    then waits for that body to be read or closed, rather than cutting it off. False: nothing to hand."""
    body = response.stream
    if response.is_closed or not isinstance(body, httpx.AsyncByteStream):
        return False
    response.stream = _HeldBody(body, client)
    return True


@asynccontextmanager
async def client_session() -> AsyncIterator[httpx.AsyncClient]:
    """`async with client_session() as client:` closes the shared client on exit."""
    try:
        yield get_client()
    finally:
        await aclose()
