"""Nested schemas read from an Entity's field annotations (`author: User | None` nests `User`).

What an annotation can say: an Entity class, optionally `| None`, or a list /
sequence / `tuple[X, ...]` of one (an array), or `dict[str, X]` (values keyed by
name). Anything else (several entity types, a Union schema, a Collection) still
goes in `schema = {...}`, which wins over the annotation of the same field.
"""

from __future__ import annotations

import collections.abc
import inspect
import sys
import types
import typing
from typing import Union

from restlayer.schema._containers import Values

_UNIONS: tuple[object, ...] = (Union, types.UnionType)
_SEQUENCES: tuple[object, ...] = (list, collections.abc.Sequence, collections.abc.MutableSequence)


def annotated_schemas(cls: type, base: type) -> dict[str, object]:
    """Field name -> schema for every field of `cls` (and its `base` subclasses) annotated with entities."""
    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        if not issubclass(klass, base) or klass is base:
            continue
        module = sys.modules.get(klass.__module__)
        globalns = dict(vars(module)) if module is not None else {}
        localns = dict(vars(klass))
        for name, annotation in inspect.get_annotations(klass).items():
            if name.startswith("_"):
                continue
            schema = schema_of(_resolve(annotation, globalns, localns), base)
            if schema is None:
                found.pop(name, None)  # a subclass re-annotating a field as plain data
            else:
                found[name] = schema
    return found


def _resolve(annotation: object, globalns: dict[str, object], localns: dict[str, object]) -> object:
    """A string annotation evaluated in its class's module; None when it names nothing reachable there."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, globalns, localns)  # the class's own annotation text, as typing does
    except Exception:  # a name local to a function, or a typing-only import: not derivable
        return None


def schema_of(hint: object, base: type) -> object | None:
    """The schema an annotation names, or None when it names no entity (plain data)."""
    if isinstance(hint, type) and issubclass(hint, base):
        return hint
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in _UNIONS:
        members = [a for a in args if a is not type(None)]
        return schema_of(members[0], base) if len(members) == 1 else None
    if origin in (dict, collections.abc.Mapping) and len(args) == 2 and args[0] is str:
        entity = _entity(args[1], base)
        return None if entity is None else Values(entity)
    homogeneous_tuple = origin is tuple and len(args) == 2 and args[1] is Ellipsis
    if (origin in _SEQUENCES and len(args) == 1) or homogeneous_tuple:
        entity = _entity(args[0], base)
        return None if entity is None else [entity]
    return None


def _entity(hint: object, base: type) -> type | None:
    return hint if isinstance(hint, type) and issubclass(hint, base) else None
