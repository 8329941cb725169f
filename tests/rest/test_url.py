"""url() building and the default search_to_string."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

import pytest
from hypothesis import given
from hypothesis import strategies as st

from restlayer._text import to_text
from restlayer.errors import ParamError
from restlayer.rest._path import compile_path
from restlayer.rest._url import build_url, search_to_string

# --------------------------------------------------------------------------- search_to_string


def test_search_sorted_and_encoded() -> None:
    assert search_to_string({"q": "~!'()*"}) == "q=%7E%21%27%28%29*"
    assert search_to_string({"b": 1, "a": 2, "B": 3, "_": 4, "10": 5, "9": 6}) == "10=5&9=6&B=3&_=4&a=2&b=1"


def test_search_values() -> None:
    assert search_to_string({"a": "x y", "b": True, "c": False, "d": 1.0, "e": None}) == ("a=x+y&b=true&c=false&d=1.0")
    assert search_to_string({"c": [1, 2], "t": ("x", None, "y")}) == "c=1&c=2&t=x&t=y"
    assert search_to_string({"c": []}) == ""
    assert search_to_string({}) == ""
    assert search_to_string({"k": ""}) == "k="
    assert search_to_string({"": "v"}) == "=v"


def test_search_form_encoding() -> None:
    assert search_to_string({"q": "a+b c,d/e?f#g&h=i"}) == "q=a%2Bb+c%2Cd%2Fe%3Ff%23g%26h%3Di"
    assert search_to_string({"q": "*-._AZaz09"}) == "q=*-._AZaz09"
    assert search_to_string({"q": "é😀"}) == "q=%C3%A9%F0%9F%98%80"
    assert search_to_string({"a b": 1}) == "a+b=1"  # keys are encoded too
    assert search_to_string({"q": "\r\n"}) == "q=%0D%0A"


def test_search_lone_surrogates_become_replacement_char() -> None:
    assert search_to_string({"q": "a\ud800b"}) == "q=a%EF%BF%BDb"
    assert search_to_string({"\udfff": 1}) == "%EF%BF%BD=1"
    assert search_to_string({"q": "\ud83d\ude00"}) == "q=%F0%9F%98%80"  # a pair is one char


def test_search_dict_value_raises_naming_the_param() -> None:
    with pytest.raises(ParamError, match='"filter"'):
        search_to_string({"filter": {"a": 1}})
    with pytest.raises(ParamError, match='"filter"'):
        search_to_string({"filter": [{"a": 1}]})


def test_search_sort_is_stable_for_equal_text_keys() -> None:
    assert search_to_string({1: "int", "1": "str", "0": "z"}) == "0=z&1=int&1=str"


@given(
    st.dictionaries(
        st.text(),
        st.one_of(st.none(), st.text(), st.integers(), st.booleans(), st.lists(st.text(), max_size=3)),
    )
)
def test_search_round_trips_through_a_form_parser(params: dict[str, Any]) -> None:
    text = search_to_string(params)
    expected = []
    for key in sorted(params):
        value = params[key]
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                expected.append((key, to_text(item)))
    assert parse_qsl(text, keep_blank_values=True) == expected if expected else text == ""
    assert all(ch.isascii() and ch not in " ~!'()," for ch in text)


# --------------------------------------------------------------------------- build_url


def url(template: str, params: Mapping[str, Any], prefix: str = "") -> str:
    return build_url(prefix, compile_path(template), params)


def test_build_url_checks() -> None:
    assert url("/users/:id", {"id": 1, "b": 2, "a": "x y", "c": [1, 2], "d": True, "e": None}) == (
        "/users/1?a=x+y&b=2&c=1&c=2&d=true"
    )
    assert url("/users/:id", {"id": "a b"}) == "/users/a%20b"
    assert url("/search?q=:q", {"q": "a", "z": 1}) == "/search?q=a&z=1"
    assert url("/search?q=:q", {"q": 1}) == "/search?q=1"
    assert url("/x", {}, prefix="https://api.example.com") == "https://api.example.com/x"
    assert url("/x/:id", {"id": 1, "q": "v"}, prefix="http://h") == "http://h/x/1?q=v"


def test_token_names_never_become_search_params() -> None:
    # optional tokens count too, whether or not their group was emitted
    assert url("/users{/:id}{/:group}", {"group": 5}) == "/users/5"
    assert url("/a{/:b/:c}", {"b": 1, "z": 2}) == "/a?z=2"
    assert url("/files{/*path}", {"path": None}) == "/files"


def test_only_none_extras_leave_no_separator() -> None:
    assert url("/users/:id", {"id": 1, "e": None}) == "/users/1"


def test_build_url_custom_search_to_string_and_endpoint() -> None:
    def brackets(params: Mapping[str, Any]) -> str:
        return "&".join(f"{k}[a]={v['a']}" for k, v in sorted(params.items()))

    template = compile_path("/items/:id")
    assert build_url("", template, {"id": 3, "f": {"a": 1}}, brackets) == "/items/3?f[a]=1"
    with pytest.raises(ParamError, match="Missing parameters: id") as info:
        build_url("", template, {}, endpoint="Item.get")
    assert "Item.get" in str(info.value)


def test_build_url_raises_for_dict_search_param() -> None:
    with pytest.raises(ParamError, match='"f"'):
        url("/items", {"f": {"a": 1}})


@pytest.mark.parametrize(
    "value", [{"b", "a"}, frozenset({"b", "a"}), [{"b", "a"}]], ids=["set", "frozenset", "in-list"]
)
def test_a_set_is_refused_not_sent_as_its_repr(value: Any) -> None:
    """A set used to be sent as Python's repr (`tags=%7B%27b%27%2C+%27a%27%7D`), in an order that
    changes from one process to the next, so the same call had another store key in every process
    (a shared or warm-restarted store never matched) and the server got text it cannot read."""
    from restlayer.rest import RestEndpoint

    todos = RestEndpoint(path="/todos/:id", url_prefix="http://127.0.0.1:1")
    with pytest.raises(ParamError, match=r'"tags" is a (frozen)?set, which has no fixed order: pass a list'):
        todos.key({"id": 1, "tags": value})
    with pytest.raises(ParamError, match='Expected "id" to be a string'):
        todos.url({"id": value})
