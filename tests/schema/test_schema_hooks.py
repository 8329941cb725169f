"""Schema types answer for themselves: readers ask the schema, never switch over its class."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Mapping

import pytest

from restlayer.core._read import deletes, has_entities
from restlayer.errors import SchemaError
from restlayer.schema import (
    INVALID,
    All,
    Array,
    Collection,
    Entity,
    Invalidate,
    MemoCache,
    Query,
    Schema,
    Union,
    Values,
    denormalize,
    normalize,
)
from restlayer.schema._base import InvalidType
from restlayer.schema._denormalize import Unvisit
from restlayer.schema._normalize import Normalizer

from ._models import Group, Todo, User


class Passthrough(Schema[object]):
    """A user schema type that keeps data as is: its reads never need the entity tables."""

    def normalize_value(self, value: object, parent: object, key: str | None, ctx: Normalizer) -> object:
        return value

    def denormalize_value(self, value: object, unvisit: Unvisit) -> object:
        return value

    def has_entities(self) -> bool:
        return False


class Tombstone(Passthrough):
    """A user schema type that deletes entities (as `Invalidate` does)."""

    def deletes_entities(self) -> bool:
        return True


def test_a_new_schema_type_says_whether_its_reads_need_entities() -> None:
    assert has_entities(Passthrough()) is False
    assert has_entities({"page": Passthrough()}) is False  # a dict asks its members
    assert has_entities([Passthrough()]) is False
    assert has_entities(Values(Passthrough())) is False
    assert has_entities(Query(Passthrough())) is False
    assert has_entities({"page": Passthrough(), "todo": Todo}) is True


def test_a_new_schema_type_says_whether_it_deletes() -> None:
    assert deletes(Tombstone()) is True
    assert deletes({"gone": [Tombstone()]}) is True  # found inside containers
    assert deletes(Query(Tombstone())) is True
    assert deletes(Passthrough()) is False


@pytest.mark.parametrize(
    ("schema", "needs_entities", "deleting"),
    [
        (None, False, False),
        ({"count": None}, False, False),
        (Todo, True, False),
        ([Todo], True, False),
        (Collection([Todo]), True, False),
        (All(Todo), True, False),
        (Union({"users": User, "groups": Group}, "type"), True, False),
        (Invalidate(Todo), True, True),
        ({"deleted": Invalidate(Todo)}, True, True),
        (Array(Invalidate(Todo)), True, True),
        (Collection([Todo]).push, True, False),
    ],
)
def test_built_in_schemas_answer_as_before(schema: object, needs_entities: bool, deleting: bool) -> None:
    assert has_entities(schema) is needs_entities
    assert deletes(schema) is deleting


class Shouting(Entity):
    """An entity that changes how its instances are built (an overridden build step)."""

    id: str = ""
    name: str = ""

    @classmethod
    def finish_build(
        cls, obj: Shouting | None, record: Mapping[str, object], unvisit: Unvisit, strict: bool = True
    ) -> Shouting | InvalidType:
        return super().finish_build(obj, {**record, "name": str(record.get("name", "")).upper()}, unvisit, strict)


def test_an_entity_builds_its_own_instances_for_every_reader() -> None:
    stored = normalize(Shouting, {"id": "1", "name": "quiet"})
    assert denormalize(Shouting, "1", stored.entities) == Shouting(id="1", name="QUIET")
    assert MemoCache().denormalize([Shouting], ["1"], stored.entities) == [Shouting(id="1", name="QUIET")]


class Chain(Entity):
    """Nested through its annotation only (no `schema`), and checked by `validate` (the general engine)."""

    id: str = ""
    child: Chain | None = None

    @classmethod
    def validate(cls, processed: Mapping[str, object]) -> str | None:
        return None if "id" in processed else "no id"


def test_deep_annotation_nested_data_reads_without_recursion_error() -> None:
    data: dict[str, object] = {"id": "0"}
    tip = data
    for i in range(1, 3000):  # far deeper than Python's recursion limit
        tip["child"] = tip = {"id": str(i)}
    stored = normalize(Chain, data)
    for read in (denormalize(Chain, "0", stored.entities), MemoCache().denormalize(Chain, "0", stored.entities)):
        depth = 0
        while read is not None:
            depth += 1
            read = read.child
        assert depth == 3000


def test_union_members_must_be_entities() -> None:
    with pytest.raises(TypeError, match="Union member 'pages' must be an Entity class"):
        Union({"users": User, "pages": [User]}, "type")  # type: ignore[dict-item]


def test_invalidate_and_query_need_a_schema() -> None:
    with pytest.raises(TypeError, match="Invalidate holds an Entity class or a Union"):
        Invalidate(Array(Todo))
    with pytest.raises(TypeError, match="Query needs a schema"):
        Query(None)  # type: ignore[call-overload]


def test_moving_between_lists_of_non_entities_is_a_schema_error() -> None:
    """A Union collection's items move (see test_collection); plain objects have no stored record to move."""
    rows = Collection([{"user": User}])
    with pytest.raises(SchemaError, match="A move needs a Collection of an Entity type or a Union"):
        normalize(rows.move, {"user": {"id": "1"}}, args=[{"id": "1"}, {"team": "a"}])


class Dropped(Entity):
    """An entity whose `process` deletes every record it is given."""

    id: str = ""
    team: str = ""

    @classmethod
    def process(
        cls, input: Mapping[str, object], parent: object, key: str | None, args: tuple[object, ...]
    ) -> Mapping[str, object] | None:
        return None


def test_moving_an_item_that_process_deletes_is_a_schema_error() -> None:
    teams = Collection([Dropped])
    with pytest.raises(SchemaError, match=r"Dropped.process\(\) returned None for a moved item"):
        normalize(teams.move, {"id": "1", "team": "b"}, args=[{"id": "1"}, {"team": "b"}])


def test_invalid_marker_is_falsy_named_and_one_object_everywhere() -> None:
    assert not INVALID
    assert repr(INVALID) == str(INVALID) == "INVALID"
    assert copy.copy(INVALID) is INVALID
    assert copy.deepcopy(INVALID) is INVALID
    assert pickle.loads(pickle.dumps(INVALID)) is INVALID
