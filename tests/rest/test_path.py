"""Path templates: parsing, filling, matching and list paths."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from restlayer._text import to_text
from restlayer.errors import ParamError, RestLayerError
from restlayer.rest._path import PathTemplate, compile_path, list_path
from restlayer.rest._url import build_url


def url(template: str, params: dict[str, Any]) -> str:
    """What `RestEndpoint(path=template).url(params)` gives (empty url_prefix)."""
    return build_url("", compile_path(template), params)


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("template", "names", "required"),
    [
        ("/users/:id", ("id",), ("id",)),
        ("/:foo-bar", ("foo",), ("foo",)),
        ("/:id.json", ("id",), ("id",)),
        ('/:"with-dash"/x', ("with-dash",), ("with-dash",)),
        ('/:"a\\"b\\\\c"', ('a"b\\c',), ('a"b\\c',)),
        ("/:$a/:_b/:ünï/:a\u200cb\u200dc", ("$a", "_b", "ünï", "a\u200cb\u200dc"), None),
        ("/:\u309b", ("\u309b",), ("\u309b",)),  # Other_ID_Start
        ("/:a\u00b7b", ("a\u00b7b",), ("a\u00b7b",)),  # Other_ID_Continue
        ("/:a\u2e2fb", ("a",), ("a",)),  # Pattern_Syntax letter ends the name
        ("/files/*path", ("path",), ("path",)),
        ("/files{/*path}", ("path",), ()),
        ("/:group/users{/:id}{/:x{/:y}}", ("group", "id", "x", "y"), ("group",)),
        ("/search?q=:q", ("q",), ("q",)),
        ("/search{?q=:q}{&page=:page}", ("q", "page"), ()),
        ("/a+b", (), ()),
        (r"/a\:b\*c\{d\}\(e\)\[f\]\!g\\h\?i\+j", (), ()),
        ("", (), ()),
    ],
)
def test_parse_names(template: str, names: tuple[str, ...], required: tuple[str, ...] | None) -> None:
    t = compile_path(template)
    assert t.template == template
    assert t.names == names
    assert t.required == (names if required is None else required)


def test_escapes_are_literal_text() -> None:
    assert url(r"/a\:b/:id", {"id": 1}) == "/a:b/1"
    assert url(r"/a\:b\*c\{d\}\(e\)\[f\]\!g\\h\?i\+j", {}) == r"/a:b*c{d}(e)[f]!g\h?i+j"
    assert url(r"/\x\y", {}) == "/xy"  # `\` escapes whatever follows


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("/users/(x)", "Unexpected ( at index 7"),
        ("/ab:", "Missing parameter name at index 4"),
        ("/:1abc", "Missing parameter name at index 2"),
        ("/a/*", "Missing parameter name at index 4"),
        ('/:""', "Missing parameter name at index 4"),
        ('/a/:"abc', "Unterminated quote at index 4"),
        ('/:"ab\\', "Unterminated quote at index 2"),
        ("/a{/b", "Unexpected end at index 5, expected }"),
        ("/a{/b{/c}", "Unexpected end at index 9, expected }"),
        ("/a\\", "Unexpected end after \\ at index 3"),
        ("/a}", "Unexpected } at index 2"),
        ("/a)", "Unexpected ) at index 2"),
        ("/a[", "Unexpected [ at index 2"),
        ("/a]", "Unexpected ] at index 2"),
        ("/a!", "Unexpected ! at index 2"),
        ("/ü/(", "Unexpected ( at index 3"),  # indices count code points
    ],
)
def test_parse_errors(template: str, message: str) -> None:
    with pytest.raises(ParamError, match=re.escape(message)) as info:
        compile_path(template)
    assert template in str(info.value)  # the message names the template
    assert isinstance(info.value, RestLayerError)


def test_question_mark_and_plus_are_plain_text() -> None:
    assert url("/search?q=:q", {"q": 1}) == "/search?q=1"
    assert url(r"/search\?q=:q", {"q": "a b"}) == "/search?q=a%20b"
    assert url("/search{?q=:q}{&page=:page}", {"page": 2}) == "/search&page=2"
    assert url("/search{?q=:q}{&page=:page}", {"q": "x", "page": 2}) == "/search?q=x&page=2"
    assert url("/a+b/:id", {"id": "+"}) == "/a+b/%2B"


def test_compile_path_is_cached_and_comparable() -> None:
    assert compile_path("/users/:id") is compile_path("/users/:id")
    assert PathTemplate("/users/:id") == compile_path("/users/:id")
    assert hash(PathTemplate("/x")) == hash(compile_path("/x"))


# --------------------------------------------------------------------------- filling


def test_fill_encodes_like_encode_uri_component() -> None:
    assert url("/users/:id", {"id": "a b"}) == "/users/a%20b"
    assert url("/users/:id", {"id": "a/b?c#d"}) == "/users/a%2Fb%3Fc%23d"
    assert url("/users/:id", {"id": "!'()*~"}) == "/users/!'()*~"
    assert url("/users/:id", {"id": "é€😀"}) == "/users/%C3%A9%E2%82%AC%F0%9F%98%80"
    assert url("/users/:id", {"id": "-_.AZaz09"}) == "/users/-_.AZaz09"
    assert url("/users/:id", {"id": "\r\n%"}) == "/users/%0D%0A%25"


def test_fill_converts_values_with_to_text() -> None:
    assert url("/users/:id", {"id": 1.0}) == "/users/1.0"
    assert url("/users/:id", {"id": 7}) == "/users/7"
    assert url("/users/:id", {"id": True}) == "/users/true"
    assert url("/users/:id", {"id": False}) == "/users/false"
    with pytest.raises(ParamError, match="empty value"):  # "/users/" would be the list's URL
        url("/users/:id", {"id": ""})


def test_fill_wildcards() -> None:
    assert url("/files/*path", {"path": ["a b", "c/d"]}) == "/files/a%20b/c%2Fd"
    assert url("/files/*path", {"path": ("x", 1, True)}) == "/files/x/1/true"
    assert url("/files{/*path}", {}) == "/files"
    assert url("/files{/*path}", {"path": ["a"]}) == "/files/a"


def test_fill_optional_groups() -> None:
    assert url("/users{/:id}{/:group}", {"group": 5}) == "/users/5"
    assert url("/users{/:id}{/:group}", {"id": 1, "group": 5}) == "/users/1/5"
    assert url("/a{/:b{/:c}}", {"c": 1}) == "/a"
    assert url("/a{/:b{/:c}}", {"b": 1}) == "/a/1"
    assert url("/a{/:b{/:c}}", {"b": 1, "c": 2}) == "/a/1/2"
    assert url("/a{/:b/:c}", {"b": 1}) == "/a"  # every direct param must be present
    assert url("/a{/b}{/:c}", {}) == "/a/b"  # a group holding only text is always emitted
    assert url("/users{/:id}", {"id": None}) == "/users"


def test_fill_adjacent_params_still_work() -> None:
    assert url("/:a:b", {"a": 1, "b": 2}) == "/12"


def test_fill_missing_parameters() -> None:
    with pytest.raises(ParamError, match="Missing parameters: group, id"):
        url("/:group/users/:id", {})
    with pytest.raises(ParamError, match="Missing parameters: id"):
        url("/users/:id", {"id": None})
    with pytest.raises(ParamError, match="Missing parameters: path"):
        url("/files/*path", {})
    with pytest.raises(ParamError, match="Missing parameters: b") as info:
        compile_path("/a/:b").fill({}, endpoint="Todo.get")
    assert "Todo.get" in str(info.value)
    assert "/a/:b" in str(info.value)


@pytest.mark.parametrize(
    ("template", "params", "message"),
    [
        ("/users/:id", {"id": [1]}, 'Expected "id" to be a string'),
        ("/users/:id", {"id": (1,)}, 'Expected "id" to be a string'),
        ("/files/*path", {"path": "a"}, 'Expected "path" to be a non-empty array'),
        ("/files/*path", {"path": []}, 'Expected "path" to be a non-empty array'),
        ("/files/*path", {"path": 3}, 'Expected "path" to be a non-empty array'),
        ("/files/*path", {"path": ["a", None]}, 'Expected "path/1" to be a string'),
        ("/files/*path", {"path": [["a"]]}, 'Expected "path/0" to be a string'),
        ("/users/:id", {"id": "\ud800"}, "URI malformed"),
        ("/files/*path", {"path": ["ok", "\udfff"]}, "URI malformed"),
        ("/users/:id", {"id": {"a": 1}}, '"id"'),
        # values are checked even in a group that ends up dropped, as path-to-regexp does
        ("/a{/:b/:c}", {"c": [1]}, 'Expected "c" to be a string'),
    ],
)
def test_fill_bad_values(template: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(ParamError, match=re.escape(message)) as info:
        url(template, params)
    assert template in str(info.value)


def test_fill_joins_surrogate_pairs() -> None:
    # a JS string holds astral characters as pairs; such a Python str encodes the same
    assert url("/users/:id", {"id": "\ud83d\ude00"}) == "/users/%F0%9F%98%80"


def test_literal_text_is_never_encoded() -> None:
    assert url("/ä b/:id", {"id": "ä b"}) == "/ä b/%C3%A4%20b"


# --------------------------------------------------------------------------- matching


def test_match_basics() -> None:
    t = compile_path("/users/:id")
    assert t.match("/users/5") == {"id": "5"}
    assert t.match("/USERS/5/") == {"id": "5"}
    assert t.match("/users/5/x") is None
    assert t.match("/users/") is None
    assert t.match("/users/5/\n") is None  # whole-string match: no `$`-before-newline slip
    assert t.match("/users/5\n") == {"id": "5\n"}  # a param is anything but `/`
    assert t.match("/users/a%2Fb%20c") == {"id": "a/b c"}
    assert t.match("/users/%E0%A4%A") == {"id": "%E0%A4%A"}  # malformed: kept as is


def test_match_wildcards_and_groups() -> None:
    t = compile_path("/files/*path")
    assert t.match("/files/a%20b/c%2Fd") == {"path": ["a b", "c/d"]}
    assert t.match("/files") is None
    z = compile_path("/files{/*path}")
    assert z.match("/files") == {}
    assert z.match("/files/a/b") == {"path": ["a", "b"]}
    g = compile_path("/users{/:id}{/:group}")
    assert g.match("/users") == {}
    assert g.match("/users/1") == {"id": "1"}  # with-group alternatives come first
    assert g.match("/users/1/2") == {"id": "1", "group": "2"}
    assert compile_path("/a{/:b{/:c}}").match("/a/1/2") == {"b": "1", "c": "2"}
    assert compile_path("/search?q=:q").match("/search?q=x") == {"q": "x"}


def test_match_regex_only_errors() -> None:
    with pytest.raises(ParamError, match='Missing text before "b" param') as info:
        compile_path("/:a:b").match("/12")
    assert "/:a:b" in str(info.value)
    with pytest.raises(ParamError, match='Missing text before "w" wildcard'):
        compile_path("/:a{*w}").match("/1")
    with pytest.raises(ParamError, match="Too many path combinations"):
        compile_path("/x" + "{/a}" * 9).match("/x")
    assert compile_path("/x" + "{/a}" * 8).match("/x/a/a") == {}


def test_match_regex_is_cached() -> None:
    t = PathTemplate("/users/:id")
    assert t._regex is t._regex


# --------------------------------------------------------------------------- list paths


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("/:first/:second", "/:first"),
        ("/:owner/*path", "/:owner"),
        ("/todos/:id.json", "/todos"),
        ("/todos/:id/detail", "/todos"),
        ("/todos/:id", "/todos"),
        ("/:first", "/"),
        ("/:group/posts{/:id}", "/:group/posts"),
        ("/:group/posts{/x{/:id}}", "/:group/posts"),
        ("/:group/posts{/:id}{.json}", "/:group/posts"),
        ("/a/:b\\:c", "/a"),
        ("/a\\/:id", "/a"),
        ("https\\://x/:id", "https://x".replace("://", "\\://")),
    ],
)
def test_list_path(template: str, expected: str) -> None:
    assert list_path(template) == expected
    compile_path(list_path(template))  # always a valid template


@pytest.mark.parametrize("template", ["/todos", "/a\\:b", "", "/a{/b}"])
def test_list_path_requires_a_param(template: str) -> None:
    with pytest.raises(ParamError, match="Resource path requires at least one :parameter or \\*wildcard"):
        list_path(template)


# --------------------------------------------------------------------------- properties

TRICKY = ["../admin", "..", ".", "a/b", "x?y=z", "#", "\r\n", "%", "%2F", " ", "~", "@g0", "/", "?"]
values = st.one_of(
    st.text(min_size=1),
    st.sampled_from(TRICKY),
    st.integers(),
    st.booleans(),
)
LITERAL_CHARS = "abcXYZ019-._~éß" + "{}()[]!:*\\+"
TEMPLATE_SPECIAL = set("{}()[]!:*\\")
NAME_PREFIXES = ["id", "ü", "$", "_", "a\u200d", "x\u00b7"]


@dataclass
class Lit:
    text: str


@dataclass
class Param:
    quoted: str | None  # the quoted name's prefix, or None for an identifier
    prefix: str = "id"
    name: str = ""


@dataclass
class Group:
    items: list[Any]
    marker: str = ""


@dataclass
class Wild:
    kind: str  # "top" (`/*w`), "marked" (`{/@gN/*w}`) or "bare" (`{/*w}`)
    name: str = ""


@dataclass
class Shape:
    items: list[Any]
    wild: Wild | None
    names: list[str] = field(default_factory=list)


def _items(depth: int) -> st.SearchStrategy[list[Any]]:
    kinds: list[st.SearchStrategy[Any]] = [
        st.builds(Lit, st.text(LITERAL_CHARS, min_size=1, max_size=4)),
        st.builds(
            Param,
            st.one_of(st.none(), st.text(max_size=4)),
            st.sampled_from(NAME_PREFIXES),
        ),
    ]
    if depth < 2:
        kinds.append(st.builds(Group, st.deferred(lambda: _items(depth + 1))))
    return st.lists(st.one_of(kinds), max_size=3)


shapes = st.builds(
    Shape,
    _items(0),
    st.one_of(st.none(), st.builds(Wild, st.sampled_from(["top", "marked", "bare"]))),
)


def _name_and_mark(shape: Shape) -> None:
    """Give every param a unique name and every group a unique marker segment."""
    counter = 0

    def walk(items: list[Any]) -> None:
        nonlocal counter
        for item in items:
            if isinstance(item, Param):
                base = item.quoted if item.quoted is not None else item.prefix
                item.name = f"{base}_{counter}"
                shape.names.append(item.name)
            elif isinstance(item, Group):
                item.marker = f"@g{counter}"
                walk(item.items)
            counter += 1

    walk(shape.items)
    if shape.wild is not None:
        shape.wild.name = f"w_{counter}"
        shape.names.append(shape.wild.name)


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in TEMPLATE_SPECIAL else ch for ch in text)


def _param_source(item: Param) -> str:
    if item.quoted is None:
        return ":" + item.name
    return ':"' + item.name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _render(items: list[Any]) -> str:
    out = []
    for item in items:
        if isinstance(item, Lit):
            out.append("/" + _escape(item.text))
        elif isinstance(item, Param):
            out.append("/" + _param_source(item))
        else:
            out.append("{/" + item.marker + _render(item.items) + "}")
    return "".join(out)


def _template(shape: Shape) -> str:
    text = _render(shape.items)
    wild = shape.wild
    if wild is not None:
        text += {"top": "/*{}", "marked": "{{/@gw/*{}}}", "bare": "{{/*{}}}"}[wild.kind].format(wild.name)
    return text


def _encode(value: Any) -> str:
    return quote(to_text(value), safe="!~*'()")


def _expect(items: list[Any], params: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The path and matched params the structure implies, or None when a direct param is absent."""
    path: list[str] = []
    matched: dict[str, Any] = {}
    complete = True
    for item in items:
        if isinstance(item, Lit):
            path.append("/" + item.text)
        elif isinstance(item, Param):
            if params.get(item.name) is None:
                complete = False
            else:
                path.append("/" + _encode(params[item.name]))
                matched[item.name] = to_text(params[item.name])
        else:
            inner = _expect(item.items, params)
            if inner is not None:
                path.append("/" + item.marker + inner[0])
                matched.update(inner[1])
    return ("".join(path), matched) if complete else None


