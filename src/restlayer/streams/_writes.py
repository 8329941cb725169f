"""What a pushed message turns into: a batch of store writes applied all together or not at all.

The user maps a `Message` to writes with a function `(message, writes) -> None`
or a table `{event type: endpoint | schema | function}`. `Writes` records the
calls, checks every one against the current store (normalizing into a scratch
copy, which never touches it) and only then applies them through the
Controller's public methods, so a message that does not fit changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from restlayer.errors import ParamError
from restlayer.schema import normalize

if TYPE_CHECKING:
    from restlayer.core import Controller

__all__ = ["Handler", "Message", "Writes", "handler_for"]

log = logging.getLogger("restlayer")


@dataclass(frozen=True)
class Message:
    """One pushed message: its event type, its decoded data and the server's event id (if any)."""

    event: str
    data: Any
    id: str | None = None


#: A function turning one message into writes (it calls `writes.set_response`, `set`, `invalidate`).
Handler = Callable[[Message, "Writes"], Any]
#: What a table maps an event type to: an endpoint (set_response), a schema (set) or a Handler.
Target = Any


def _query_args(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """Schema-read arguments: keywords merged into the first (params) argument."""
    if not kwargs:
        return args
    first = args[0] if args else None
    return ({**(first or {}), **kwargs}, *args[1:])


def _is_endpoint(target: Any) -> bool:
    return (
        callable(getattr(target, "bind", None)) and callable(getattr(target, "key", None)) and hasattr(target, "schema")
    )


class Writes:
    """The writes of one message, recorded in order; `commit` applies all of them or none."""

    __slots__ = ("_ops",)

    def __init__(self) -> None:
        self._ops: list[tuple[str, Any, tuple[Any, ...], Any]] = []

    def __len__(self) -> int:
        return len(self._ops)

    def set_response(self, endpoint: Any, *args: Any, **kwargs: Any) -> None:
        """Like `Controller.set_response`: store the last positional argument as `endpoint(*args)`'s result."""
        if not args:
            raise ParamError("set_response(endpoint, *args, response): the response is missing")
        *rest, response = args
        self._ops.append(("set_response", endpoint, tuple(endpoint.bind(*rest, **kwargs)), response))

    def set(self, schema: Any, *args: Any, **kwargs: Any) -> None:
        """Like `Controller.set`: write the last positional argument into the entity tables."""
        if not args:
            raise ParamError("set(schema, *args, value): the value is missing")
        *rest, value = args
        self._ops.append(("set", schema, _query_args(tuple(rest), kwargs), value))

    def invalidate(self, endpoint: Any, *args: Any, **kwargs: Any) -> None:
        """Like `Controller.invalidate`: drop the stored result of `endpoint(*args)`."""
        self._ops.append(("invalidate", endpoint, tuple(endpoint.bind(*args, **kwargs)), None))

    def commit(self, controller: Controller) -> None:
        """Check every write against the store, then apply them all; raises (changing nothing) if one does not fit."""
        ops = self._ops
        if len(ops) == 1 and ops[0][0] == "set":
            # One entity write needs no dry run: a `set` that fails leaves the store unchanged.
            _, schema, args, value = ops[0]
            controller.set(schema, *args, value)
            return
        scratch: Any = controller.get_state()
        resolved: list[tuple[str, Any, tuple[Any, ...], Any]] = []
        for kind, target, args, value in ops:
            if kind == "set" and callable(value) and not isinstance(value, type):
                value = value(controller.get(target, *args))
            if kind == "invalidate":
                target.key(*args)
            elif kind == "set_response":
                target.key(*args)
                if target.schema is not None:
                    scratch = normalize(target.schema, value, args, scratch)
            else:
                scratch = normalize(target, value, args, scratch)
            resolved.append((kind, target, args, value))
        for kind, target, args, value in resolved:
            if kind == "set_response":
                controller.set_response(target, *args, value)
            elif kind == "set":
                controller.set(target, *args, value)
            else:
                controller.invalidate(target, *args)


def handler_for(on: Mapping[str, Target] | Handler) -> Callable[[Message, Writes], bool]:
    """One function for the user's mapping: records the writes of a message; False when nothing maps it."""
    if not isinstance(on, Mapping):
        if not callable(on):
            raise ParamError(f"on= must be a function (message, writes) or a table {{event: target}}, not {on!r}")
        function = on

        def call(message: Message, writes: Writes) -> bool:
            function(message, writes)
            return True

        return call
    table = {event: _table_target(event, target) for event, target in on.items()}

    def lookup(message: Message, writes: Writes) -> bool:
        target = table.get(message.event)
        if target is None:
            return False
        target(message, writes)
        return True

    return lookup


def _table_target(event: str, target: Any) -> Handler:
    """The handler of one table row: endpoint -> set_response(data), schema -> set(data), function as is."""
    if not isinstance(event, str):
        raise ParamError(f"on= table keys are event types (str), not {event!r}")
    if _is_endpoint(target):
        return lambda message, writes: writes.set_response(target, message.data)
    if isinstance(target, type) or not callable(target):
        return lambda message, writes: writes.set(target, message.data)
    handler: Handler = target
    return handler
