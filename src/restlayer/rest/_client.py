"""The one `httpx.AsyncClient` the library shares, one per running event loop.

An httpx client's connections belong to the loop that opened them, so a client
is never handed to another loop, and one whose loop has closed is replaced.

The shared client keeps no cookies: it serves every Controller of the loop, so a
session cookie one of them received would otherwise be sent by all the others
(and survive `reset_entire_store()`). A cookie session needs a client of its own,
passed as the endpoint's `client`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx

#: Defaults of the shared client: follow redirects like `fetch` does.
DEFAULT_TIMEOUT = httpx.Timeout(30.0)

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()
_last: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None = None


def _cookieless_jar() -> CookieJar:
    """A cookie jar that refuses every cookie a server sets."""
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


def _new_client() -> httpx.AsyncClient:
    """Build the shared client (a separate function so tests may see the defaults)."""
    return httpx.AsyncClient(follow_redirects=True, timeout=DEFAULT_TIMEOUT, cookies=_cookieless_jar())


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
    """Close the running loop's shared client; a later request opens a new one."""
    global _last
    loop = asyncio.get_running_loop()
    client = _clients.pop(loop, None)
    if _last is not None and _last[0] is loop:
        _last = None
    if client is not None:
        await client.aclose()


@asynccontextmanager
async def client_session() -> AsyncIterator[httpx.AsyncClient]:
    """`async with client_session() as client:` closes the shared client on exit."""
    try:
        yield get_client()
    finally:
        await aclose()
