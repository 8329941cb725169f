"""Mistakes in declaring schemas, and in-place changes of stored data, raise restlayer's own errors."""

from __future__ import annotations

import pytest

from restlayer import DefinitionError, Entity, ParamError, ReadOnlyError, RestLayerError, Union, normalize
from restlayer.schema import Array, Invalidate, Query
from restlayer.schema._frozen import freeze


class Todo(Entity):
    id: int = 0
    title: str = ""


def test_a_union_member_that_is_no_entity_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="must be an Entity class") as info:
        Union({"todo": Todo, "bad": Array(Todo)}, schema_attribute="type")  # type: ignore[dict-item]
    assert isinstance(info.value, RestLayerError) and isinstance(info.value, TypeError)


def test_invalidate_of_a_list_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="Invalidate holds"):
        Invalidate([Todo])  # type: ignore[call-overload]


def test_a_query_process_that_cannot_be_called_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="process must be callable"):
        Query(Todo, 5)  # type: ignore[call-overload]


def test_an_entity_without_a_key_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="key must be a non-empty string"):

        class Nameless(Entity):
            key = ""
            id: int = 0


def test_a_misspelt_constructor_keyword_is_a_param_error() -> None:
    with pytest.raises(ParamError, match="unexpected keyword argument 'titel'"):
        Todo(titel="x")  # type: ignore[call-arg]


def test_changing_stored_data_in_place_is_a_read_only_error() -> None:
    stored = freeze([1, 2])
    with pytest.raises(ReadOnlyError, match="read-only"):
        stored.append(3)  # type: ignore[attr-defined]
    assert list(stored) == [1, 2]  # type: ignore[call-overload]


def test_normalize_still_works_after_the_refusals() -> None:
    result = normalize(Todo, {"id": 1, "title": "a"})
    assert result.entities["Todo"]["1"]["title"] == "a"
