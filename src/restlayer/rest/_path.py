"""Path templates in path-to-regexp 8 syntax: parse once, then fill, match and derive list paths.

A template is parsed into a small tree (text, params, wildcards, optional
groups); `fill` walks the tree to build a URL path, `match` uses a regex built
lazily from it (only `test_key` needs it).
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TypeAlias
from urllib.parse import quote, unquote

from restlayer._text import to_text
from restlayer.errors import ParamError, PathTemplateWarning

__all__ = ["PathTemplate", "compile_path", "list_path"]

_MAX_COMBINATIONS = 256
_DOTS = frozenset((".", ".."))
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_SAFE = "!~*'()"  # with quote's always-safe `A-Za-z0-9_.-~`: encodeURIComponent's set


# --------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class _Param:
    """A `:name` parameter (or a `*name` wildcard); `start` is the index of `:`/`*`."""

    name: str
    wildcard: bool
    start: int


@dataclass(frozen=True)
class _Group:
    """An optional `{...}` group; `start` is the index of its `{`."""

    children: tuple[_Node, ...]
    start: int


_Node: TypeAlias = str | _Param | _Group  # a `str` node is literal text (already unescaped)


# --------------------------------------------------------------------------- identifiers

_OTHER_ID_START = frozenset("\u1885\u1886\u2118\u212e\u309b\u309c")
_OTHER_ID_CONTINUE = frozenset(
    "\u00b7\u0387\u1369\u136a\u136b\u136c\u136d\u136e\u136f\u1370\u1371\u19da\u200c\u200d\u30fb\uff65"
)
_ID_START_CATEGORIES = frozenset(("Lu", "Ll", "Lt", "Lm", "Lo", "Nl"))
_ID_CONTINUE_CATEGORIES = frozenset(("Mn", "Mc", "Nd", "Pc"))
_PATTERN_SYNTAX_LETTERS = frozenset("\u2e2f")  # the only Pattern_Syntax char in those categories


@lru_cache(maxsize=4096)
def _is_id_start(ch: str) -> bool:
    """JS `/[$_\\p{ID_Start}]/u`: may this character begin an unquoted name?"""
    if ch in "$_" or ch in _OTHER_ID_START:
        return True
    return unicodedata.category(ch) in _ID_START_CATEGORIES and ch not in _PATTERN_SYNTAX_LETTERS


@lru_cache(maxsize=4096)
def _is_id_continue(ch: str) -> bool:
    """JS `/[$\\u200c\\u200d\\p{ID_Continue}]/u`: may this character continue a name?"""
    if _is_id_start(ch) or ch in _OTHER_ID_CONTINUE:
        return True
    return unicodedata.category(ch) in _ID_CONTINUE_CATEGORIES


# --------------------------------------------------------------------------- parsing


class _ParseFailure(Exception):
    """Internal: a syntax error, re-raised as `ParamError` naming the template."""


_FORBIDDEN = frozenset("})([]!")  # `?` and `+` are plain text, not modifiers


class _Parser:
    """Recursive-descent parser over the template's code points (JS `Array.from` indices)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.index = 0

    def parse(self) -> tuple[_Node, ...]:
        return self._sequence(None)

    def _sequence(self, closer: str | None) -> tuple[_Node, ...]:
        text, n = self.text, len(self.text)
        nodes: list[_Node] = []
        literal: list[str] = []

        def flush() -> None:
            if literal:
                nodes.append("".join(literal))
                literal.clear()

        while self.index < n:
            start = self.index
            ch = text[start]
            self.index += 1
            if ch == closer:
                flush()
                return tuple(nodes)
            if ch == "\\":
                if self.index == n:
                    raise _ParseFailure(f"Unexpected end after \\ at index {self.index}")
                literal.append(text[self.index])
                self.index += 1
            elif ch == ":" or ch == "*":
                name = self._name()
                flush()
                nodes.append(_Param(name, ch == "*", start))
            elif ch == "{":
                flush()
                nodes.append(_Group(self._sequence("}"), start))
            elif ch in _FORBIDDEN:
                raise _ParseFailure(f"Unexpected {ch} at index {start}")
            else:
                literal.append(ch)
        if closer is not None:
            raise _ParseFailure(f"Unexpected end at index {self.index}, expected {closer}")
        flush()
        return tuple(nodes)

    def _name(self) -> str:
        """Read a parameter name after `:` or `*`: a JS identifier or a quoted string."""
        text, n, i = self.text, len(self.text), self.index
        if i < n and _is_id_start(text[i]):
            j = i + 1
            while j < n and _is_id_continue(text[j]):
                j += 1
            self.index = j
            return text[i:j]
        if i < n and text[i] == '"':
            chars: list[str] = []
            j = i + 1
            while j < n:
                ch = text[j]
                if ch == '"':
                    self.index = j + 1
                    break
                if ch == "\\":
                    j += 1
                    if j == n:
                        raise _ParseFailure(f"Unterminated quote at index {i}")
                    ch = text[j]
                chars.append(ch)
                j += 1
            else:
                raise _ParseFailure(f"Unterminated quote at index {i}")
            if chars:
                return "".join(chars)
        raise _ParseFailure(f"Missing parameter name at index {self.index}")


