"""Patch: JSON validation of announced changes and the merge rule (later-started request wins, in any order)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from restlayer.core import Patch
from restlayer.core._patch import merge_patch
from restlayer.core._state import EMPTY_STATE, State
from restlayer.schema import INVALID
from tests._present import record


def meta(fetched_at: float) -> dict[str, float]:
    return {"fetched_at": fetched_at, "date": fetched_at + 1, "expires_at": fetched_at + 60_000}


def row(title: str, fetched_at: float, pk: str = "1") -> Any:
    return ("Todo", pk, {"id": int(pk), "title": title}, meta(fetched_at))


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"e": "rows"},
        {"e": [["Todo", "1", {"id": 1}]]},
        {"e": [["Todo", 1, {"id": 1}, meta(1)]]},
        {"e": [["Todo", "1", "a string", meta(1)]]},
        {"e": [["Todo", "1", {"id": 1}, {"fetched_at": "soon", "date": 1, "expires_at": 2}]]},
        {"e": [["Todo", "1", {"id": 1}, {"fetched_at": True, "date": 1, "expires_at": 2}]]},
        {"e": [["Todo", "1", {"id": 1}, {"fetched_at": float("inf"), "date": 1, "expires_at": 2}]]},
        {"r": [["key", "1", {"fetched_at": 1, "date": float("-inf"), "expires_at": 2}]]},
        {"r": [["key", "1"]]},
        {"i": [["Todo", "slug", "a", 3]]},
        {"x": [1]},
    ],
)
def test_malformed_patches_are_refused_with_a_reason(data: Any) -> None:
    with pytest.raises(ValueError, match=r"\w"):
        Patch.from_json(data)


def test_a_patch_survives_a_json_round_trip() -> None:
    patch = Patch(
        entities=(row("a", 5), ("Todo", "2", None, meta(6)), ("[Todo]", "{}", ["1"], meta(6))),
        endpoints=(("GET /todos/1", "1", meta(5)),),
        indexes=(("User", "username", "bret", "1"), ("User", "username", "old", None)),
        invalidated=("k1",),
        expired=("k2",),
        released=("k3",),
    )
    assert Patch.from_json(json.loads(json.dumps(patch.to_json()))) == patch


def test_rows_from_two_writers_converge_whatever_the_arrival_order() -> None:
    patches = [
        Patch(entities=(row("first", 10),)),
        Patch(entities=(row("second", 30),)),
        Patch(entities=(row("third", 20),)),
    ]
    finals = set()
    for order in itertools.permutations(patches):
        state = EMPTY_STATE
        for patch in order:
            state = merge_patch(state, patch)
        finals.add(record(state, "Todo", "1")["title"])
    assert finals == {"second"}


def test_an_older_row_never_replaces_a_newer_one_and_a_tie_takes_the_later_write() -> None:
    state = merge_patch(EMPTY_STATE, Patch(entities=(row("new", 20),)))
    assert merge_patch(state, Patch(entities=(row("old", 10),))) is state
    assert record(merge_patch(state, Patch(entities=(row("tie", 20),))), "Todo", "1")["title"] == "tie"


def test_an_unchanged_row_keeps_the_very_same_state() -> None:
    state = merge_patch(EMPTY_STATE, Patch(entities=(row("same", 5),), endpoints=(("k", "1", meta(5)),)))
    assert merge_patch(state, Patch(entities=(row("same", 5),), endpoints=(("k", "1", meta(5)),))) is state


def test_deletes_indexes_invalidation_and_expiry_apply() -> None:
    state: State = merge_patch(
        EMPTY_STATE,
        Patch(
            entities=(row("x", 5),),
            endpoints=(("a", "1", meta(5)), ("b", "1", meta(5))),
            indexes=(("Todo", "title", "x", "1"),),
        ),
    )
    state = merge_patch(
        state,
        Patch(
            entities=(("Todo", "1", None, meta(6)),),
            invalidated=("a",),
            expired=("b",),
            indexes=(("Todo", "title", "x", None),),
        ),
    )
    assert state.entities["Todo"]["1"] is INVALID
    assert state.indexes["Todo"]["title"]["x"] is INVALID
    assert "a" not in state.endpoints and state.meta["a"]["invalidated"] is True
    assert state.meta["b"]["expires_at"] == 1 and state.endpoints["b"] == "1"
