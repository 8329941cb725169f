"""Read-only lists and dicts: how plain response data (tags, nested objects) is stored.

Stored data is shared by every snapshot of the store and every reader, so the
values a caller gets must not change it. Lists and dicts inside responses are
stored as `FrozenList`/`FrozenDict`: still `list`/`dict` (equal to plain ones,
JSON-serializable), but every in-place change raises `TypeError`. `copy.copy`,
`copy.deepcopy` and pickling give plain, mutable copies.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import NoReturn, TypeAlias, TypeVar

from restlayer.errors import ReadOnlyError, SchemaError

_K = TypeVar("_K", bound=Hashable)
#: What `freeze` copies: a plain list, tuple or dict.
_Container: TypeAlias = "list[object] | tuple[object, ...] | dict[Hashable, object]"
_V = TypeVar("_V")

_HINT = "stored data is read-only; make a copy first (list(x), dict(x) or copy.deepcopy(x))"


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise ReadOnlyError(f"{type(self).__name__}: {_HINT}")


class FrozenList(list[_V]):
    """A list that refuses in-place changes (see the module docstring)."""

    __slots__ = ()
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __copy__(self) -> list[_V]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, object]) -> list[_V]:
        import copy

        return [copy.deepcopy(v, memo) for v in self]

    def __reduce__(self) -> tuple[object, ...]:
        return (list, (list(self),))


class FrozenDict(dict[_K, _V]):
    """A dict that refuses in-place changes (see the module docstring)."""

    __slots__ = ()
    pop = popitem = clear = update = setdefault = _refuse
    __setitem__ = __delitem__ = __ior__ = _refuse

    def __copy__(self) -> dict[_K, _V]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, object]) -> dict[_K, _V]:
        import copy

        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> tuple[object, ...]:
        return (dict, (dict(self),))


def freeze(value: object) -> object:
    """`value` with every list and dict inside it replaced by a read-only copy (others as they are).

    Deep or self-containing data (beyond Python's recursion limit) takes an
    iterative walk; data that contains itself raises `SchemaError`.
    """
    try:
        return _freeze(value)
    except RecursionError:
        return _freeze_iteratively(value)


def _freeze(value: object) -> object:  # any data; its exact class (not a subclass) picks the copy
    if type(value) is list:
        return FrozenList([_freeze(v) if v.__class__ in _CONTAINERS else v for v in value])
    if type(value) is tuple:
        return tuple(_freeze(v) if v.__class__ in _CONTAINERS else v for v in value)
    if type(value) is dict:
        return FrozenDict({k: _freeze(v) if v.__class__ in _CONTAINERS else v for k, v in value.items()})
    return value


def _freeze_iteratively(root: object) -> object:
    """`freeze` with an explicit stack: children first, then their parent."""
    done: dict[int, object] = {}
    entered: set[int] = set()  # on the path from the root to the current value
    if not isinstance(root, (list, tuple, dict)):
        return root
    stack: list[tuple[_Container, bool]] = [(root, False)]  # lists, tuples and dicts (checked by class)
    while stack:
        value, children_done = stack.pop()
        key = id(value)
        if children_done:
            entered.discard(key)
            done[key] = _rebuild(value, done)
            continue
        if key in done:
            continue
        if key in entered:
            raise SchemaError("The input contains itself (a list or dict nested in itself)")
        entered.add(key)
        stack.append((value, True))
        members = value.values() if type(value) is dict else value
        stack.extend((v, False) for v in members if type(v) is list or type(v) is tuple or type(v) is dict)
    return done.get(id(root), root)


def _rebuild(value: _Container, done: dict[int, object]) -> object:
    """The frozen copy of `value` whose container members are already frozen in `done`."""

    def sub(v: object) -> object:
        return done[id(v)] if v.__class__ in _CONTAINERS else v

    if isinstance(value, list):
        return FrozenList([sub(v) for v in value])
    if isinstance(value, tuple):
        return tuple(sub(v) for v in value)
    return FrozenDict({k: sub(v) for k, v in value.items()})


CONTAINERS = _CONTAINERS = frozenset({list, dict, tuple})
"""The plain types `freeze` copies (a quick `CONTAINERS.isdisjoint(map(type, values))` skips the rest)."""


def freeze_members(record: dict[str, object]) -> None:
    """Freeze, in place, each plain list/dict member of a new `record` (normalized members are frozen already)."""
    if _CONTAINERS.isdisjoint(map(type, record.values())):  # the common case, checked at C speed
        return
    for name, value in record.items():
        cls = value.__class__
        if cls is list or cls is dict or cls is tuple:
            record[name] = freeze(value)
