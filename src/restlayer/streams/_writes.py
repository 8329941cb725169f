"""What a pushed message turns into: a batch of store writes applied all together or not at all.

The user maps a `Message` to writes with a function `(message, writes) -> None`
or a table `{event type: endpoint | schema | function}`. `Writes` records the
calls, checks every one against the current store (normalizing into a scratch
copy, which never touches it) and only then applies them through the
Controller's public methods, so a message that does not fit changes nothing.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from restlayer._typing import A, T
from restlayer.errors import ParamError
from restlayer.schema import Entity, MemoCache, NormalizedResult, Schema, SchemaLike, normalize

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from restlayer.core import Controller, Endpoint, State

__all__ = ["Handler", "Message", "Writes", "handler_for"]

log = logging.getLogger("restlayer")


@dataclass(frozen=True)
class Message:
    """One pushed message: its event type, its decoded data and the server's event id (if any).

    `data` is whatever the stream's decoder made of the payload (JSON by default), as
    `json.loads` gives it: a handler reads it by the shape its event type promises.
    """

    event: str
    data: Any
    id: str | None = None


Handler = Callable[[Message, "Writes"], object]
"""A function turning one message into writes (it calls `writes.set_response`, `set`, `invalidate`)."""
#: What a table maps an event type to: an endpoint (set_response), a schema (set) or a Handler;
#: checked when the table is read (a table literal mixing them is typed as `dict[str, object]`).
Target = object


@dataclass(frozen=True)
class _SetResponse:
    endpoint: Endpoint[object]
    args: tuple[object, ...]
    response: object


@dataclass(frozen=True)
class _Set:
    schema: SchemaLike
    args: tuple[object, ...]
    value: object


@dataclass(frozen=True)
class _Invalidate:
    endpoint: Endpoint[object]
    args: tuple[object, ...]


_Write = _SetResponse | _Set | _Invalidate


def _query_args(args: tuple[object, ...], kwargs: Mapping[str, object]) -> tuple[object, ...]:
    """Schema-read arguments: keywords merged into the first (params) argument."""
    if not kwargs:
        return args
    first = args[0] if args else None
    if first is not None and not isinstance(first, Mapping):
        raise ParamError(f"set(schema, params, value, **keywords): params must be a mapping, not {first!r}")
    return ({**(first or {}), **kwargs}, *args[1:])


def _is_endpoint(target: object) -> TypeIs[Endpoint[object]]:
    return (
        callable(getattr(target, "bind", None)) and callable(getattr(target, "key", None)) and hasattr(target, "schema")
    )


def _is_schema(target: object) -> TypeIs[SchemaLike]:
    """An Entity class, a Schema node, or the dict / list shorthands of one."""
    if isinstance(target, type):
        return issubclass(target, Entity)
    return target is None or isinstance(target, (Schema, Mapping, list))


class Writes:
    """The writes of one message, recorded in order; `commit` applies all of them or none."""

    __slots__ = ("_ops",)

    def __init__(self) -> None:
        self._ops: list[_Write] = []

    def __len__(self) -> int:
        return len(self._ops)

    def set_response(self, endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
        """Like `Controller.set_response`: store the last positional argument as `endpoint(*args)`'s result."""
        if not args:
            raise ParamError("set_response(endpoint, *args, response): the response is missing")
        *rest, response = args
        self._ops.append(_SetResponse(endpoint, tuple(endpoint.bind(*rest, **kwargs)), response))

    def set(self, schema: SchemaLike, *args: object, **kwargs: object) -> None:
        """Like `Controller.set`: write the last positional argument into the entity tables."""
        if not args:
            raise ParamError("set(schema, *args, value): the value is missing")
        *rest, value = args
        self._ops.append(_Set(schema, _query_args(tuple(rest), kwargs), value))

    def invalidate(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> None:
        """Like `Controller.invalidate`: drop the stored result of `endpoint(*args)` (args typed like it)."""
        self._ops.append(_Invalidate(endpoint, tuple(endpoint.bind(*args, **kwargs))))

    def commit(self, controller: Controller) -> None:
        """Check every write against the store, then apply them all; raises (changing nothing) if one does not fit."""
        ops = self._ops
        if len(ops) == 1 and isinstance(ops[0], _Set):
            # One entity write needs no dry run: a `set` that fails leaves the store unchanged.
            only = ops[0]
            controller.set(only.schema, *only.args, only.value)
            return
        for op in _dry_run(controller, ops):
            if isinstance(op, _SetResponse):
                controller.set_response(op.endpoint, *op.args, op.response)
            elif isinstance(op, _Set):
                controller.set(op.schema, *op.args, op.value)
            else:
                controller.invalidate(op.endpoint, *op.args)


def _dry_run(controller: Controller, ops: list[_Write]) -> list[_Write]:
    """The writes to apply, checked in order against a scratch copy of the store (raises when one does not fit).

    Each write sees the ones before it, as it will when they are applied: an updater
    (a callable `set` value) gets the value those writes leave, and is resolved to
    its result here; one with nothing stored is dropped, as `Controller.set` skips it.
    """
    memo = MemoCache()
    now = controller.now()
    meta = {"fetched_at": now, "date": now}  # the writes' own: each wins over what is stored, as when applied
    scratch: State | NormalizedResult = controller.get_state()
    resolved: list[_Write] = []
    for op in ops:
        if isinstance(op, _Set):
            value = op.value
            if callable(value) and not isinstance(value, type):
                current = memo.query(op.schema, op.args, scratch)
                if current is None:
                    continue
                op = _Set(op.schema, op.args, value(current))
            scratch = normalize(op.schema, op.value, op.args, scratch, meta)
        else:
            op.endpoint.key(*op.args)
            if isinstance(op, _SetResponse) and op.endpoint.schema is not None:
                scratch = normalize(op.endpoint.schema, op.response, op.args, scratch, meta)
        resolved.append(op)
    return resolved


def handler_for(on: Mapping[str, Target] | Handler) -> Callable[[Message, Writes], bool]:
    """One function for the user's mapping: records the writes of a message; False when nothing maps it."""
    if not isinstance(on, Mapping):
        if not callable(on):
            raise ParamError(f"on= must be a function (message, writes) or a table {{event: target}}, not {on!r}")
        function = _plain(on, "on= function")

        def call(message: Message, writes: Writes) -> bool:
            _run_handler(function, message, writes)
            return True

        return call
    table = {event: _table_target(event, target) for event, target in on.items()}

    def lookup(message: Message, writes: Writes) -> bool:
        target = table.get(message.event)
        if target is None:
            return False
        _run_handler(target, message, writes)
        return True

    return lookup


def _table_target(event: object, target: Target) -> Handler:
    """The handler of one table row: endpoint -> set_response(data), schema -> set(data), function as is."""
    if not isinstance(event, str):
        raise ParamError(f"on= table keys are event types (str), not {event!r}")
    if _is_endpoint(target):
        endpoint = target
        return lambda message, writes: writes.set_response(endpoint, message.data)
    if _is_schema(target):
        schema = target
        return lambda message, writes: writes.set(schema, message.data)
    if callable(target) and not isinstance(target, type):
        return _plain(target, f"on= table: {event!r} maps to a function that")
    raise ParamError(f"on= table: {event!r} maps to {target!r}, not an endpoint, a schema or a function")


def _plain(handler: Handler, what: str) -> Handler:
    """`handler`, refused when it is a coroutine function: a message's writes are applied as it is handled,
    so writes an `async def` would record later would be lost (and the message counted as applied)."""
    if inspect.iscoroutinefunction(handler):
        raise ParamError(f"{what} must be a plain function (message, writes), not an async one: {handler!r}")
    return handler


def _run_handler(handler: Handler, message: Message, writes: Writes) -> None:
    """Call `handler`; a ParamError (the message ignored, nothing written) when it returns an awaitable."""
    result = handler(message, writes)
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()  # never run: no "never awaited" warning
        raise ParamError("an on= handler returned an awaitable: it must record its writes as it runs, not later")
