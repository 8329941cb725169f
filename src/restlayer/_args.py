"""Call arguments, in one place: how keywords merge into params and how params and body split.

Every endpoint call, cache key and schema read takes the same canonical shape:
`(params, body)` for endpoints that send a body, `(params, *rest)` otherwise,
where `params` is a dict (URL parameters, GraphQL variables, query arguments).
"""

from __future__ import annotations

from typing import Any


def merge_keywords(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """`args` with the keywords merged into the first (params) argument: `f({"a": 1}, b=2)` is `f({"a": 1, "b": 2})`."""
    if not kwargs:
        return args
    first = args[0] if args else None
    return ({**(first or {}), **kwargs}, *args[1:])


def split_call(args: tuple[Any, ...], has_body: bool) -> tuple[Any, Any]:
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