# --------------------------------------------------------------------------- filling


class _BadValue(Exception):
    """Internal: a value that cannot go into the path; re-raised with context."""


def _encode(text: str) -> str:
    """`encodeURIComponent`: UTF-8 percent-encoding; a lone surrogate is `URI malformed`."""
    try:
        return quote(text, safe=_SAFE)
    except UnicodeEncodeError:
        pass
    try:  # surrogate *pairs* (as JS strings hold them) are fine: join them first
        joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise _BadValue("URI malformed") from None
    return quote(joined, safe=_SAFE)


def _param_text(name: str, value: object) -> str:
    """Encoded text of a present `:name` value."""
    if type(value) is str:
        return _encode(value)
    cls = type(value)
    if cls is int:
        return str(value)
    if isinstance(value, (list, tuple, AbstractSet)):  # a set's text (its repr) has no fixed order either
        raise _BadValue(f'Expected "{name}" to be a string')
    if isinstance(value, Mapping):
        raise _BadValue(
            f'Expected "{name}" to be a string or number, got a {cls.__name__} '
            "(override url() or search_to_string() to send nested objects)"
        )
    return _encode(to_text(value))


def _wildcard_text(name: str, value: object) -> str:
    """Encoded text of a present `*name` value: each element encoded, joined by `/`."""
    if not isinstance(value, (list, tuple)) or not value:
        raise _BadValue(f'Expected "{name}" to be a non-empty array')
    parts = []
    for i, item in enumerate(value):
        if item is None or isinstance(item, (list, tuple, Mapping)):
            raise _BadValue(f'Expected "{name}/{i}" to be a string')
        parts.append(_param_text(name, item))
    return "/".join(parts)


def _fill(nodes: tuple[_Node, ...], params: Mapping[str, object], out: list[str], bad: _Suspects) -> list[str]:
    """Append the filled `nodes` to `out`; return the names of missing direct params.

    Every value is checked even where a group ends up dropped (as path-to-regexp does).
    Params whose text would make the URL name another resource go to `bad` (see `_Suspects`).
    """
    missing: list[str] = []
    for i, node in enumerate(nodes):
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, _Param):
            value = params.get(node.name)
            if value is None:
                missing.append(node.name)
                continue
            text = _wildcard_text(node.name, value) if node.wildcard else _param_text(node.name, value)
            if "." in text and _DOTS.intersection(text.split("/")):
                bad.dots.append(node.name)
            elif not text and _whole_segment(out, nodes[i + 1] if i + 1 < len(nodes) else None):
                bad.empty.append(node.name)
            out.append(text)
        else:
            inner: list[str] = []
            if not _fill(node.children, params, inner, bad):
                out.extend(inner)
    return missing


@dataclass
class _Suspects:
    """Params whose text would turn the URL into another resource's: `.`/`..` segments (which URLs
    collapse), and empty values filling a whole segment (`/users/:id` with `""` is the list's URL)."""

    dots: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)


