"""Call arguments, in one place: how keywords merge into params and how params and body split.

Every endpoint call, cache key and schema read takes the same canonical shape:
`(params, body)` for endpoints that send a body, `(params, *rest)` otherwise,
where `params` is a dict (URL parameters, GraphQL variables, query arguments).
"""

from __future__ import annotations

from collections.abc import Mapping

from restlayer.errors import ParamError


def merge_keywords(args: tuple[object, ...], kwargs: Mapping[str, object]) -> tuple[object, ...]:
    """`args` with the keywords merged into the first (params) argument: `f({"a": 1}, b=2)` is `f({"a": 1, "b": 2})`."""
    if not kwargs:
        return args
    first = args[0] if args else None
    if first is not None and not isinstance(first, Mapping):
        raise ParamError(
            f"keyword arguments go into the params dict, but the first argument is a {type(first).__name__}"
        )
    return ({**(first or {}), **kwargs}, *args[1:])


def split_call(args: tuple[object, ...], has_body: bool) -> tuple[object, object]:
    """`(params, body)` of canonical call arguments; missing or `None` params are `{}`.

    With a body, the body is the last argument and params come first only when
    both are given (`ep(body)` or `ep(params, body)`); without one, the body is `None`.
    """
    count = len(args)
    if has_body:
        first = args[0] if count > 1 else None
        body = args[-1] if count else None
    else:
        first = args[0] if count else None
        body = None
    return ({} if first is None else first), body
