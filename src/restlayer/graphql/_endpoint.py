"""`GQLEndpoint`: GraphQL over HTTP POST, built on RestEndpoint's request machinery.

`GQLEndpoint(url)` holds the transport options (headers, client, request_init);
`.query(text, schema)` and `.mutation(text, schema)` derive the endpoints that are
actually called, fetched and cached.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, overload

import httpx

from restlayer._args import split_call
from restlayer._typing import Args, B, BodyMethod, E, NoBodyMethod, P, Params, Self, T, T_co
from restlayer.errors import BodyTooLargeError, NetworkError, ParamError, RestLayerError, StatusError
from restlayer.graphql._errors import GQLNetworkError
from restlayer.rest._body import unencodable
from restlayer.rest._parse import body_failure, was_cut
from restlayer.rest.endpoint import RestEndpoint
from restlayer.schema import Schema
from restlayer.schema._base import NestedListShorthand

if TYPE_CHECKING:
    from restlayer.graphql._subscription import ConnectionParams, GQLSubscription, ReconnectBackoff

__all__ = ["GQLEndpoint", "QueryText"]

QueryText = str | Callable[[Any], str]
"""What `.query()` / `.mutation()` accept: the query text, or a function of the call's variables returning it.

The function gets the variables (`{}` when none); it has one parameter, so a lambda's is typed
for strict checkers.
"""

#: One token of query text that cleaning acts on: a string literal (block `"""..."""` or `"..."`), kept
#: as written, or a run of whitespace and `#` comments (GraphQL's ignored tokens), made one space.
_CLEANED_TOKEN: Final = re.compile(
    r'(?P<string>"""(?:\\"""|(?!""")[\s\S])*"""|"(?:\\.|[^"\\\n\r])*")|(?P<ignored>(?:\s|#[^\n\r]*)+)'
)
_OPERATION: Final = re.compile(r"^\s*(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")
_NAME_LENGTH: Final = 60


def clean_query(text: str) -> str:
    """A query string with whitespace runs collapsed to one space and stripped.

    Only the whitespace between tokens: a string literal is part of the operation's data (the title
    "two  spaces" must reach the server as written), so it is kept verbatim. A `#` comment ends at
    its line break, which collapsing removes: it would swallow the rest of the query, so comments
    (ignored by GraphQL) are dropped with the whitespace around them.
    """
    return _CLEANED_TOKEN.sub(_cleaned_token, text).strip()


def _cleaned_token(match: re.Match[str]) -> str:
    """A string literal as written; whitespace and comments as one space."""
    string = match.group("string")
    return " " if string is None else string


def _query_getter(query: QueryText) -> Callable[..., str]:
    """`get_query` for `.query()`: a function as given, a string cleaned once."""
    if callable(query):
        return query
    if not isinstance(query, str):
        raise ParamError(f"a GraphQL query must be a str or a function, not {type(query).__name__}")
    cleaned = clean_query(query)

    def get_query(variables: object = None) -> str:
        return cleaned

    return get_query


def _operation_label(get_query: Callable[..., str]) -> str | None:
    """A readable name for an operation: its operation name, else its (shortened) text."""
    try:
        text = get_query({})
    except Exception:  # a query function that needs real variables: no label
        return None
    if not isinstance(text, str):
        return None
    match = _OPERATION.match(text)
    if match is not None:
        return match.group(1)
    text = clean_query(text)
    return text if len(text) <= _NAME_LENGTH else text[: _NAME_LENGTH - 3] + "..."


def _key_json(variables: object, name: str) -> str:
    """Compact JSON of the variables, member order kept (the key's second half).

    Variables json cannot encode (a `datetime`, a `set`, NaN or an infinity, which have no JSON
    form) are a `ParamError` naming the operation and the member at fault: they could be neither
    keyed nor sent (a request refuses them; a subscription would send `NaN` to its server).
    """
    try:
        return json.dumps(variables, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        where = unencodable(variables, "variables") or exc
        raise ParamError(f"{name}: the GraphQL variables cannot be sent as JSON: {where}") from exc


def _check_content(endpoint: RestEndpoint[object, ...]) -> None:
    """Refuse a `content` mode other than JSON: a GraphQL reply is always parsed as its JSON body.

    `"stream"` would leave the reply unread (and its connection held) for a parser that
    needs all of it; `"text"` and the binary modes would be ignored without a word.
    """
    if endpoint.content not in (None, "json"):
        raise ParamError(
            f"{endpoint.name}: content={endpoint.content!r} cannot apply to a GraphQL endpoint: its reply "
            "is read as JSON ({'data', 'errors'}); leave content unset"
        )


def _check_no_path(path: object) -> None:
    """Refuse a `path` (an option or a subclass attribute): every operation is POSTed to the url alone,
    so a path would be silently ignored and the request sent elsewhere than the caller meant."""
    if path != "":
        raise ParamError(
            f"GQLEndpoint sends every operation to its url: path={path!r} would be ignored; "
            "give the whole address as the url (GQLEndpoint('https://api.example.com/graphql'))"
        )


def _post_only(method: object) -> str:
    """`"POST"` for the method given in any case (`"post"`, as RestEndpoint takes); `ParamError` for another."""
    if not isinstance(method, str) or method.upper() != "POST":
        raise ParamError(f"GQLEndpoint sends POST requests only, not {method!r}")
    return "POST"


class GQLEndpoint(RestEndpoint[T_co, Params, Args]):
    """`await ep(variables)` POSTs `{"query", "variables"}` to `url` and returns `data`.

    Every RestEndpoint option applies (`get_headers`, `request_init`, `client`,
    expiry lengths, `process`, ...); `get_query(variables)` supplies the query text.
    """

    def __init__(self, url: str | None = None, **options: object) -> None:
        if url is not None:
            options["url_prefix"] = url
        _check_no_path(options.get("path", getattr(type(self), "path", "")))
        options.setdefault("path", "")
        options.setdefault("body", None)
        options.setdefault("side_effect", type(self).side_effect)
        options["method"] = _post_only(options.get("method", "POST"))
        init: Callable[..., None] = super().__init__  # options are checked at run time
        init(**options)
        if not isinstance(self.url_prefix, str) or not self.url_prefix:
            raise ParamError("GQLEndpoint needs the GraphQL server's url")
        _check_content(self)

    def __repr__(self) -> str:
        kind = "mutation" if self.side_effect else "query"
        return f"{type(self).__name__}(name={self.name!r}, url={self.url_prefix!r}, {kind})"

    # -- the operation ---------------------------------------------------------------

    def get_query(self, variables: object) -> str:
        """The query text for these variables (set by `.query()` / `.mutation()`)."""
        raise RestLayerError(f"{self.name}: You must include a query (use .query() or .mutation())")

    def query_text(self, variables: object) -> str:
        """`get_query(variables)`, checked: the user's query function runs inside every key and call.

        What it raises becomes a RestLayerError naming the operation (the original as cause),
        and a result that is not a str a `ParamError`: it would be sent as `"query": null`
        (or a number) and keyed as `"None {...}"`.
        """
        try:
            text: object = self.get_query(variables)
        except RestLayerError:
            raise
        except Exception as exc:
            raise RestLayerError(f"{self.name}: the query function raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(text, str):
            raise ParamError(
                f"{self.name}: the query function returned {type(text).__name__}, not the query text (a str)"
            )
        return text

    @overload
    def query(self, query: QueryText, schema: type[E], **options: object) -> GQLEndpoint[E]: ...
    @overload
    def query(self, query: QueryText, schema: list[type[E]], **options: object) -> GQLEndpoint[list[E]]: ...
    @overload
    def query(self, query: QueryText, schema: list[Schema[T]], **options: object) -> GQLEndpoint[list[T]]: ...
    @overload
    def query(self, query: QueryText, schema: NestedListShorthand, **options: object) -> GQLEndpoint[list[Any]]: ...
    @overload
    def query(self, query: QueryText, schema: Schema[T], **options: object) -> GQLEndpoint[T]: ...
    @overload
    def query(
        self, query: QueryText, schema: Mapping[str, object], **options: object
    ) -> GQLEndpoint[dict[str, Any]]: ...
    @overload
    def query(self, query: QueryText, schema: None = None, **options: object) -> GQLEndpoint[Any]: ...
    def query(self, query: QueryText, schema: object = None, **options: object) -> GQLEndpoint[object]:
        """An endpoint reading `query` (text or variables -> text), normalized by `schema`."""
        return self._operation(query, schema, None, options)

    @overload
    def mutation(self, query: QueryText, schema: type[E], **options: object) -> GQLEndpoint[E]: ...
    @overload
    def mutation(self, query: QueryText, schema: list[type[E]], **options: object) -> GQLEndpoint[list[E]]: ...
    @overload
    def mutation(self, query: QueryText, schema: list[Schema[T]], **options: object) -> GQLEndpoint[list[T]]: ...
    @overload
    def mutation(self, query: QueryText, schema: NestedListShorthand, **options: object) -> GQLEndpoint[list[Any]]: ...
    @overload
    def mutation(self, query: QueryText, schema: Schema[T], **options: object) -> GQLEndpoint[T]: ...
    @overload
    def mutation(
        self, query: QueryText, schema: Mapping[str, object], **options: object
    ) -> GQLEndpoint[dict[str, Any]]: ...
    @overload
    def mutation(self, query: QueryText, schema: None = None, **options: object) -> GQLEndpoint[Any]: ...
    def mutation(self, query: QueryText, schema: object = None, **options: object) -> GQLEndpoint[object]:
        """Like `query`, but a side effect: never read from the cache, always sent."""
        return self._operation(query, schema, True, options)

    @overload
    def subscription(
        self,
        query: QueryText,
        schema: type[E],
        *,
        ws_url: str | None = ...,
        backoff: ReconnectBackoff | None = ...,
        retries: int | None = ...,
        open_timeout: float = ...,
        headers: Mapping[str, str] | None = ...,
        connection_params: ConnectionParams = ...,
        max_size: int | None = ...,
        **options: object,
    ) -> GQLSubscription[E]: ...
    @overload
    def subscription(
        self,
        query: QueryText,
        schema: list[type[E]],
        *,
        ws_url: str | None = ...,
        backoff: ReconnectBackoff | None = ...,
        retries: int | None = ...,
        open_timeout: float = ...,
        headers: Mapping[str, str] | None = ...,
        connection_params: ConnectionParams = ...,
        max_size: int | None = ...,
        **options: object,
    ) -> GQLSubscription[list[E]]: ...
    @overload
    def subscription(
        self,
        query: QueryText,
        schema: list[Schema[T]],
        *,
        ws_url: str | None = ...,
        backoff: ReconnectBackoff | None = ...,
        retries: int | None = ...,
        open_timeout: float = ...,
        headers: Mapping[str, str] | None = ...,
        connection_params: ConnectionParams = ...,
        max_size: int | None = ...,
        **options: object,
    ) -> GQLSubscription[list[T]]: ...
    @overload
    def subscription(
        self,
        query: QueryText,
        schema: NestedListShorthand,
        *,
        ws_url: str | None = ...,
        backoff: ReconnectBackoff | None = ...,
        retries: int | None = ...,
        open_timeout: float = ...,
        headers: Mapping[str, str] | None = ...,
        connection_params: ConnectionParams = ...,
        max_size: int | None = ...,
        **options: object,
    ) -> GQLSubscription[list[Any]]: ...
    @overload
    def subscription(
        self,
        query: QueryText,
        schema: Schema[T],
        *,
        ws_url: str | None = ...,
        backoff: ReconnectBackoff | None = ...,
        retries: int | None = ...,
        open_timeout: float = ...,
        headers: Mapping[str, str] | None = ...,
        connection_params: ConnectionParams = ...,
        max_size: int | None = ...,
        **options: object,
    ) -> GQLSubscription[T]: ...
    @overload
    def subscription(
        self,
        query: QueryText,
        schema: Mapping[str, object],
        *,
        ws_url: str | None = ...,
        backoff: ReconnectBackoff | None = ...,
        retries: int | None = ...,
        open_timeout: float = ...,
        headers: Mapping[str, str] | None = ...,
        connection_params: ConnectionParams = ...,
        max_size: int | None = ...,
        **options: object,
    ) -> GQLSubscription[dict[str, Any]]: ...
    @overload
    def subscription(
        self,
        query: QueryText,
        schema: None = None,
        *,
        ws_url: str | None = ...,
        backoff: ReconnectBackoff | None = ...,
        retries: int | None = ...,
        open_timeout: float = ...,
        headers: Mapping[str, str] | None = ...,
        connection_params: ConnectionParams = ...,
        max_size: int | None = ...,
        **options: object,
    ) -> GQLSubscription[Any]: ...
    def subscription(
        self,
        query: QueryText,
        schema: object = None,
        *,
        ws_url: str | None = None,
        backoff: ReconnectBackoff | None = None,
        retries: int | None = 5,
        open_timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
        connection_params: ConnectionParams = None,
        max_size: int | None = 2**20,
        **options: object,
    ) -> GQLSubscription[object]:
        """A subscription over WebSocket (graphql-transport-ws) whose events are stored like `query` results.

        `ws_url` defaults to this endpoint's url with `ws://` (`wss://`) for `http://` (`https://`).
        A lost connection is reopened after `backoff` (a `restlayer.streams.Backoff`);
        `retries` reconnects in a row that deliver no event are tried (None: no limit).
        `open_timeout`: seconds to open the socket, and again to get its acknowledgement.
        `headers` go with each handshake; `connection_params` (a mapping, or a function giving
        one for each connection) is the `connection_init` payload: how a server is told who calls.
        `max_size`: the largest message accepted, in bytes (None: no limit).
        """
        from restlayer.graphql._subscription import GQLSubscription, ws_url_of

        endpoint = self._operation(query, schema, None, options)
        return GQLSubscription(
            endpoint,
            ws_url or ws_url_of(self.url_prefix),
            open_timeout,
            backoff=backoff,
            retries=retries,
            headers=headers,
            connection_params=connection_params,
            max_size=max_size,
        )

    def _operation(
        self, query: QueryText, schema: object, side_effect: bool | None, options: dict[str, object]
    ) -> GQLEndpoint[object]:
        """`query` / `mutation`: this endpoint extended with `get_query`, schema and side_effect."""
        get_query = _query_getter(query)
        merged: dict[str, object] = {
            "schema": schema,
            "get_query": get_query,
            "side_effect": side_effect,
            **options,
        }
        if "name" not in options:
            merged["name"] = _operation_label(get_query) or self.url_prefix
        return self.extend(**merged)

    # -- arguments and keys ------------------------------------------------------------

    def _variables(self, args: tuple[object, ...]) -> object:
        """The call's variables (`{}` when none); `ParamError` unless a dict, as GraphQL requires an object.

        Else a string or list would be keyed and sent, for the server to refuse.
        """
        variables = split_call(args, False)[0]
        if not isinstance(variables, Mapping):
            raise ParamError(f"{self.name}: the GraphQL variables must be a dict, not {type(variables).__name__}")
        return variables

    def _split(self, args: tuple[object, ...]) -> tuple[object, object]:
        """The variables travel in the request body; the URL is the server's, whatever they are."""
        variables = self._variables(args)
        return variables, variables

    if TYPE_CHECKING:  # typed by `Params` like RestEndpoint's, so `extend(params=...)` keeps a GQLEndpoint

        def url(self, *args: Params.args, **kwargs: Params.kwargs) -> str:
            """The GraphQL server's address (variables never enter the URL)."""
            ...

    else:

        def url(self, params: Mapping[str, object] | None = None) -> str:
            """The GraphQL server's address (variables never enter the URL)."""
            return self.url_prefix

    def key(self, *args: object) -> str:
        """`"<query> <compact JSON of the variables>"`; member order is kept."""
        variables = self._variables(args)
        return f"{self.query_text(variables)} {_key_json(variables, self.name)}"

    def test_key(self, key: str) -> bool:
        """Whether a store key belongs to this operation (any variables).

        The key starts with the query text for no variables. A query function that
        needs its variables (`get_query({})` raises) has no such prefix: the key
        is then matched against the key of the variables it ends with.
        """
        try:
            prefix = self.query_text({})
        except RestLayerError:
            return self._keys_own_variables(key)
        return key.startswith(prefix)

    def _keys_own_variables(self, key: str) -> bool:
        """Whether `key` is `self.key(variables)` for the JSON variables at its end (tried from the right)."""
        split = key.rfind(" ")
        while split != -1:
            try:
                if self.key(json.loads(key[split + 1 :])) == key:
                    return True
            except Exception:  # not the variables' JSON, or variables this query cannot take
                pass
            split = key.rfind(" ", 0, split)
        return False

    # -- the request -------------------------------------------------------------------

    async def get_request_init(self, variables: object) -> dict[str, object]:
        """POST init: JSON body `{"query", "variables"}`, headers through `get_headers`."""
        payload = {"query": self.query_text(variables), "variables": variables}
        return await super().get_request_init(payload)

    async def fetch_response(self, url: str, init: Mapping[str, object]) -> httpx.Response:
        """Send; a reply of any status is returned (its body decides), a transport failure is status 500.

        Only a `StatusError` carries a reply whose body was read; the other failures
        that hold a reply (a refused redirect, a body over `max_body_size`) are raised
        as they are: their reply has no body to decide with. An error reply over
        `max_body_size` was read only in part: a `BodyTooLargeError` too, and one whose body
        failed to arrive or decode the `TransportError` that stopped it.
        """
        try:
            return await super().fetch_response(url, init)
        except StatusError as error:
            response = error.response
            if response is None:
                raise
            failure = body_failure(response)
            if failure is not None:  # the body did not arrive or decode: no errors to read from it
                raise failure from failure.__cause__
            if was_cut(response):  # its errors cannot be read from the start of the body
                raise BodyTooLargeError(
                    f"{response.url}: GraphQL reply (status {response.status_code}) exceeds "
                    f"max_body_size={self.max_body_size} bytes (decoded), so its errors cannot be read; "
                    "raise max_body_size",
                    status=400,
                    response=response,
                ) from error
            return response

    async def parse_response(self, response: httpx.Response) -> Any:
        """`data` of the reply; `errors` or a non-2xx status raise GQLNetworkError."""
        try:
            body = json.loads(response.content)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply to decode
            raise NetworkError(
                f"{response.url}: GraphQL reply (status {response.status_code}) is not JSON: {exc}",
                status=400,
                response=response,
            ) from exc
        if isinstance(body, dict):
            errors = body.get("errors")
            if errors:
                errors_list = errors if isinstance(errors, list) else [errors]
                raise GQLNetworkError(errors_list, data=body.get("data"), response=response)
        if not response.is_success:
            raise GQLNetworkError([body], response=response)
        return body.get("data") if isinstance(body, dict) else None

    # -- derived endpoints -------------------------------------------------------------

    @overload
    def extend(  # type: ignore[overload-overlap]
        self, *, process: Callable[..., T], schema: None, params: type[P], body: type[B], **options: object
    ) -> GQLEndpoint[T, [P], [P, B]]: ...
    @overload
    def extend(
        self, *, process: Callable[..., T], schema: None, params: type[P], **options: object
    ) -> GQLEndpoint[T, [P]]: ...
    @overload
    def extend(self, *, process: Callable[..., T], schema: None, **options: object) -> GQLEndpoint[T, Params, Args]: ...
    @overload
    def extend(self, *, schema: type[E], params: type[P], **options: object) -> GQLEndpoint[E, [P]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: list[type[E]], params: type[P], **options: object) -> GQLEndpoint[list[E], [P]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: list[Schema[T]], params: type[P], **options: object) -> GQLEndpoint[list[T], [P]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(  # type: ignore[overload-overlap]
        self, *, schema: NestedListShorthand, params: type[P], **options: object
    ) -> GQLEndpoint[list[Any], [P]]: ...
    @overload
    def extend(self, *, schema: Schema[T], params: type[P], **options: object) -> GQLEndpoint[T, [P]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(  # type: ignore[overload-overlap]
        self, *, schema: Mapping[str, object], params: type[P], **options: object
    ) -> GQLEndpoint[dict[str, Any], [P]]: ...
    @overload
    def extend(self, *, params: type[P], body: type[B], **options: object) -> GQLEndpoint[T_co, [P], [P, B]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(
        self, *, params: type[P], method: BodyMethod, body: None, **options: object
    ) -> GQLEndpoint[T_co, [P]]: ...
    @overload
    def extend(  # type: ignore[overload-overlap]
        self, *, params: type[P], method: BodyMethod, **options: object
    ) -> GQLEndpoint[T_co, [P], ...]: ...
    @overload
    def extend(self, *, params: type[P], **options: object) -> GQLEndpoint[T_co, [P]]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: type[E], **options: object) -> GQLEndpoint[E, Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: list[type[E]], **options: object) -> GQLEndpoint[list[E], Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: list[Schema[T]], **options: object) -> GQLEndpoint[list[T], Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: NestedListShorthand, **options: object) -> GQLEndpoint[list[Any], Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(self, *, schema: Schema[T], **options: object) -> GQLEndpoint[T, Params, Args]: ...  # type: ignore[overload-overlap]
    @overload
    def extend(  # type: ignore[overload-overlap]
        self, *, schema: Mapping[str, object], **options: object
    ) -> GQLEndpoint[dict[str, Any], Params, Args]: ...
    # A method (POST, the only one it sends; others raise) leaves the variables unchecked, as RestEndpoint's
    # body-taking methods do: the overloads must follow RestEndpoint's, and a POST there takes a body.
    @overload
    def extend(self, *, method: BodyMethod, body: None, **options: object) -> GQLEndpoint[T_co, Params]: ...
    @overload
    def extend(self, *, method: BodyMethod, **options: object) -> GQLEndpoint[T_co, Params, ...]: ...
    @overload
    def extend(self, *, method: NoBodyMethod, **options: object) -> GQLEndpoint[T_co, Params]: ...
    @overload
    def extend(self, **options: object) -> Self: ...
    def extend(self, **options: object) -> RestEndpoint[object, ...]:
        """A new endpoint with these options overriding this one's (`url=` moves it): a GQLEndpoint, typed like it."""
        if "url" in options:
            options["url_prefix"] = options.pop("url")
        build: Callable[..., GQLEndpoint[object]] = type(self)
        return build(**{**self._options, **options})