def _whole_segment(before: list[str], after: _Node | None) -> bool:
    """Whether a param between the text filled so far and the node `after` fills a whole path segment.

    The edges of a group count as segment edges: a doubt refuses an empty value rather than sends it.
    """
    starts = not before or before[-1].endswith("/")
    ends = after is None or (isinstance(after, str) and after[:1] in ("", "/", "?", "#"))
    return starts and ends


def _has_dot_segment(path: str) -> bool:
    """Whether the path part of `path` holds a `.` or `..` segment (which URLs collapse)."""
    cut = min((i for i in (path.find("?"), path.find("#")) if i != -1), default=len(path))
    return not _DOTS.isdisjoint(path[:cut].split("/"))


def _warn_braced_names(nodes: tuple[_Node, ...], template: str) -> None:
    """Warn about `/{id}`: valid syntax (an optional literal "id") but almost always meant as `/:id`.

    Only a group that is a whole segment warns: `/book{s}` (optional plural) is fine.
    """
    for i, node in enumerate(nodes):
        if not isinstance(node, _Group):
            continue
        before = nodes[i - 1] if i else "/"
        after = nodes[i + 1] if i + 1 < len(nodes) else "/"
        whole_segment = isinstance(before, str) and before.endswith("/")
        whole_segment = whole_segment and isinstance(after, str) and after[:1] in ("/", "?", ".")
        inner = node.children[0] if len(node.children) == 1 else None
        if whole_segment and isinstance(inner, str) and _IDENTIFIER.fullmatch(inner):
            name = inner
            warnings.warn(
                f'Path template {_quoted(template)}: "{{{name}}}" is an optional literal text "{name}", '
                f'not a parameter; write ":{name}" for a parameter (or "{{/:{name}}}" for an optional one)',
                PathTemplateWarning,
                stacklevel=5,
            )
        _warn_braced_names(node.children, template)


# --------------------------------------------------------------------------- regex form


def _expand(seq: tuple[_Node, ...], i: int) -> Iterator[tuple[str | _Param, ...]]:
    """Lazily expand optional groups into flat token sequences, with-group first."""
    if i == len(seq):
        yield ()
        return
    node = seq[i]
    if isinstance(node, _Group):
        for inside in _expand(node.children, 0):
            for rest in _expand(seq, i + 1):
                yield inside + rest
        yield from _expand(seq, i + 1)
    else:
        for rest in _expand(seq, i + 1):
            yield (node, *rest)


def _build_regex(nodes: tuple[_Node, ...], template: str) -> tuple[re.Pattern[str], tuple[_Param, ...]]:
    """Compile the whole template to one case-insensitive regex; return it and its groups' keys."""
    sources: list[str] = []
    keys: list[_Param] = []
    for count, alternative in enumerate(_expand(nodes, 0)):
        if count >= _MAX_COMBINATIONS:
            raise ParamError(f"Too many path combinations in path template {_quoted(template)}")
        source: list[str] = []
        text_since_capture = True  # nothing captured yet
        for token in alternative:
            if isinstance(token, str):
                source.append(re.escape(token))
                text_since_capture = True
                continue
            if not text_since_capture:
                kind = "wildcard" if token.wildcard else "param"
                raise ParamError(f'Missing text before "{token.name}" {kind} in path template {_quoted(template)}')
            source.append("(.+)" if token.wildcard else "([^/]+)")
            keys.append(token)
            text_since_capture = False
        sources.append("".join(source))
    pattern = "(?:" + "|".join(sources) + ")/?"
    return re.compile(pattern, re.IGNORECASE | re.DOTALL), tuple(keys)


def _decode(raw: str) -> str:
    """`decodeURIComponent`; text that is not valid percent-encoded UTF-8 is kept as is."""
    if "%" not in raw:
        return raw
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError:
        return raw


# --------------------------------------------------------------------------- public


def _quoted(template: str) -> str:
    return '"' + template + '"'


def _names(nodes: tuple[_Node, ...], required_only: bool) -> list[str]:
    found: list[str] = []
    for node in nodes:
        if isinstance(node, _Param):
            found.append(node.name)
        elif isinstance(node, _Group) and not required_only:
            found.extend(_names(node.children, False))
    return found


