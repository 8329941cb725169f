"""`GQLNetworkError` lives with the other errors in `restlayer.errors`; re-exported here."""

from __future__ import annotations

from restlayer.errors import GQLNetworkError

__all__ = ["GQLNetworkError"]
