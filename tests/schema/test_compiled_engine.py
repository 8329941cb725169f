"""What only the compiled engine does differently (results are the same: see test_fast_engine.py).

These run in `dev.py test`'s second pass (`pytest --engine=compiled`) and skip on the pure engine.
"""

from __future__ import annotations

import pytest

from restlayer.schema import Entity, MemoCache, _fast, denormalize, normalize
from tests._present import present

pytestmark = pytest.mark.skipif(_fast.engine() != "compiled", reason="the compiled engine is not running")


class Leaf(Entity):
    id: str = ""
    name: str = ""
    key = "CompiledLeaf"


def test_an_instance_shares_the_dict_of_a_stored_record_with_exactly_its_fields() -> None:
    state = normalize([Leaf], [{"id": "1", "name": "a"}, {"name": "b", "id": "2"}, {"id": "3"}])
    for read in (
        present(denormalize([Leaf], state.result, state.entities)),
        present(MemoCache().denormalize([Leaf], state.result, state.entities)),
    ):
        table = state.entities["CompiledLeaf"]
        assert vars(read[0]) is table["1"]  # same fields, same order: one dict for both
        assert vars(read[1]) is not table["2"] and list(vars(read[1])) == ["id", "name"]  # fields in class order
        assert vars(read[2]) == {"id": "3", "name": ""}  # a default filled in: its own dict
        with pytest.raises(AttributeError, match="immutable"):
            read[0].name = "changed"  # type: ignore[misc]
    assert table["1"] == {"id": "1", "name": "a"}


def test_an_entity_given_inline_never_shares_the_callers_dict() -> None:
    given = {"id": "1", "name": "a"}
    obj = denormalize(Leaf, given, {})
    assert obj == Leaf(id="1", name="a") and vars(obj) is not given