@dataclass(frozen=True)
class PathTemplate:
    """A parsed path template: fill it with params, match paths against it.

    Build one with `compile_path(template)` (cached); the constructor parses too.
    """

    template: str
    names: tuple[str, ...] = field(init=False)
    required: tuple[str, ...] = field(init=False)
    name_set: frozenset[str] = field(init=False, repr=False, compare=False)
    _nodes: tuple[_Node, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            nodes = _Parser(self.template).parse()
        except _ParseFailure as exc:
            raise ParamError(f"{exc} in path template {_quoted(self.template)}") from None
        names = tuple(_names(nodes, False))
        _warn_braced_names(nodes, self.template)
        setattr_ = object.__setattr__
        setattr_(self, "_nodes", nodes)
        setattr_(self, "names", names)
        setattr_(self, "required", tuple(_names(nodes, True)))
        setattr_(self, "name_set", frozenset(names))

    def fill(self, params: Mapping[str, object], *, endpoint: str | None = None) -> str:
        """The URL path for `params`: values encoded, absent groups dropped.

        Raises `ParamError` for missing required params and unusable values.
        """
        out: list[str] = []
        bad = _Suspects()
        try:
            missing = _fill(self._nodes, params, out, bad)
        except _BadValue as exc:
            raise ParamError(f"{exc}{self._context(endpoint)}") from None
        if missing:
            raise ParamError(f"Missing parameters: {', '.join(missing)}{self._context(endpoint)}")
        path = "".join(out)
        if bad.dots and _has_dot_segment(path):
            raise ParamError(
                f'Parameter {", ".join(bad.dots)}: "." and ".." cannot be a whole path segment (the URL '
                f"would be collapsed to another resource){self._context(endpoint)}"
            )
        if bad.empty:
            raise ParamError(
                f"Parameter {', '.join(bad.empty)}: an empty value cannot be a whole path segment (the URL "
                f"would name another resource, such as the list){self._context(endpoint)}"
            )
        return path

    def match(self, path: str) -> dict[str, str | list[str]] | None:
        """Decoded params when `path` (no search part) fits the template, else `None`.

        Case-insensitive, an optional trailing `/`; a wildcard gives a list of segments.
        """
        regex, keys = self._regex
        found = regex.fullmatch(path)
        if found is None:
            return None
        result: dict[str, str | list[str]] = {}
        for key, raw in zip(keys, found.groups(), strict=True):
            if raw is None:
                continue
            if key.wildcard:
                result[key.name] = [_decode(part) for part in raw.split("/")]
            else:
                result[key.name] = _decode(raw)
        return result

    @cached_property
    def _regex(self) -> tuple[re.Pattern[str], tuple[_Param, ...]]:
        return _build_regex(self._nodes, self.template)

    def _context(self, endpoint: str | None) -> str:
        where = f"path template {_quoted(self.template)}"
        if endpoint:
            where = f"endpoint {endpoint}, {where}"
        return f" ({where})"


@lru_cache(maxsize=2048)
def compile_path(template: str) -> PathTemplate:
    """The parsed `PathTemplate` for `template` (cached); a syntax error raises `ParamError`."""
    return PathTemplate(template)


def list_path(template: str) -> str:
    """A resource's list path: the template cut before its last param.

    A last param inside an optional group drops the whole (outermost) group; one
    trailing `/` goes, unless the template ends in `/` right after its last param
    (`/todos/:id/` gives `/todos/`, as servers with slash-terminated paths expect);
    an empty result is `/`.
    """
    nodes = compile_path(template)._nodes

    def node_has_param(group: _Group) -> bool:
        return bool(_names(group.children, False))

    cut = -1
    for node in nodes:
        if isinstance(node, _Param) or (isinstance(node, _Group) and node_has_param(node)):
            cut = node.start
    if cut < 0:
        raise ParamError(
            f"Resource path requires at least one :parameter or *wildcard (path template {_quoted(template)})"
        )
    head = template[:cut]
    keeps_slash = len(nodes) >= 2 and nodes[-1] == "/" and isinstance(nodes[-2], _Param)
    if head.endswith("/") and not keeps_slash:
        escapes = len(head) - 1 - len(head[:-1].rstrip("\\"))
        head = head[: -2 if escapes % 2 else -1]
    return head or "/"
