"""Entities shared by the GraphQL tests: GraphQL and REST shapes mapped onto one entity."""

from __future__ import annotations

from typing import Any

from restlayer.graphql import GQLEntity
from restlayer.schema import Entity


class User(GQLEntity):
    name: str = ""


class Todo(Entity):
    """A todo from REST (`userId`, int id) or GraphQL (`user { id }`, string ID)."""

    id: int = 0
    userId: int = 0
    title: str = ""
    completed: bool = False

    @classmethod
    def process(cls, input: Any, parent: Any, key: str | None, args: tuple[Any, ...]) -> Any:
        data = dict(input)
        if data.get("id") is not None:
            data["id"] = int(data["id"])
        user = data.pop("user", None)
        if isinstance(user, dict) and user.get("id") is not None:
            data["userId"] = int(user["id"])
        return data
