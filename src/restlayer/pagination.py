"""Iterate an API's pages until the last one: `async for page in paginate(ctrl, endpoint, params, next_page=...)`.

Every page is fetched through the controller, so its entities land in the store
like any other fetch. `next_page` reads where the following page is and returns
its params, or None on the last page; three readers cover the usual APIs:

- `cursor_in_body("next", param="page")`: the body names the next page number
  or cursor (`{"results": [...], "next": 3}`);
- `next_url_in_body("next")`: the body holds the next page's URL
  (`{"results": [...], "next": "https://.../items?page=3"}`);
- `link_header()`: the reply's `Link: <...>; rel="next"` header (RFC 8288).

The blocking form is `restlayer.sync.paginate`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx

from restlayer._typing import T, T_co
from restlayer.errors import ParamError, RestLayerError
from restlayer.rest.endpoint import url_params_and_body

if TYPE_CHECKING:
    from restlayer.core import Controller
    from restlayer.rest import RestEndpoint

__all__ = ["Page", "cursor_in_body", "link_header", "next_url_in_body", "paginate", "params_from_url"]


@dataclass(frozen=True)
class Page(Generic[T_co]):
    """What a `next_page` reader sees of one page: its data, the params that fetched it, the raw reply.

    `Page[T]` is a page of an endpoint answering with a `T` (a bare `Page` reads its data untyped).
    `params` are the caller's own values (or a reader's, or a next URL's query), typed `Any` as an
    untyped endpoint's params are: a reader knows what it put there (`int(page.params["limit"])`).
    """

    data: T_co
    params: Mapping[str, Any]
    response: httpx.Response | None
    endpoint: RestEndpoint[object, ...]


#: A reader of any page (the readers below); `paginate` also takes one typed for its endpoint's pages.
NextPage = Callable[[Page[object]], "Mapping[str, object] | None"]


def _member(data: object, field: str) -> object:
    """`data[field]` for a dict (None when absent: the last page), `data.field` for an object.

    A body that has no fields at all (a list, a number, a string) or an object without
    that attribute can never name a next page: a RestLayerError, not a silent first-and-last page.
    """
    if isinstance(data, Mapping):
        return data.get(field)
    if data is None:
        return None
    if not hasattr(data, field):
        kind = "list" if isinstance(data, Sequence) and not isinstance(data, str) else type(data).__name__
        raise RestLayerError(f"the page is a {kind}, which has no field {field!r} naming the next page")
    return getattr(data, field)


def cursor_in_body(field: str = "next", *, param: str = "cursor") -> NextPage:
    """The body's `field` (a page number or an opaque cursor) becomes the next request's `param`."""

    def next_page(page: Page[object]) -> Mapping[str, object] | None:
        cursor = _member(page.data, field)
        if cursor is None or cursor == "":
            return None
        return {**page.params, param: cursor}

    return next_page


def next_url_in_body(field: str = "next") -> NextPage:
    """The body's `field` is the next page's URL (absolute, or relative to the page's URL)."""

    def next_page(page: Page[object]) -> Mapping[str, object] | None:
        url = _member(page.data, field)
        if not url:
            return None
        return params_from_url(page.endpoint, page.params, str(url))

    return next_page


def link_header(rel: str = "next") -> NextPage:
    """The URL of the reply's `Link` header entry with relation `rel` (RFC 8288)."""
    return _LinkHeader(rel)


class _LinkHeader:
    """`link_header`'s reader: it needs the page's HTTP reply, which `paginate` requests when it has none."""

    reads_reply = True  # a page served without a reply of its own (a shared fetch, a shared store) is requested

    def __init__(self, rel: str) -> None:
        self.rel = rel

    def __call__(self, page: Page[object]) -> Mapping[str, object] | None:
        if page.response is None:
            raise RestLayerError(
                f"{page.endpoint.name}: this page has no HTTP reply to read its Link header from "
                "(it was served without a request of its own)"
            )
        link = page.response.links.get(self.rel)
        if not link or not link.get("url"):
            return None
        return params_from_url(page.endpoint, page.params, link["url"])


def _query_params(query: str) -> dict[str, object]:
    """A URL's query as params: a key given once maps to its value, a repeated key to the list
    of its values (what `search_to_string` sends for a list, so the URL is built back the same)."""
    grouped: dict[str, list[str]] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        grouped.setdefault(key, []).append(value)
    return {key: values[0] if len(values) == 1 else values for key, values in grouped.items()}


def params_from_url(endpoint: RestEndpoint[object, ...], params: Mapping[str, object], url: str) -> dict[str, object]:
    """The params that make `endpoint` request `url`: path params kept, the query taken from `url`.

    A URL the endpoint cannot produce (another host or path) is a ParamError naming both.
    """
    current = urlsplit(endpoint.url(params))
    target = urlsplit(urljoin(endpoint.url(params), url))
    in_query = {key for key, _ in parse_qsl(current.query, keep_blank_values=True)}
    candidate = {k: v for k, v in params.items() if k not in in_query}
    candidate.update(_query_params(target.query))
    built = urlsplit(endpoint.url(candidate))
    same = (built.scheme, built.netloc, built.path) == (target.scheme, target.netloc, target.path)
    if not same or sorted(parse_qsl(built.query)) != sorted(parse_qsl(target.query)):
        raise ParamError(f"{endpoint.name}: the next page {url!r} is not a URL this endpoint requests")
    return candidate


def _request_of(endpoint: RestEndpoint[object, ...], params: Mapping[str, object]) -> str:
    """`"<method> <url>"` of the page `params` ask for, and its body when it sends one: what tells one
    page from another.

    Not `key()`: a `get_page` (or any endpoint with `remove_cursor`) leaves the cursor
    out of its key on purpose, so every page of one list shares a key. The body counts as the
    endpoint splits the call: a GraphQL page is named by its variables, sent in the body
    to one URL for every page, so the URL alone took each next page for the first one again.
    """
    url_params, body = url_params_and_body(endpoint, (params,))
    request = f"{endpoint.method} {endpoint.url(url_params)}"
    return request if body is None else f"{request} {_body_text(body)}"


def _body_text(body: object) -> str:
    """A request body as compact JSON, to compare pages; its repr when JSON cannot hold it
    (the fetch then refuses the body with its own ParamError)."""
    try:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=repr)
    except (ValueError, RecursionError):  # a circular or too deeply nested value
        return repr(body)


