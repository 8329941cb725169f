"""`GQLEntity`: an Entity keyed by a GraphQL `ID` (always a string)."""

from __future__ import annotations

from restlayer.schema import Entity

__all__ = ["GQLEntity"]


class GQLEntity(Entity):
    """An Entity with `id: str = ""`; its pk is the `id` GraphQL returns."""

    id: str = ""
