"""URL building: the filled path template plus the remaining params as a search string.

`build_url` joins them; `search_to_string` is the default encoder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import TypeVar
from urllib.parse import quote_plus

from restlayer._text import to_text
from restlayer.errors import ParamError
from restlayer.rest._path import PathTemplate

__all__ = ["build_url", "search_to_string"]

K = TypeVar("K")


def _form_encode(text: str) -> str:
    """`application/x-www-form-urlencoded` as URLSearchParams writes it.

    Safe: `A-Za-z0-9*-._`; space becomes `+`; `~` is encoded (Python leaves it);
    lone surrogates become U+FFFD (surrogate pairs are joined first, as in JS).
    """
    try:
        encoded = quote_plus(text, safe="*")
    except UnicodeEncodeError:
        fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        encoded = quote_plus(fixed, safe="*")
    return encoded.replace("~", "%7E") if "~" in encoded else encoded


def _value_text(key: str, value: object) -> str:
    """Text of one present search value; a mapping or a set cannot be sent this way.

    A set's text is its repr, in an order that changes from one process to the next
    (string hashing is randomized): the server could not read it, and the same call
    would have another store key in each process.
    """
    if value.__class__ is str:
        return str(value)
    if isinstance(value, Mapping):
        raise ParamError(
            f'Search parameter "{key}" is a {value.__class__.__name__}: nested objects need '
            "an overridden search_to_string()"
        )
    if isinstance(value, AbstractSet):
        raise ParamError(
            f'Search parameter "{key}" is a {value.__class__.__name__}, which has no fixed order: '
            "pass a list (e.g. sorted(...)) to repeat the parameter once per element"
        )
    return to_text(value)


def _key_text(key: object) -> str:
    """A search key as text: a str as given, any other key by `to_text`."""
    return key if type(key) is str else to_text(key)


def search_to_string(params: Mapping[K, object]) -> str:  # any keys: non-str ones are sent as text
    """The default search string: keys sorted, `None` left out, lists repeat the key.

    `{"b": 1, "a": "x y", "c": [1, 2]}` gives `a=x+y&b=1&c=1&c=2`; `{}` gives `""`.
    """
    items = [(_key_text(k), v) for k, v in params.items()]
    items.sort(key=lambda item: item[0])  # stable: equal keys keep their order
    pairs: list[str] = []
    for key, value in items:
        if value is None:
            continue
        name = _form_encode(key)
        if isinstance(value, (list, tuple)):
            for element in value:
                if element is not None:
                    pairs.append(f"{name}={_form_encode(_value_text(key, element))}")
        else:
            pairs.append(f"{name}={_form_encode(_value_text(key, value))}")
    return "&".join(pairs)


def build_url(
    prefix: str,
    template: PathTemplate,
    params: Mapping[str, object],
    search_to_string: Callable[[Mapping[str, object]], str] = search_to_string,
    endpoint: str | None = None,
) -> str:
    """`prefix` + the filled template, then the params it does not name as a search string.

    The search part is joined with `&` when the filled path already holds a `?`, and
    left off entirely when it comes out empty (e.g. every extra value is `None`).
    """
    path = template.fill(params, endpoint=endpoint)
    names = template.name_set
    rest = {key: value for key, value in params.items() if key not in names}
    if not rest:
        return prefix + path
    search = search_to_string(rest)
    if not search:
        return prefix + path
    return f"{prefix}{path}{'&' if '?' in path else '?'}{search}"
