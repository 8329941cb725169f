"""`GQLNetworkError`: a GraphQL reply carrying an `errors` list (or an HTTP failure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from restlayer.errors import NetworkError

if TYPE_CHECKING:
    import httpx

__all__ = ["GQLNetworkError"]


def _first_message(errors: Sequence[Any]) -> str:
    """The message of the first error (what the JS original puts in `message`)."""
    if not errors:
        return "GraphQL request failed"
    first = errors[0]
    if isinstance(first, dict):
        message = first.get("message")
        if message is not None:
            return str(message)
    return str(first)


class GQLNetworkError(NetworkError):
    """A GraphQL failure: `.errors` is the server's list, `.data` any partial data.

    `.status` is 400 (as in the JS original), so the default error policy is hard.
    """

    def __init__(
        self,
        errors: Sequence[Any],
        *,
        data: Any = None,
        status: int = 400,
        response: httpx.Response | None = None,
    ) -> None:
        super().__init__(_first_message(errors), status=status, response=response)
        self.errors: list[Any] = list(errors)
        self.data: Any = data
