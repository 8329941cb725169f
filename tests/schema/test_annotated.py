"""Nested schemas derived from field annotations: `author: Person | None` nests without `schema = {...}`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from restlayer.schema import Entity, Values, denormalize, normalize
from tests._present import present


class Person(Entity):
    id: int = 0
    name: str = ""


class Admin(Entity):
    id: int = 0
    name: str = ""


class Note(Entity):
    """Annotations only: a forward reference (`Label`, defined below) and an optional entity."""

    id: int = 0
    author: Person | None = None
    labels: list[Label] = []
    tags: list[str] = []
    extra: dict[str, Any] = {}


class Label(Entity):
    id: int = 0
    text: str = ""


class Board(Entity):
    """Other spellings: Optional, Sequence, tuple[X, ...], dict[str, X]; `schema` overrides `owner`."""

    id: int = 0
    owner: Person | None = None
    lead: Optional[Person] = None  # noqa: UP045 - the spelling under test
    pinned: Sequence[Note] = ()
    archived: tuple[Note, ...] = ()
    by_name: dict[str, Person] = {}
    schema = {"owner": Admin}


NOTE = {
    "id": 1,
    "author": {"id": 7, "name": "Ann"},
    "labels": [{"id": 3, "text": "urgent"}],
    "tags": ["a"],
    "extra": {"author": {"id": 9}},
}


def test_entity_annotation_nests_without_a_schema_entry() -> None:
    out = normalize(Note, NOTE)
    assert out.entities["Person"]["7"]["name"] == "Ann"
    assert out.entities["Note"]["1"]["author"] == "7"


def test_list_of_a_forward_referenced_entity_nests_as_an_array() -> None:
    out = normalize(Note, NOTE)
    assert out.entities["Label"]["3"]["text"] == "urgent"
    assert list(out.entities["Note"]["1"]["labels"]) == ["3"]


def test_denormalized_nested_members_are_entity_instances() -> None:
    out = normalize(Note, NOTE)
    note = present(denormalize(Note, out.result, out.entities))
    assert isinstance(note.author, Person) and note.author.name == "Ann"
    assert [label.text for label in note.labels] == ["urgent"]


def test_plain_annotations_stay_plain_data() -> None:
    out = normalize(Note, NOTE)
    stored = out.entities["Note"]["1"]
    assert list(stored["tags"]) == ["a"]
    assert dict(stored["extra"]["author"]) == {"id": 9}
    assert "9" not in out.entities["Person"]


def test_a_missing_optional_entity_stays_none() -> None:
    out = normalize(Note, {"id": 2, "author": None})
    assert out.entities["Note"]["2"]["author"] is None
    assert "Person" not in out.entities


def test_other_spellings_and_explicit_schema_precedence() -> None:
    out = normalize(
        Board,
        {
            "id": 1,
            "owner": {"id": 5, "name": "boss"},
            "lead": {"id": 6, "name": "lead"},
            "pinned": [{"id": 11}],
            "archived": [{"id": 12}],
            "by_name": {"ann": {"id": 7, "name": "Ann"}},
        },
    )
    assert out.entities["Admin"]["5"]["name"] == "boss"  # schema = {"owner": Admin} wins over `Person`
    assert "5" not in out.entities["Person"]
    assert out.entities["Person"]["6"]["name"] == "lead"
    assert set(out.entities["Note"]) == {"11", "12"}
    assert out.entities["Person"]["7"]["name"] == "Ann"
    assert isinstance(Board.nested()["by_name"], Values)


def test_a_subclass_inherits_annotated_nesting() -> None:
    class PinnedNote(Note):
        pass

    out = normalize(PinnedNote, {"id": 4, "author": {"id": 8, "name": "Bo"}})
    assert out.entities["Person"]["8"]["name"] == "Bo"