def _next_params(
    next_page: Callable[[Page[T]], Mapping[str, object] | None], page: Page[T]
) -> Mapping[str, object] | None:
    """`next_page(page)`; a failure of the caller's function is a RestLayerError naming it.

    The original stays in `__cause__`, as for the other functions restlayer calls for you.
    """
    try:
        params = next_page(page)
    except RestLayerError:
        raise
    except Exception as exc:
        label = getattr(next_page, "__qualname__", repr(next_page))
        raise RestLayerError(f"{page.endpoint.name}: next_page {label} raised {type(exc).__name__}: {exc}") from exc
    return params


def _check_max_pages(max_pages: object) -> None:
    """`ParamError` unless `max_pages` is an int of at least 1: `None`, `"3"` or `2.5` failed with a bare
    TypeError from `range`, and 0 (or a negative count, or `True`) ended the walk before its first page with
    "more than max_pages pages", though the API may have a single page."""
    if not isinstance(max_pages, int) or isinstance(max_pages, bool) or max_pages < 1:
        raise ParamError(f"paginate: max_pages must be an int of at least 1, not {max_pages!r}")


async def paginate(
    ctrl: Controller,
    endpoint: RestEndpoint[T],
    params: Mapping[str, object] | None = None,
    *,
    next_page: Callable[[Page[T]], Mapping[str, object] | None],
    max_pages: int = 1000,
) -> AsyncGenerator[T, None]:
    """Fetch page after page through `ctrl`, yielding each page's data, until `next_page` returns None.

    `max_pages` bounds the walk; params seen before (a server repeating a cursor) end it with an error.
    """
    if not callable(next_page):
        raise ParamError(f"paginate: next_page must be a function of a Page (e.g. cursor_in_body()), not {next_page!r}")
    _check_max_pages(max_pages)
    replies: list[httpx.Response] = []
    original = endpoint.fetch_response

    async def capture(url: str, init: Mapping[str, object]) -> httpx.Response:
        response: httpx.Response = await original(url, init)
        replies.append(response)
        return response

    paged = endpoint.extend(fetch_response=capture)
    current: Mapping[str, object] | None = dict(params or {})
    seen: set[str] = set()
    for _ in range(max_pages):
        if current is None:
            return
        request = _request_of(paged, current)
        if request in seen:
            raise RestLayerError(f"{endpoint.name}: the server sent page {request} twice; stopping")
        seen.add(request)
        replies.clear()
        data = await ctrl.fetch(paged, current)
        if not replies and getattr(next_page, "reads_reply", False):
            # Served without a request of this walk (joined another fetch of the URL, or read from a
            # shared store): the reader needs the reply's headers, so ask the server for them.
            await paged(current)
        yield data
        current = _next_params(next_page, Page(data, current, replies[-1] if replies else None, endpoint))
    if current is not None:
        raise RestLayerError(f"{endpoint.name}: more than max_pages={max_pages} pages; raise max_pages to go on")