@st.composite
def cases(draw: st.DrawFn) -> tuple[Shape, dict[str, Any]]:
    shape = draw(shapes)
    _name_and_mark(shape)
    required = set(compile_path(_template(shape)).required)
    params: dict[str, Any] = {}
    for name in shape.names:
        is_wild = shape.wild is not None and name == shape.wild.name
        value = st.lists(values, min_size=1, max_size=3) if is_wild else values
        if name in required:
            params[name] = draw(value)
        else:
            params[name] = draw(st.one_of(st.none(), value))
    return shape, params


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_fill_then_match_round_trips(case: tuple[Shape, dict[str, Any]]) -> None:
    shape, params = case
    template = compile_path(_template(shape))
    assert list(template.names) == shape.names

    expected = _expect(shape.items, params)
    assert expected is not None
    expected_path, expected_params = expected
    wild = shape.wild
    if wild is not None and params.get(wild.name) is not None:
        parts = params[wild.name]
        expected_path += ("/@gw/" if wild.kind == "marked" else "/") + "/".join(_encode(part) for part in parts)
        expected_params[wild.name] = [to_text(part) for part in parts]
    texts = [t for v in expected_params.values() for t in (v if isinstance(v, list) else [v])]
    if {".", ".."} & set(texts):
        # a value that is a dot segment would be collapsed by clients: refused
        with pytest.raises(ParamError, match="cannot be a whole path segment"):
            template.fill(params)
        return
    path = template.fill(params)
    assert path == expected_path

    # no value can change the path's shape
    literal_slashes = expected_path.count("/") - sum(
        _encode(v).count("/") for v in expected_params.values() if isinstance(v, str)
    )
    assert path.count("/") == literal_slashes
    for bad in ("?", "#", "\r", "\n", " "):
        assert bad not in path

    try:
        matched = template.match(path)
    except ParamError as error:  # more than 256 optional alternatives: a documented limit
        assume("Too many path combinations" not in str(error))
        raise
    assert matched == expected_params
    with_slash = template.match(path + "/")
    if wild is not None and wild.name in expected_params:
        # a trailing wildcard swallows the slash as an empty last segment, as in path-to-regexp
        expected_params[wild.name].append("")
    assert with_slash == expected_params


@pytest.mark.filterwarnings("ignore::restlayer.errors.PathTemplateWarning")  # a warning, not an error
@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from('/:*{}()\\"ab?+!é_$1[]'), max_size=12))
@example("{_}")  # valid, but warns that a braced name is literal text
def test_parse_raises_only_param_error(text: str) -> None:
    try:
        template = compile_path(text)
    except ParamError:
        return
    with contextlib.suppress(ParamError):
        template.match("/a/b")
    params = dict.fromkeys(template.names, "v")
    try:
        filled = template.fill(params)
    except ParamError as exc:
        assert "Expected" in str(exc)  # a wildcard given a str
        return
    assert isinstance(filled, str)


@given(st.dictionaries(st.sampled_from(["id", "x", "y"]), st.one_of(st.none(), values, st.lists(values))))
def test_fill_raises_only_param_error(params: dict[str, Any]) -> None:
    for template in ("/a/:id", "/a{/:x}{/*y}", "/:id/*y"):
        with contextlib.suppress(ParamError):
            compile_path(template).fill(params)
