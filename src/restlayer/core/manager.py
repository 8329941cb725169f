"""Managers: middleware over every action the controller dispatches (the extension point).

A manager subclasses `Manager` and overrides any of:

- `init(controller)`: called once when the controller is built;
- `middleware(controller, action, next)`: sees every action (`action.type` is
  `"fetch"`, `"set_response"`, `"set"`, `"invalidate"`, `"invalidate_all"`,
  `"expire_all"`, `"reset"`, `"subscribe"`, `"unsubscribe"`, `"gc"`); call
  `next(action)` to pass it on (the last `next` commits it to the store), or
  don't to swallow it;
- `cleanup()`: called by `Controller.close()`.

Managers run in the order given; an exception in one is logged and the action
continues down the chain.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from restlayer.errors import ParamError

if TYPE_CHECKING:
    from restlayer.core._actions import Action
    from restlayer.core.controller import Controller

log = logging.getLogger("restlayer")
Next = Callable[["Action"], None]


class Manager:
    """Base class of managers; every hook defaults to "do nothing, pass the action on"."""

    def init(self, controller: Controller) -> None:
        """Called once with the controller this manager serves."""

    def middleware(self, controller: Controller, action: Action, next: Next) -> None:
        """Handle `action`; call `next(action)` to let it reach the store."""
        next(action)

    def cleanup(self) -> None:
        """Release timers and tasks (the controller is closing)."""


def check_unattached(owner: object, serving: Controller | None, controller: Controller) -> None:
    """`ParamError` when `owner` (a manager or a GC policy) already serves another controller than `controller`.

    Its bookkeeping belongs to one store: shared, a second controller's fetches would join the
    first one's requests (whose replies only the first stores), or one store be swept by the
    references of both while the other is never swept. Refused even once that one is closed,
    as closing ended the manager's work for good.
    """
    if serving is not None and serving is not controller:
        name = type(owner).__name__
        raise ParamError(f"{name} already serves another Controller: give each Controller its own {name}")


def build_chain(controller: Controller, managers: Sequence[Manager], commit: Next) -> Next:
    """One callable running `action` through every manager, then `commit`."""
    chain = commit
    for manager in reversed(managers):
        chain = _link(controller, manager, chain)
    return chain


def _link(controller: Controller, manager: Manager, after: Next) -> Next:
    def step(action: Action) -> None:
        passed = False
        downstream: list[BaseException] = []

        def forward(a: Action) -> None:
            nonlocal passed
            passed = True
            try:
                after(a)
            except BaseException as exc:  # not the manager's fault: let it reach the caller
                downstream.append(exc)
                raise

        try:
            manager.middleware(controller, action, forward)
        except Exception as exc:
            if downstream and exc is downstream[-1]:
                raise
            log.exception("manager %s failed on %s", type(manager).__name__, action.type)
            if not passed:
                after(action)

    return step
