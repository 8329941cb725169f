"""`RestEndpoint`: a callable that builds a URL, sends it over httpx and parses the reply.

Options come from constructor keywords, from class attributes of a subclass, or
from `extend(**options)`; everything derivable from them (the compiled path,
whether calls take a body, default headers) is computed once at construction so
the call path stays close to a bare httpx request.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, overload

import httpx

from restlayer._args import merge_keywords, split_call
from restlayer._sentinel import Sentinel
from restlayer._time import normalize_time_options
from restlayer._typing import Args, B, BodyMethod, E, NoBodyMethod, P, Params, Self, T, T_co
from restlayer.core._versions import note_endpoint
from restlayer.errors import (
    ClientLoopError,
    DeadlineExceededError,
    DefinitionError,
    NetworkError,
    ParamError,
    RedirectError,
    RestLayerError,
    StatusError,
)
from restlayer.rest._body import RequestParts
from restlayer.rest._client import (
    carry_on_redirect,
    configured_names,
    get_client,
    hold,
    hold_until_closed,
    release,
)
from restlayer.rest._headers import TOKEN, check_headers, header_items, own_headers
from restlayer.rest._parse import (
    ByteStream,
    parse_reply,
    read_body,
    read_error_body,
    status_message,
    transport_error,
)
from restlayer.rest._path import compile_path
from restlayer.rest._retry import Retry
from restlayer.rest._url import build_url
from restlayer.rest._url import search_to_string as _default_search_to_string
from restlayer.schema import Schema
from restlayer.schema._base import NestedListShorthand, compile_schema
from restlayer.schema._collection import CursorRemover, cursor_args, misuse_of

__all__ = ["OPTIONS", "ByteStream", "RestEndpoint"]

_log = logging.getLogger("restlayer")


#: Marker for an option left out (`body` tells it from an explicit `None`).
UNSET: Final = Sentinel("UNSET")

OPTIONS: Final = frozenset(
    {
        "path", "url_prefix", "method", "schema", "body", "search_params",
        "pagination_field", "content", "request_init", "side_effect",
        "data_expiry_length", "error_expiry_length", "error_policy",
        "invalid_if_stale", "poll_frequency", "get_optimistic_response", "update",
        "name", "client", "process", "url", "search_to_string", "key", "test_key",
        "get_request_init", "get_headers", "fetch_response", "parse_response",
        "move_path", "remove_cursor", "max_body_size", "total_timeout", "retry",
        "params",
    }
)  # fmt: skip
"""Every option name `RestEndpoint(...)`, `extend(...)` and subclasses (as class attributes) understand."""

CONTENT_MODES: Final = frozenset({"json", "blob", "text", "arrayBuffer", "stream"})
_NO_BODY_METHODS: Final = ("GET", "DELETE")
#: Default cap on a reply's decoded body: 100 MiB.
DEFAULT_MAX_BODY_SIZE: Final = 100 * 1024 * 1024
#: Redirects after which a mutation would be repeated as a GET by clients.
_METHOD_CHANGING_REDIRECTS: Final = frozenset({301, 302, 303})
_READ_ONLY_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
#: Headers that describe the body, kept when a redirect crosses origins.
_BODY_HEADERS: Final = frozenset({"content-type", "content-length"})


def _class_sets(cls: type, name: str) -> bool:
    """Whether a subclass of RestEndpoint (not the base itself) defines `name`."""
    for klass in cls.__mro__:
        if klass is RestEndpoint or klass is object:
            return False
        if name in klass.__dict__:
            return True
    return False


def _check_auth(auth: object, endpoint: str) -> None:
    """Refuse an `auth` request option httpx cannot use: it would fail only once sending, with a bare error.

    httpx takes an `httpx.Auth`, a function of the request, a `(user, password)` tuple of
    str or bytes, or None (no auth); `USE_CLIENT_DEFAULT` when the option is not given.
    """
    if auth is None or auth is httpx.USE_CLIENT_DEFAULT or isinstance(auth, httpx.Auth) or callable(auth):
        return
    if isinstance(auth, tuple) and len(auth) == 2 and all(isinstance(part, (str, bytes)) for part in auth):
        return
    raise ParamError(
        f"{endpoint}: the request option auth must be an httpx.Auth, a function of the request, "
        f"a (user, password) tuple of str or None, not {auth!r}"
    )


if TYPE_CHECKING:

    class _ItemEndpoint(Protocol):
        """Typing only: `list_endpoint.push` is an endpoint of one item of the list.

        Any dict result (a Values collection, or a list inside a page object) gives an
        endpoint of `Any`; `dict[str, Any]`, as `dict` is invariant in its values.
        """

        @overload
        def __get__(self, obj: RestEndpoint[list[T]], owner: object) -> RestEndpoint[T]: ...
        @overload
        def __get__(self, obj: RestEndpoint[dict[str, Any]], owner: object) -> RestEndpoint[Any]: ...

    class _AssignEndpoint(Protocol):
        """Typing only: `values_endpoint.assign` reads the keyed entries a call sends, like the schema's `assign`.

        A list result has no keyed entries to infer: an endpoint of `Any`. The overloads
        must not both match one endpoint (mypy would make the result `Any`).
        """

        @overload
        def __get__(self, obj: RestEndpoint[dict[str, T]], owner: object) -> RestEndpoint[dict[str, T]]: ...
        @overload
        def __get__(self, obj: RestEndpoint[list[Any]], owner: object) -> RestEndpoint[Any]: ...


class RestEndpoint(Generic[T_co, Params, Args]):
    """A REST call: `await ep(params, body)` sends it; `ep.key(...)` names its cache slot.

    `RestEndpoint[Todo]` is an endpoint the Controller answers with a `Todo`;
    the type is inferred from `schema` (or `process`) for type checkers only.
    `params=TodoParams` (a `TypedDict`) makes it a `RestEndpoint[Todo, [TodoParams]]`
    whose calls and URLs type checkers check against it (with `body=TodoBody`
    too: `RestEndpoint[Todo, [TodoParams], [TodoParams, TodoBody]]`).

    Every option may be given to the constructor, set as a class attribute of a
    subclass, or changed by `extend(**options)`; callables given as options
    (`process`, `key`, `error_policy`, ...) replace the method of that name and
    are called without `self`. A subclass may accept extra options: any attribute
    it declares.
    """

    path: str
    url_prefix: str = ""
    method: str = "GET"
    #: The schema as given (any schema, or None). Typed `Any`, not `object`: `ctrl.get(ep.schema, ...)` must
    #: type-check, and the result type is `schema`'s, which only the endpoint's type parameter records.
    schema: Any = None
    body: object = UNSET
    search_params: object = None
    pagination_field: str | None = None
    content: str | None = None
    request_init: Mapping[str, object] | None = None
    side_effect: bool | None = None
    data_expiry_length: int | None = None
    error_expiry_length: int | None = None
    invalid_if_stale: bool = False
    poll_frequency: int | None = None
    get_optimistic_response: Callable[..., object] | None = None
    update: Callable[..., object] | None = None
    name: str
    client: httpx.AsyncClient | None = None
    move_path: str | None = None
    remove_cursor: Callable[..., Iterable[object]] | None = None
    #: Largest decoded reply body accepted, in bytes (`None`: no limit).
    max_body_size: int | None = DEFAULT_MAX_BODY_SIZE
    #: Seconds one attempt of the request may take, redirects and body included (`None`: no
    #: limit; each retry of `retry=` gets its own; httpx's `timeout` still bounds each connect, read and write).
    total_timeout: float | None = None
    #: When to send a failed request again (`Retry`, or an int: that many retries); None: never.
    retry: Retry | None = None
    #: The `TypedDict` of the URL parameters, for type checkers (checked against the path once).
    params: type[Mapping[str, object]] | None = None

    @overload
    def __init__(
        self: RestEndpoint[E, [P], [P, B]], *, schema: type[E], params: type[P], body: type[B], **options: object
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[E, [P]],
        *,
        schema: type[E],
        params: type[P],
        method: BodyMethod,
        body: None,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[E, [P], [P, object]],
        *,
        schema: type[E],
        params: type[P],
        method: BodyMethod,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(self: RestEndpoint[E, [P]], *, schema: type[E], params: type[P], **options: object) -> None: ...
    @overload
    def __init__(self: RestEndpoint[E], *, schema: type[E], **options: object) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[E], [P], [P, B]],
        *,
        schema: list[type[E]],
        params: type[P],
        body: type[B],
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[E], [P]],
        *,
        schema: list[type[E]],
        params: type[P],
        method: BodyMethod,
        body: None,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[E], [P], [P, object]],
        *,
        schema: list[type[E]],
        params: type[P],
        method: BodyMethod,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[E], [P]], *, schema: list[type[E]], params: type[P], **options: object
    ) -> None: ...
    @overload
    def __init__(self: RestEndpoint[list[E]], *, schema: list[type[E]], **options: object) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[T], [P], [P, B]],
        *,
        schema: list[Schema[T]],
        params: type[P],
        body: type[B],
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[T], [P]],
        *,
        schema: list[Schema[T]],
        params: type[P],
        method: BodyMethod,
        body: None,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[T], [P], [P, object]],
        *,
        schema: list[Schema[T]],
        params: type[P],
        method: BodyMethod,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[T], [P]], *, schema: list[Schema[T]], params: type[P], **options: object
    ) -> None: ...
    @overload
    def __init__(self: RestEndpoint[list[T]], *, schema: list[Schema[T]], **options: object) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[Any], [P], [P, B]],
        *,
        schema: NestedListShorthand,
        params: type[P],
        body: type[B],
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[Any], [P]],
        *,
        schema: NestedListShorthand,
        params: type[P],
        method: BodyMethod,
        body: None,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[Any], [P], [P, object]],
        *,
        schema: NestedListShorthand,
        params: type[P],
        method: BodyMethod,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[list[Any], [P]], *, schema: NestedListShorthand, params: type[P], **options: object
    ) -> None: ...
    @overload
    def __init__(self: RestEndpoint[list[Any]], *, schema: NestedListShorthand, **options: object) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[T, [P], [P, B]], *, schema: Schema[T], params: type[P], body: type[B], **options: object
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[T, [P]],
        *,
        schema: Schema[T],
        params: type[P],
        method: BodyMethod,
        body: None,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[T, [P], [P, object]],
        *,
        schema: Schema[T],
        params: type[P],
        method: BodyMethod,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(self: RestEndpoint[T, [P]], *, schema: Schema[T], params: type[P], **options: object) -> None: ...
    @overload
    def __init__(self: RestEndpoint[T], *, schema: Schema[T], **options: object) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[dict[str, Any], [P], [P, B]],
        *,
        schema: Mapping[str, object],
        params: type[P],
        body: type[B],
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[dict[str, Any], [P]],
        *,
        schema: Mapping[str, object],
        params: type[P],
        method: BodyMethod,
        body: None,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[dict[str, Any], [P], [P, object]],
        *,
        schema: Mapping[str, object],
        params: type[P],
        method: BodyMethod,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[dict[str, Any], [P]], *, schema: Mapping[str, object], params: type[P], **options: object
    ) -> None: ...
    @overload
    def __init__(self: RestEndpoint[dict[str, Any]], *, schema: Mapping[str, object], **options: object) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[T, [P], [P, B]],
        *,
        process: Callable[..., T],
        schema: None = None,
        params: type[P],
        body: type[B],
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[T, [P]],
        *,
        process: Callable[..., T],
        schema: None = None,
        params: type[P],
        method: BodyMethod,
        body: None,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[T, [P], [P, object]],
        *,
        process: Callable[..., T],
        schema: None = None,
        params: type[P],
        method: BodyMethod,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[T, [P]],
        *,
        process: Callable[..., T],
        schema: None = None,
        params: type[P],
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[T], *, process: Callable[..., T], schema: None = None, **options: object
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[Any, [P], [P, B]],
        *,
        schema: str | None = None,
        process: None = None,
        params: type[P],
        body: type[B],
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[Any, [P]],
        *,
        schema: str | None = None,
        process: None = None,
        params: type[P],
        method: BodyMethod,
        body: None,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[Any, [P], [P, object]],
        *,
        schema: str | None = None,
        process: None = None,
        params: type[P],
        method: BodyMethod,
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[Any, [P]],
        *,
        schema: str | None = None,
        process: None = None,
        params: type[P],
        **options: object,
    ) -> None: ...
    @overload
    def __init__(
        self: RestEndpoint[Any], *, schema: str | None = None, process: None = None, **options: object
    ) -> None: ...
    def __init__(self, **options: object) -> None:
        cls = type(self)
        for option in options:
            if option not in OPTIONS and not _class_sets(cls, option):
                raise ParamError(f"{cls.__name__}: unknown option {option!r}")
        self._options: dict[str, object] = options
        self.__dict__.update(options)
        if not isinstance(getattr(self, "path", None), str):
            raise ParamError(f"{cls.__name__} needs a `path` (str)")
        self._template = compile_path(self.path)
        if self.params is not None:
            _check_params_type(self.params, self._template.required, cls.__name__)
        if not isinstance(self.url_prefix, str):
            raise ParamError(f"{cls.__name__}: url_prefix must be a str, not {self.url_prefix!r}")
        self._derive_method(options)
        if "name" not in options and not _class_sets(cls, "name"):
            self.name = self.url_prefix + self.path
        _check_options(self, options)
        self._guard_hooks()
        if self.content is not None and self.content not in CONTENT_MODES:
            raise ParamError(f"content must be one of {sorted(CONTENT_MODES)}, not {self.content!r}")
        self._has_body = self.method not in _NO_BODY_METHODS and self.body is not None
        self._stream = self.content == "stream"
        self._schema_set = self.schema is not None and not isinstance(self.schema, str)
        process_overridden = "process" in options or cls.process is not RestEndpoint.process
        self._raw_ok = not self._schema_set or process_overridden
        self._parts = RequestParts(self.request_init)
        check_headers(self._parts.plain_headers, f"{self.name}: request_init")  # refused now, not when sent
        normalize_time_options(self)
        self.retry = _retry_policy(self.retry)
        note_endpoint(self.schema)  # its rows, stored by another process or run, are this version's

    def _guard_hooks(self) -> None:
        """Make the user's own `key`, `url` and `search_to_string` (options or subclass methods) fail
        with a RestLayerError naming the endpoint, the original as its cause.

        They run inside the library (every read computes a key, every call a URL), so an exception
        of theirs would otherwise reach the caller raw, like no other failure of the endpoint.
        """
        for hook in _GUARDED_HOOKS:
            method = getattr(self, hook)
            if getattr(method, "__func__", None) is getattr(RestEndpoint, hook):
                continue  # the library's own: raises RestLayerErrors only
            self.__dict__[hook] = _guarded(self.name, hook, method)

    def __getstate__(self) -> dict[str, object]:
        """Pickle without the guards `_guard_hooks` put around hooks (closures pickle cannot name)."""
        state = self.__dict__.copy()
        for hook in _GUARDED_HOOKS:
            if hook in self._options:
                state[hook] = self._options[hook]
            else:
                state.pop(hook, None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        """Unpickle, then guard the hooks again."""
        self.__dict__.update(state)
        self._guard_hooks()

    def _derive_method(self, options: Mapping[str, object]) -> None:
        """side_effect from the method unless given; method from side_effect unless given."""
        cls = type(self)
        method_given = "method" in options or _class_sets(cls, "method")
        if "side_effect" in options:
            side_effect = self.side_effect  # set from options above
        elif "method" not in options and _class_sets(cls, "side_effect"):
            side_effect = cls.side_effect
        else:
            method = self.method if method_given else None
            side_effect = None if method is None or method == "GET" else True
        self.side_effect = side_effect
        if not method_given:
            self.method = "POST" if side_effect else "GET"

    if TYPE_CHECKING:

        @property
        def __result__(self) -> T_co:
            """Typing only (no run-time value): what the Controller returns for this endpoint."""
            ...

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, method={self.method!r}, path={self.path!r})"

    # -- arguments, URLs and keys -------------------------------------------------

    def bind(self, *args: object, **kwargs: object) -> tuple[object, ...]:
        """Canonical positional arguments: keyword arguments merged into the params dict."""
        self._check_usable()
        if not kwargs:
            return args
        if self._has_body and len(args) < 2:
            if not args:
                raise ParamError(
                    f"{self.name}: {self.method} takes a body, but only keyword arguments were given "
                    f"({', '.join(kwargs)}); pass the body positionally: ep(body, **params)"
                )
            return ({**kwargs}, args[0])
        return merge_keywords(args, kwargs)

    def _check_usable(self) -> None:
        """`ParamError` for an endpoint whose schema can never store a reply (a list's `assign`).

        Checked when a call is bound or sent, so such a call sends nothing and leaves the store alone.
        """
        misuse = misuse_of(self.schema)
        if misuse is not None:
            raise ParamError(f"{self.name}: {misuse}")

    def _split(self, args: tuple[object, ...]) -> tuple[object, object]:
        """`(URL params, request body)` of canonical call arguments (the hook GQLEndpoint overrides)."""
        return split_call(args, self._has_body)

    if TYPE_CHECKING:

        def url(self, *args: Params.args, **kwargs: Params.kwargs) -> str:
            """url_prefix + the filled template + `?` and the params the template does not use."""
            ...

    def _url(self, params: object = None) -> str:
        """url_prefix + the filled template + `?` and the params the template does not use."""
        if not params:
            return self.url_prefix + self._template.fill({}, endpoint=self.name)
        if not isinstance(params, Mapping):
            raise ParamError(f"{self.name}: URL params must be a dict, not {type(params).__name__}")
        return build_url(self.url_prefix, self._template, params, self.search_to_string, self.name)

    if not TYPE_CHECKING:  # one function: checkers see `url` typed by `Params`, callers the same object
        url = _url

    def search_to_string(self, params: Mapping[str, object]) -> str:
        """Encode search params: sorted keys, form encoding (override for nested objects)."""
        return _default_search_to_string(params)

    def key(self: RestEndpoint[object, ...], *args: object) -> str:
        """The store key of a call: `"<method> <url>"`; the body never enters it."""
        remove_cursor = self.remove_cursor
        if remove_cursor is not None:
            args = cursor_args(remove_cursor, args)
        return f"{self.method} {self.url(split_call(args, self._has_body)[0])}"

    def test_key(self, key: str) -> bool:
        """Whether a store key belongs to this endpoint (any params)."""
        prefix = f"{self.method} {self.url_prefix}"
        if not key.startswith(prefix):
            return False
        rest = key[len(prefix) :]
        cut = rest.rfind("?")
        if cut != -1 and self._template.match(rest[:cut]) is not None:
            return True
        return self._template.match(rest) is not None

    # -- the request ---------------------------------------------------------------

    async def get_request_init(self, body: object) -> dict[str, object]:
        """The request options: request_init, the method, headers and the encoded body."""
        parts = self._parts
        if not parts.describes(self.request_init):
            parts = self._parts = RequestParts(self.request_init)
        init, headers = parts.encode(self.method, body, self.name)
        result = self.get_headers(dict(headers))
        if inspect.isawaitable(result):
            result = await result
        if result is None:  # sending no headers at all would drop credentials and Content-Type silently
            raise ParamError(f"{self.name}: get_headers returned None; it must return the headers (missing `return`?)")
        init["headers"] = result
        return init

    def get_headers(self, headers: dict[str, str]) -> Mapping[str, str] | Awaitable[Mapping[str, str]]:
        """Final headers of a request (sync or async): the place to add credentials."""
        return headers

    async def fetch_response(self, url: str, init: Mapping[str, object]) -> httpx.Response:
        """Send the request; a non-2xx reply or a transport failure raises NetworkError.

        Redirects are followed by hand: a 301/302/303 answer to a mutation raises
        `RedirectError`, and the endpoint's own headers (and those and cookies the shared client is
        configured with) never go to another origin.
        Unless `content="stream"`, the body is read here, within `max_body_size`.
        """
        client = self.client or get_client()
        kwargs = dict(init)
        method = str(kwargs.pop("method", self.method))
        follow = (
            _checked_follow(kwargs.pop("follow_redirects"), self.name)
            if "follow_redirects" in kwargs
            else bool(client.follow_redirects)  # the client's own setting, as httpx reads it
        )
        auth = kwargs.pop("auth", httpx.USE_CLIENT_DEFAULT)
        _check_auth(auth, self.name)
        own = kwargs["headers"] = own_headers(kwargs.get("headers"))
        check_headers(own, self.name)
        build: Callable[..., httpx.Request] = client.build_request  # `init` holds httpx's keyword options
        try:
            _keep_own_query(client, url, kwargs)
            request = build(method, url, **kwargs)
        except httpx.InvalidURL as exc:
            raise transport_error(url, exc, method=method) from exc
        except (TypeError, ValueError, AttributeError) as exc:  # an option httpx does not take, or a value of
            # the wrong type (`params=5`, `files="x.txt"`), from `request_init` or `get_request_init`
            given = ", ".join(sorted(kwargs))
            raise ParamError(f"{self.name}: the request options were refused by httpx: {exc} (given: {given})") from exc
        shared = self.client is None
        own_names = {str(name).lower() for name, _ in header_items(own)}
        if kwargs.get("cookies"):  # the `cookies` request option ends up in the Cookie header
            own_names.add("cookie")
        if shared:  # what configure_client set is for this API too, like the endpoint's own headers
            own_names |= configured_names(client)
        sending = self._send(client, request, follow, auth, own_names - _BODY_HEADERS)
        deadline = self.total_timeout
        if shared:  # leaving another controller's `async with` closes the shared client after this request
            hold(client)
        kept = False  # a streamed body, still to be read, keeps the hold until it is closed
        try:
            response = await (sending if deadline is None else asyncio.wait_for(sending, deadline))
            kept = shared and self._stream and hold_until_closed(client, response)
            return response
        except asyncio.TimeoutError as exc:
            raise DeadlineExceededError(
                f"{url}: no complete reply within total_timeout={deadline}s", status=500
            ) from exc
        finally:
            if shared and not kept:
                await release(client)

    async def _send(
        self, client: httpx.AsyncClient, request: httpx.Request, follow: bool, auth: object, own_names: set[str]
    ) -> httpx.Response:
        """Send `request`, following redirects when `follow`; the checked, read reply."""
        response = await self._send_once(client, request, auth)
        left_origin = False  # once off the origin, no later hop carries `own_names` (httpx re-adds client cookies)
        try:
            for _ in range(client.max_redirects):
                next_request = response.next_request
                if not follow or next_request is None:
                    break
                await response.aclose()
                self._check_redirect(response, next_request)
                left_origin = carry_on_redirect(request, next_request, own_names, left_origin)
                request = next_request
                response = await self._send_once(client, request, None)
            else:
                if follow and response.next_request is not None:
                    raise NetworkError(
                        f"{request.url}: more than {client.max_redirects} redirects", status=500, response=response
                    )
            if not response.is_success:
                response = await read_error_body(response, self.max_body_size)
                raise StatusError(status_message(response), status=response.status_code, response=response)
            if self._stream:
                return response
            return await read_body(response, self.max_body_size)
        except BaseException:
            await response.aclose()
            raise

    async def _send_once(self, client: httpx.AsyncClient, request: httpx.Request, auth: object) -> httpx.Response:
        """One hop: the reply with its headers, body not read yet (`auth`: httpx's option, whose type is private)."""
        _log.debug("request %s %s", request.method, request.url)
        send: Callable[..., Awaitable[httpx.Response]] = client.send  # `auth`'s union type is httpx-private
        try:
            return await send(request, stream=True, follow_redirects=False, auth=auth)
        except httpx.RequestError as exc:
            raise transport_error(request.url, exc, method=request.method) from exc
        except httpx.StreamConsumed as exc:  # before RuntimeError, of which it is a subclass
            raise ParamError(
                f"{self.name}: {request.method} {request.url}: the request body was a one-shot stream "
                "and cannot be sent again after a redirect; send bytes or call the final URL"
            ) from exc
        except RestLayerError:
            raise  # e.g. a ParamError for a chunk of the request body
        except RuntimeError as exc:  # e.g. "Event loop is closed": a client used on a second loop
            if "loop" not in str(exc).lower():
                raise _send_failure(self.name, request, exc) from exc
            raise ClientLoopError(_loop_advice(self.name, exc)) from exc
        except Exception as exc:
            raise _send_failure(self.name, request, exc) from exc

    async def fetch_with_retry(self, url: str, init: Mapping[str, object]) -> httpx.Response:
        """`fetch_response`, sent again after transient failures as the `retry` policy allows.

        A streamed body (a file or an async iterable) is read as it is sent and
        cannot be sent again, so such a request is never retried: a retry would
        send an empty body in its place.
        """
        retry = self.retry
        if retry is None or not _replayable(init):
            return await self.fetch_response(url, init)
        method = str(init.get("method", self.method))
        return await retry.run(method, url, lambda: self.fetch_response(url, init))

    def _check_redirect(self, response: httpx.Response, next_request: httpx.Request) -> None:
        """Refuse a redirect that would repeat a mutation as a GET."""
        status = response.status_code
        method = response.request.method.upper()
        if status in _METHOD_CHANGING_REDIRECTS and method not in _READ_ONLY_METHODS:
            location = str(next_request.url)
            raise RedirectError(
                f"{response.request.url}: the server answered {method} with a {status} redirect to "
                f"{location}; clients may repeat it there as a GET without the body, so it is not "
                "followed. Call the target URL directly (e.g. add the missing trailing slash).",
                status=status,
                location=location,
                response=response,
            )

    async def parse_response(self, response: httpx.Response) -> Any:
        """The reply's value: by `content` when set, else by Content-Type.

        Typed `Any` like a direct call's result: it is the raw reply (decoded JSON, `bytes`, `str` or a
        `ByteStream`, by `content`), which an override reads as what its `content` makes it.
        """
        return await parse_reply(response, self.content, self.schema, schema_set=self._schema_set, raw_ok=self._raw_ok)

    def process(self, value: object, *args: object) -> object:
        """Post-process the parsed value; `args` are the call arguments. Default: identity."""
        return value

    def error_policy(self, error: BaseException) -> str | None:
        """`"soft"` (keep stale data) for server and transport failures (status >= 500)."""
        status = getattr(error, "status", None)
        return "soft" if isinstance(status, int) and status >= 500 else None

    async def __call__(self, *args: Args.args, **kwargs: Args.kwargs) -> Any:
        """Send the request; the value of `process(parsed, *args)`."""
        self._check_usable()
        call: tuple[object, ...] = self.bind(*args, **kwargs) if kwargs else args
        params, body = self._split(call)
        init: Mapping[str, object] | Awaitable[Mapping[str, object]] = self.get_request_init(body)
        if inspect.isawaitable(init):
            init = await init
        if not isinstance(init, Mapping):
            raise ParamError(
                f"{self.name}: get_request_init returned {type(init).__name__}; it must return a dict of "
                "request options (missing `return`?)"
            )
        any_params: RestEndpoint[object, ...] = self  # `url` checks callers' params; these are checked already
        response = await self.fetch_with_retry(any_params.url(params), init)
        value: object = self.parse_response(response)
        if inspect.isawaitable(value):
            value = await value
        return self.process(value, *call)

    # -- derived endpoints -----------------------------------------------------------

    # `schema=None` with `process=`: no schema, so the result is process's value (as the constructor infers);
    # `process=` alone keeps the type, as the endpoint may have a schema (whose reads the result then is).
    @overload
    def extend(  # type: ignore[overload-overlap]
        self, *, process: Callable[..., T], schema: None, params: type[P], body: type[B], **options: object
    ) -> RestEndpoint[T, [P], [P, B]]: ...
    @overload
    def extend(
        self, *, process: Callable[..., T], schema: None, params: type[P], **options: object
    ) -> RestEndpoint[T, [P]]: ...
    @overload
    def extend(
        self, *, process: Callable[..., T], schema: None, **options: object
    ) -> RestEndpoint[T, Params, Args]: ...
    @overload
    def extend(self, *, schema: type[E], params: type[P], **options: object) -> RestEndpoint[E, [P]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: list[type[E]], params: type[P], **options: object) -> RestEndpoint[list[E], [P]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: list[Schema[T]], params: type[P], **options: object) -> RestEndpoint[list[T], [P]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(  # type: ignore[overload-overlap]
        self, *, schema: NestedListShorthand, params: type[P], **options: object
    ) -> RestEndpoint[list[Any], [P]]: ...
    @overload
    def extend(self, *, schema: Schema[T], params: type[P], **options: object) -> RestEndpoint[T, [P]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(  # type: ignore[overload-overlap]
        self, *, schema: Mapping[str, object], params: type[P], **options: object
    ) -> RestEndpoint[dict[str, Any], [P]]: ...
    @overload
    def extend(self, *, params: type[P], body: type[B], **options: object) -> RestEndpoint[T_co, [P], [P, B]]: ...  # type: ignore[overload-overlap]
    # A new method decides, as in the constructor, whether calls take a body after the params (a body left
    # out is the endpoint's own, so `body=None` is needed for a POST/PUT/PATCH without one).
    @overload
    def extend(
        self, *, params: type[P], method: BodyMethod, body: None, **options: object
    ) -> RestEndpoint[T_co, [P]]: ...
    @overload
    def extend(  # type: ignore[overload-overlap]
        self, *, params: type[P], method: BodyMethod, **options: object
    ) -> RestEndpoint[T_co, [P], [P, object]]: ...
    @overload
    def extend(self, *, params: type[P], **options: object) -> RestEndpoint[T_co, [P]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: type[E], **options: object) -> RestEndpoint[E, Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: list[type[E]], **options: object) -> RestEndpoint[list[E], Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: list[Schema[T]], **options: object) -> RestEndpoint[list[T], Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: NestedListShorthand, **options: object) -> RestEndpoint[list[Any], Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: Schema[T], **options: object) -> RestEndpoint[T, Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(  # type: ignore[overload-overlap]
        self, *, schema: Mapping[str, object], **options: object
    ) -> RestEndpoint[dict[str, Any], Params, Args]: ...
    # A new method without `params=`: GET/DELETE calls take the params alone; a POST/PUT/PATCH call
    # takes a body too (unless `body=None`), typed as any arguments, as a type checker cannot append
    # a body to the endpoint's `[TodoParams]` (give `params=` again to have the call checked). With a new
    # `schema=` the overloads above win: their call arguments stay the endpoint's.
    @overload
    def extend(self, *, method: BodyMethod, body: None, **options: object) -> RestEndpoint[T_co, Params]: ...
    @overload
    def extend(self, *, method: BodyMethod, **options: object) -> RestEndpoint[T_co, Params, ...]: ...
    @overload
    def extend(self, *, method: NoBodyMethod, **options: object) -> RestEndpoint[T_co, Params]: ...
    @overload
    def extend(self, **options: object) -> Self: ...
    def extend(self, **options: object) -> RestEndpoint[object, ...]:
        """A new endpoint with these options overriding this one's; this one is unchanged."""
        merged = {**self._options, **options}
        if "method" in options and "side_effect" not in options:
            merged.pop("side_effect", None)
        build: Callable[..., RestEndpoint[object, ...]] = type(self)
        return build(**merged)

    def _collection_member(self, attr: str) -> object:
        """The derived schema `attr` (push, remove, ...) of the Collection in the schema."""
        from restlayer.schema import find_collection

        collection = find_collection(self.schema)
        return None if collection is None else getattr(collection, attr)

    if TYPE_CHECKING:  # the collection-derived endpoints, typed from a list result
        push: _ItemEndpoint
        """POST that appends the created item to every matching list."""
        unshift: _ItemEndpoint
        """POST that prepends the created item to every matching list."""
        remove: _ItemEndpoint
        """PATCH that removes the item from every matching list."""
        move: _ItemEndpoint
        """PATCH that moves the item between lists (on the item path when known)."""

        assign: _AssignEndpoint
        """POST that merges keyed entries into a Values collection."""

        @property
        def get_page(self) -> Self:
            """The next page of this list, appended to it (needs `pagination_field`)."""
            ...

    else:

        @functools.cached_property
        def push(self) -> RestEndpoint[object]:
            """POST that appends the created item to every matching list."""
            return self.extend(method="POST", schema=self._collection_member("push"), name=self.name + ".create")

        @functools.cached_property
        def unshift(self) -> RestEndpoint[object]:
            """POST that prepends the created item to every matching list."""
            return self.extend(method="POST", schema=self._collection_member("unshift"), name=self.name + ".create")

        @functools.cached_property
        def assign(self) -> RestEndpoint[object]:
            """POST that merges keyed entries into a Values collection."""
            return self.extend(method="POST", schema=self._collection_member("assign"), name=self.name + ".create")

        @functools.cached_property
        def remove(self) -> RestEndpoint[object]:
            """PATCH that removes the item from every matching list."""
            return self.extend(
                method="PATCH",
                schema=self._collection_member("remove"),
                name=self.name + ".partial_update",
            )

        @functools.cached_property
        def move(self) -> RestEndpoint[object]:
            """PATCH that moves the item between lists (on the item path when known)."""
            options: dict[str, object] = {
                "method": "PATCH",
                "schema": self._collection_member("move"),
                "search_params": None,
                "name": self.name + ".partial_update",
            }
            if self.move_path:
                options["path"] = self.move_path
            return self.extend(**options)

        @functools.cached_property
        def get_page(self) -> RestEndpoint[object]:
            """The next page of this list, appended to it (needs `pagination_field`)."""
            if not self.pagination_field:
                raise AttributeError(f"{self.name} has no get_page: pagination_field is not set")
            return self.paginated(self.pagination_field)

    def paginated(self, cursor: str | CursorRemover) -> Self:
        """A GET whose results are appended to the list named by the arguments minus
        the cursor (a field name, or a function from page args to the list's args)."""
        from restlayer.schema import find_collection, replace_collection

        remove_cursor = _field_remover(cursor) if isinstance(cursor, str) else cursor
        collection = find_collection(self.schema)
        if collection is None:
            raise RestLayerError(f"{self.name}: Missing Collection in schema for paginated()")
        schema = replace_collection(self.schema, collection.paginated(remove_cursor))
        outer = self.remove_cursor
        if outer is not None:
            inner = remove_cursor

            def remove_cursor(*args: object) -> Iterable[object]:
                return outer(*cursor_args(inner, args))

        page: Self = self.extend(schema=schema, remove_cursor=remove_cursor, name=self.name + ".get_page")
        return page


#: httpx request options `request_init` may hold (`method` is overridden by the endpoint's).
_REQUEST_INIT_KEYS: Final = frozenset(
    {"headers", "method", "content", "data", "files", "json", "params", "cookies", "timeout", "extensions",
     "follow_redirects", "auth"}
)  # fmt: skip
#: Options that replace a method: callable when given.
_HOOK_OPTIONS: Final = (
    "process", "get_headers", "get_request_init", "fetch_response", "parse_response",
    "key", "test_key", "url", "search_to_string",
)  # fmt: skip
#: Hooks computing a call's URL or key: what they raise reaches callers as a RestLayerError.
_GUARDED_HOOKS: Final = ("key", "url", "search_to_string")
#: Options that are a function or None.
_OPTIONAL_CALLABLES: Final = ("error_policy", "get_optimistic_response", "update", "remove_cursor")
#: Hooks called without `await` (an async function there would hand a coroutine on).
_SYNC_HOOKS: Final = (
    "process", "url", "key", "test_key", "search_to_string", "error_policy", "update",
    "get_optimistic_response", "remove_cursor",
)  # fmt: skip


def url_params_and_body(endpoint: RestEndpoint[object, ...], args: tuple[object, ...]) -> tuple[object, object]:
    """`(URL params, request body)` that `endpoint` makes of canonical call arguments `args`.

    For collaborators that must tell requests apart as they are sent (a GraphQL page
    differs from the next only in its variables, which go in the body).
    """
    return endpoint._split(args)


def _guarded(endpoint: str, hook: str, function: Callable[..., object]) -> Callable[..., str]:
    """`function` (the endpoint's `hook`), raising a RestLayerError naming both instead of any other error,
    and a ParamError when it returns no str (a key of None would be stored, a URL of 5 sent)."""

    @functools.wraps(function)
    def guarded(*args: object, **kwargs: object) -> str:
        try:
            text = function(*args, **kwargs)
        except RestLayerError:
            raise
        except Exception as exc:
            raise RestLayerError(f"{endpoint}: {hook}() raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(text, str):
            raise ParamError(f"{endpoint}: {hook}() returned {type(text).__name__}, not a str")
        return text

    return guarded


def _positive(value: object) -> bool:
    """Whether `value` is a real number (not a bool) greater than 0; NaN is not."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _check_schema(schema: object, name: str) -> None:
    """Refuse a `schema` that is no schema (`5`, `True`): it would silently store replies un-normalized.

    `None` and a `str` mean "no schema" (the reply is kept as received).
    """
    if schema is None or isinstance(schema, str):
        return
    if compile_schema(schema) is None:
        raise DefinitionError(
            f"{name}: schema must be an Entity class, a schema (Collection, Values, ...) or a list/dict of"
            f" them, or None for no schema; got {schema!r}"
        )


def _check_options(ep: RestEndpoint[object, ...], options: Mapping[str, object]) -> None:
    """Refuse option values of the wrong type or range when the endpoint is defined (init and extend),
    so the mistake does not surface later as a raw or misleading error at the first fetch."""
    cls = type(ep).__name__
    if not isinstance(ep.name, str):
        raise ParamError(f"{cls}: name must be a str, not {ep.name!r}")
    name = ep.name
    method = ep.method
    if not isinstance(method, str) or not TOKEN.fullmatch(method):
        raise ParamError(f"{name}: method must be an HTTP method name such as 'GET' or 'POST', not {method!r}")
    for option in ("max_body_size", "total_timeout"):
        value = getattr(ep, option)
        if value is not None and not _positive(value):
            raise ParamError(f"{name}: {option} must be a positive number or None, not {value!r}")
    _check_seconds(ep.total_timeout, name)
    _check_flags(ep, name)
    _check_schema(ep.schema, name)
    _check_request_init(ep.request_init, name)
    if ep.client is not None and not isinstance(ep.client, httpx.AsyncClient):
        raise ParamError(f"{name}: client must be an httpx.AsyncClient or None, not {ep.client!r}")
    for option in _HOOK_OPTIONS:
        if option in options and not callable(options[option]):
            raise ParamError(f"{name}: {option} must be callable, not {options[option]!r}")
    for option in _OPTIONAL_CALLABLES:
        value = options.get(option)
        if value is not None and not callable(value):
            raise ParamError(f"{name}: {option} must be callable or None, not {value!r}")
    _check_sync_hooks(ep)


def _check_seconds(total_timeout: float | None, name: str) -> None:
    """Refuse a `total_timeout` too large for a float (`10**400`): the deadline would raise a bare
    OverflowError at every call. (`float("inf")` is fine: no deadline.)"""
    if total_timeout is None:
        return
    try:
        float(total_timeout)
    except OverflowError:
        raise ParamError(
            f"{name}: total_timeout must be a positive number of seconds a float can hold "
            "(float('inf') or None for no limit), not an int that large"
        ) from None


def _check_flags(ep: RestEndpoint[object, ...], name: str) -> None:
    """Refuse a non-bool for the yes/no options: any truthy value (`"no"`, `1`) would silently mean yes."""
    if not isinstance(ep.invalid_if_stale, bool):
        raise ParamError(f"{name}: invalid_if_stale must be True or False, not {ep.invalid_if_stale!r}")
    if ep.side_effect is not None and not isinstance(ep.side_effect, bool):
        raise ParamError(f"{name}: side_effect must be True, False or None, not {ep.side_effect!r}")


def _checked_follow(follow: object, name: str) -> bool:
    """The `follow_redirects` request option; ParamError unless a bool (`"no"` would count as yes)."""
    if not isinstance(follow, bool):
        raise ParamError(f"{name}: the request option follow_redirects must be True or False, not {follow!r}")
    return follow


def _check_sync_hooks(ep: RestEndpoint[object, ...]) -> None:
    """Refuse an async function (option or subclass method) for a hook the library calls without `await`:
    its coroutine would be stored as the result, used as a key or URL, or read as a policy."""
    for hook in _SYNC_HOOKS:
        if inspect.iscoroutinefunction(getattr(ep, hook, None)):
            raise ParamError(
                f"{ep.name}: {hook} is called without await, so it cannot be an async function "
                "(do the I/O in get_headers, get_request_init, fetch_response or parse_response)"
            )


def _check_request_init(init: object, name: str) -> None:
    """Refuse a `request_init` that is not a mapping of httpx request options."""
    if init is None:
        return
    if not isinstance(init, Mapping):
        raise ParamError(f"{name}: request_init must be a mapping of httpx request options, not {init!r}")
    unknown = sorted(str(key) for key in init if key not in _REQUEST_INIT_KEYS)
    if unknown:
        raise ParamError(
            f"{name}: request_init has unknown option(s) {', '.join(unknown)} "
            f"(httpx request options: {', '.join(sorted(_REQUEST_INIT_KEYS))})"
        )
    _check_one_body(init, name)
    _check_form(init.get("data"), "files" in init, name)
    _check_files(init.get("files"), name)
    _check_extensions(init.get("extensions"), name)
    if "follow_redirects" in init:
        _checked_follow(init["follow_redirects"], name)
    timeout = init.get("timeout")
    if timeout is not None and not _usable_timeout(timeout):
        raise ParamError(
            f"{name}: request_init timeout must be a positive number of seconds, an httpx.Timeout or a tuple of "
            f"(connect, read[, write[, pool]]) whose parts are positive numbers or None, or None, not {timeout!r}"
        )


def _check_one_body(init: Mapping[str, object], name: str) -> None:
    """Refuse a `request_init` holding two bodies: `content` with `json` or a form (`data`/`files`), or
    `json` with a form. httpx sends one (`content` before a form, a form before `json`) and silently
    drops the other; `data` with `files` is one multipart form."""
    given = [option for option in ("content", "json", "data", "files") if init.get(option) is not None]
    forms = {"data", "files"}
    if len(given) > 1 and not set(given) <= forms:
        raise ParamError(
            f"{name}: request_init sends more than one body ({', '.join(given)}); httpx would send one and drop "
            "the rest: give content, json, or a form (data and/or files)"
        )


#: What a form field's value may be: httpx writes anything else as Python's `str()` of it.
_FORM_SCALARS: Final = (str, int, float, type(None))


def _check_form(data: object, multipart: bool, name: str) -> None:
    """Refuse a `request_init` form value httpx would send as its Python repr (`{'b': 1}`, `<function ...>`).

    Values are text, numbers, booleans or None, or lists of them; bytes only in a multipart
    form (with `files`), as a urlencoded one writes them as `b'...'`.
    """
    if not isinstance(data, Mapping):
        return  # no form (or raw text, which httpx sends as content)
    allowed = (*_FORM_SCALARS, bytes) if multipart else _FORM_SCALARS
    for key, value in data.items():
        items = enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]
        for index, item in items:
            if not isinstance(item, allowed):
                where = f"data[{key!r}]" + ("" if index is None else f"[{index}]")
                raise ParamError(
                    f"{name}: request_init {where}: {type(item).__name__} cannot be sent in a form "
                    f"(send text, numbers, booleans or None{', or bytes' if multipart else ''})"
                )


def _is_file_content(content: object) -> bool:
    """Whether httpx can upload `content`: text, bytes or a file-like object."""
    return isinstance(content, (str, bytes)) or callable(getattr(content, "read", None))


def _check_files(files: object, name: str) -> None:
    """Refuse a `request_init` `files` httpx fails on only while sending (`{"f": 5}`: a bare AttributeError,
    after part of the upload went out). Each file is its content (text, bytes, a file) or a tuple of a file
    name, the content and optionally its type and headers; given as a mapping or (field, file) pairs."""
    if files is None:
        return
    if isinstance(files, Mapping):
        items = list(files.items())
    elif isinstance(files, (list, tuple)) and all(isinstance(item, tuple) and len(item) == 2 for item in files):
        items = list(files)
    else:
        raise ParamError(f"{name}: request_init files must be a mapping or (field, file) pairs, not {files!r}")
    for field, upload in items:
        content = upload[1] if isinstance(upload, tuple) and 2 <= len(upload) <= 4 else upload
        if not _is_file_content(content):
            raise ParamError(
                f"{name}: request_init files[{field!r}]: {type(upload).__name__} cannot be uploaded (give text, "
                "bytes, a file opened in binary mode or a (filename, content[, type[, headers]]) tuple)"
            )


#: The parts of the `timeout` request extension (httpcore's per-request timeouts).
_TIMEOUT_PARTS: Final = frozenset({"connect", "read", "write", "pool"})


def _check_extensions(extensions: object, name: str) -> None:
    """Refuse `request_init` `extensions` httpcore fails on only while sending, with a bare AttributeError:
    no mapping, or a `timeout` that is no mapping of connect/read/write/pool to seconds > 0 or None."""
    if extensions is None:
        return
    if not isinstance(extensions, Mapping):
        raise ParamError(f"{name}: request_init extensions must be a mapping, not {extensions!r}")
    timeout = extensions.get("timeout")
    if timeout is None:
        return
    if not (
        isinstance(timeout, Mapping)
        and set(timeout) <= _TIMEOUT_PARTS
        and all(part is None or _positive(part) for part in timeout.values())
    ):
        raise ParamError(
            f"{name}: request_init extensions timeout must map connect, read, write and pool to seconds > 0 or "
            f"None, not {timeout!r} (or give request_init timeout)"
        )


def _usable_timeout(timeout: object) -> bool:
    """Whether httpx can use `timeout` as a request's: a positive number, or an httpx.Timeout (or the tuple
    httpx builds one from) whose every part is a positive number or None (no limit).

    A part below zero times out at once, as a ConnectTimeout a policy takes for a server down;
    text, NaN or a too short tuple fail inside httpx with a bare error.
    """
    if not isinstance(timeout, (httpx.Timeout, tuple)):
        return _positive(timeout)
    try:
        parts = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
    except (TypeError, ValueError, IndexError):
        return False
    return all(part is None or _positive(part) for part in (parts.connect, parts.read, parts.write, parts.pool))


def _check_params_type(params: object, path_names: Iterable[str], endpoint: str) -> None:
    """Refuse a `params` option that is not a TypedDict or misses a parameter of the path."""
    keys = getattr(params, "__required_keys__", None)
    if not isinstance(params, type) or keys is None:
        raise ParamError(f"{endpoint}: params must be a TypedDict class, not {params!r}")
    missing = [name for name in path_names if name not in keys]
    if missing:
        raise ParamError(
            f"{endpoint}: params {params.__name__} lacks the path parameter(s) {', '.join(missing)} as required keys"
        )


def _keep_own_query(client: httpx.AsyncClient, url: str, kwargs: dict[str, object]) -> None:
    """Make `params` (of `request_init` or the client) add to the URL's own search params, not replace them.

    httpx replaces a URL's query with the `params` it is given (the client's are
    always given when it has any), which would send the call without the search
    params its store key names. So the `params` httpx gets are the client's, then
    `request_init`'s, then the URL's own: the call's values win a shared name.
    """
    extra = kwargs.get("params")
    if not extra and not client.params:
        return
    own = httpx.URL(url).params
    if not own:
        return
    merge: Callable[..., httpx.QueryParams] = client.params.merge  # `extra` is httpx's own option, unchecked
    kwargs["params"] = merge(extra).merge(own)


def _send_failure(endpoint: str, request: httpx.Request, exc: Exception) -> RestLayerError:
    """The error for `exc`, raised while `request` was being sent by something not httpx's: the body's own
    code (a file's read(), an async iterable), a request option httpx takes only then (`files`,
    `extensions`), an event hook. A `ParamError` for a value of the wrong type, else a `RestLayerError`:
    a direct call fails as one through a Controller does, with `exc` as its cause."""
    message = f"{endpoint}: sending {request.method} {request.url} raised {type(exc).__name__}: {exc}"
    if isinstance(exc, (TypeError, ValueError, AttributeError)):
        return ParamError(message)
    return RestLayerError(message)


def _replayable(init: Mapping[str, object]) -> bool:
    """Whether the request's body can be sent again: none, or text or bytes (not a one-shot stream)."""
    content = init.get("content")
    return content is None or isinstance(content, (str, bytes))


def _loop_advice(name: str, exc: BaseException) -> str:
    """What to do when the client in use is bound to a closed or other event loop."""
    return (
        f"{name}: the httpx client belongs to an event loop that is closed or not the running one ({exc}). "
        "An httpx.AsyncClient works only on the loop it was first used on: create it inside the running "
        "loop (e.g. `async with httpx.AsyncClient() as client:` in the coroutine passed to asyncio.run), "
        "or leave `client` unset so restlayer keeps one client per loop."
    )


def _retry_policy(value: object) -> Retry | None:
    """The `retry` option as a `Retry` (an int means that many retries with the defaults)."""
    if value is None or isinstance(value, Retry):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Retry(attempts=value)
    raise ParamError(f"retry must be a Retry, an int (number of retries) or None, not {value!r}")


def _field_remover(field: str) -> Callable[..., list[object]]:
    """remove_cursor for a field name: the params without that field."""

    def remove_cursor(params: Mapping[str, object] | None = None, *_rest: object) -> list[object]:
        return [{k: v for k, v in (params or {}).items() if k != field}]

    return remove_cursor
