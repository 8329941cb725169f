"""A user's manager: `action.type` tells the kind of action, so its members are typed after the test."""

from __future__ import annotations

from typing_extensions import assert_type

from restlayer import Controller, Manager
from restlayer.core._actions import Action, Fetch, SetResponse  # what `Manager.middleware` is handed
from restlayer.core.manager import Next


class RefreshListsAfterWrites(Manager):
    """The managers guide's manager: `action.type == "set_response"` narrows `action`."""

    def middleware(self, controller: Controller, action: Action, next: Next) -> None:
        next(action)
        if action.type == "set_response" and not action.error and action.endpoint.side_effect:
            assert_type(action, SetResponse)
            controller.expire_all(lambda key: key.endswith("/todos"))


class Fixtures(Manager):
    def __init__(self, replies: dict[str, object]) -> None:
        self.replies = replies

    def middleware(self, controller: Controller, action: Action, next: Next) -> None:
        if action.type != "fetch" or action.key not in self.replies:
            return next(action)
        assert_type(action, Fetch)
        controller.resolve(action, value=self.replies[action.key])
