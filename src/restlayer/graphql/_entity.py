"""`GQLEntity`: an Entity keyed by a GraphQL `ID` (always a string)."""

from __future__ import annotations

from restlayer.schema import Entity

__all__ = ["GQLEntity"]


class GQLEntity(Entity):
    """An Entity with `id: str = ""`; its pk is the `id` GraphQL returns."""

    id: str = ""
    #: A numeric `id` (a server serializing its IDs as numbers, or a REST member's reply) is stored as
    #: its text: the field is typed `str`, and the same entity is then one value whichever reply named it.
    #: Applied after `process` (an override need not call this class's), outside the hook so that
    #: such classes keep the fast normalize path.
    _text_id = True
