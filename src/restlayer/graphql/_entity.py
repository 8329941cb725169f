"""`GQLEntity`: an Entity keyed by a GraphQL `ID` (always a string)."""

from __future__ import annotations

from collections.abc import Mapping

from restlayer._text import to_text
from restlayer.schema import Entity

__all__ = ["GQLEntity"]


class GQLEntity(Entity):
    """An Entity with `id: str = ""`; its pk is the `id` GraphQL returns."""

    id: str = ""

    @classmethod
    def process(
        cls, input: Mapping[str, object], parent: object, key: str | None, args: tuple[object, ...]
    ) -> Mapping[str, object] | None:
        """The record with a numeric `id` (a server serializing its IDs as numbers, or a REST member's
        reply) turned into its text: the field is typed `str`, and the same entity is then one value
        whichever reply named it. A subclass overriding `process` calls this one to keep that."""
        processed = super().process(input, parent, key, args)
        if processed is None:
            return None
        ident = processed.get("id")
        if isinstance(ident, (int, float)) and not isinstance(ident, bool):
            return {**processed, "id": to_text(ident)}
        return processed
