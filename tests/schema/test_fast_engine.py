"""The generated fast path gives exactly what the general engine gives, on random (often odd) data.

Each example runs the same call twice, once through the generated functions and
once with them disabled, and compares the results, the written tables, the
errors (message and path) and the dependencies a read recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from restlayer.errors import SchemaError
from restlayer.graphql import GQLEntity
from restlayer.schema import INVALID, Entity, MemoCache, Values, _fast, normalize
from restlayer.schema._base import compile_schema
from restlayer.schema._denormalize import Unvisit, deps_valid, expand_deps
from restlayer.schema._fast import denormalize_with, dep_groups, groups_valid
from tests._present import present


@pytest.fixture(autouse=True, scope="module", params=["as run", "executor"])
def engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test here on the engine this run uses, then on the plan executor run from its Python
    source (so the compiled engine's logic is checked, and covered, without a compiler too)."""
    before = _fast.engine()
    if request.param == "executor":
        _fast.use_engine("executor")
    yield _fast.engine()
    _fast.use_engine(before)


META = {"fetched_at": 5, "date": 5, "expires_at": 100}
LATER = {"fetched_at": 9, "date": 9, "expires_at": 100}
OLDER = {"fetched_at": 1, "date": 1, "expires_at": 100}


class FUser(Entity):
    id: int = 0
    name: str = ""
    tags: list[str] = []
    flagged: bool = False


class FComment(Entity):
    id: int = 0
    body: str = ""
    author: FUser | None = None


class FPost(Entity):
    id: int = 0
    title: str = "untitled"
    author: FUser | None = None
    comments: list[FComment] = []
    extra: dict[str, Any] = {"editor": None}
    schema = {"author": FUser, "comments": [FComment], "extra": {"editor": FUser}, "title": "kept as is"}


class FCustom(Entity):
    """Overridden hooks: the fast path must hand these to the general engine."""

    id: int = 0
    label: str = ""

    @classmethod
    def process(cls, input: Any, parent: Any, key: str | None, args: tuple[Any, ...]) -> Any:
        return {**input, "label": str(input.get("label", "")).upper()}


class FCycle(Entity):
    """A record pointing at others of its own kind (cycles in the store)."""

    id: int = 0
    name: str = ""
    friend: FCycle | None = None
    owner: Any = "nobody"  # a truthy default: a deleted owner makes the record invalid


class FUserCard(Entity):
    """Shares FUser's table: reads through it must give FUserCard instances."""

    key = "FUser"
    id: int = 0
    name: str = "card"


class FGqlUser(GQLEntity):
    """A numeric id is stored as its text: on the fast path too, with the same records."""

    name: str = ""
    best_friend: FUser | None = None


FCycle.schema = {"friend": FCycle, "owner": FUser}
FComment.schema = {"author": FUser}

SCHEMAS: dict[str, Any] = {
    "posts": {"posts": [FPost], "custom": [FCustom], "by_name": Values(FUser)},
    "post": FPost,
    "list": [FPost],
    "cycle": [FCycle],
    "shared": {"users": [FUser], "cards": [FUserCard], "posts": [FPost]},
    "gql": [FGqlUser],
}

IDS = st.one_of(
    st.integers(min_value=0, max_value=4),
    st.sampled_from(["1", "2", "", "undefined", "x"]),
    st.sampled_from([None, True, 1.5]),
)
WEIRD = st.one_of(st.none(), st.integers(0, 3), st.text("ab", max_size=2), st.lists(st.integers(0, 2), max_size=2))


def record(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """A dict with an id and some of `fields` (often one of them absent), sometimes a weird value."""
    good = st.fixed_dictionaries({"id": st.integers(min_value=0, max_value=4)}, optional=fields)
    odd = st.fixed_dictionaries({}, optional={"id": IDS, **fields})
    return st.one_of(good, good, good, good, good, good, good, good, odd, WEIRD)


user = record(
    {
        "name": st.text("ab", max_size=2),
        "tags": st.lists(st.text("t", max_size=1), max_size=2),
        "flagged": st.booleans(),
    }
)
comment = record({"body": st.text("c", max_size=2), "author": user})
post = record(
    {
        "title": st.text("p", max_size=2),
        "author": user,
        "comments": st.one_of(st.lists(comment, max_size=3), WEIRD),
        "extra": st.one_of(
            st.fixed_dictionaries({}, optional={"editor": user, "note": st.text("n", max_size=1)}), WEIRD
        ),
    }
)
cycle = st.recursive(
    record({"name": st.text("z", max_size=1), "owner": user}),
    lambda inner: record({"name": st.text("z", max_size=1), "friend": inner, "owner": user}),
    max_leaves=6,
)
custom = record({"label": st.text("l", max_size=2)})
gql_user = record({"name": st.text("g", max_size=1), "best_friend": user})

INPUTS: dict[str, st.SearchStrategy[Any]] = {
    "posts": st.fixed_dictionaries(
        {"posts": st.lists(post, max_size=4)},
        optional={
            "custom": st.lists(custom, max_size=2),
            "by_name": st.dictionaries(st.text("k", max_size=1), user, max_size=2),
        },
    ),
    "post": post,
    "list": st.one_of(st.lists(post, max_size=4), WEIRD),
    "cycle": st.lists(cycle, max_size=4),
    "shared": st.fixed_dictionaries(
        {},
        optional={
            "users": st.lists(user, max_size=3),
            "cards": st.lists(user, max_size=3),
            "posts": st.lists(post, max_size=2),
        },
    ),
    "gql": st.one_of(st.lists(gql_user, max_size=4), WEIRD),
}


def run(fn: Callable[[], Any]) -> tuple[str, Any]:
    """The outcome of `fn` as a comparable value: its result, or its error's type, text and path."""
    try:
        return "ok", fn()
    except SchemaError as exc:
        return "error", (type(exc).__name__, str(exc), exc.path)
    except RecursionError:
        return "too deep", None


def attempt(fn: Callable[[], Any]) -> tuple[str, Any]:
    """Like `run`, for calls that may fail with any error on odd input (compared by type)."""
    try:
        return "ok", fn()
    except Exception as exc:
        return "error", type(exc).__name__


def both(fn: Callable[[], Any]) -> tuple[tuple[str, Any], tuple[str, Any]]:
    fast = run(fn)
    with _fast.disabled():
        general = run(fn)
    return fast, general


def typed(value: Any) -> Any:
    """`value` with the exact type of every list and dict in it (frozen or not), for comparison."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(v) for v in value])
    if isinstance(value, Mapping):
        return (type(value).__name__, {k: typed(v) for k, v in value.items()})
    return value


def tables(result: Any) -> Any:
    """Everything a normalize wrote: result and records with their types, each table's insertion order."""
    entities = {
        key: (type(table).__name__, table.in_order(), {pk: typed(rec) for pk, rec in table.items()})
        for key, table in result.entities.items()
    }
    return typed(result.result), entities, result.indexes.to_dict(), result.entities_meta.to_dict()


def shape(value: Any, seen: dict[int, int] | None = None) -> Any:
    """A comparable, cycle-safe picture of a denormalized value (an entity seen before is a back-reference)."""
    seen = {} if seen is None else seen
    if value is INVALID:
        return "<INVALID>"
    if isinstance(value, Entity):
        if id(value) in seen:
            return ("ref", seen[id(value)])
        seen[id(value)] = len(seen)
        return (type(value).__name__, {k: shape(v, seen) for k, v in value.__dict__.items()})
    if isinstance(value, list):
        return (type(value).__name__, [shape(v, seen) for v in value])
    if isinstance(value, Mapping):
        return (type(value).__name__, {k: shape(v, seen) for k, v in value.items()})
    return value


def read_untracked(node: Any, input: Any, entities: Any) -> Any:
    """What `denormalize()` reads: the variant that records no dependencies."""
    return shape(denormalize_with(Unvisit(entities), node, input, tracked=False))


def read(node: Any, input: Any, entities: Any, fast: bool) -> tuple[Any, list[Any]]:
    unvisit = Unvisit(entities)
    value = denormalize_with(unvisit, node, input) if fast else unvisit(node, input)
    return shape(value), [(k, pk, id(t), id(r)) for k, pk, t, r in expand_deps(unvisit.deps)]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=150)
@given(data=st.data())
def test_fast_normalize_matches_the_general_engine(name: str, data: st.DataObject) -> None:
    schema = SCHEMAS[name]
    first = data.draw(INPUTS[name], label="first")
    second = data.draw(INPUTS[name], label="second")
    fast, general = both(lambda: tables(normalize(schema, first, meta=META)))
    assert fast == general
    base = run(lambda: normalize(schema, first, meta=META))
    state = base[1] if base[0] == "ok" else None
    for meta in (LATER, OLDER):
        fast, general = both(partial(lambda m: tables(normalize(schema, second, state=state, meta=m)), meta))
        assert fast == general


CLEAN_USER = st.fixed_dictionaries(
    {"id": st.integers(min_value=0, max_value=4)},
    optional={"name": st.text("ab", max_size=2), "flagged": st.booleans()},
)
CLEAN_POST = st.fixed_dictionaries(
    {"id": st.integers(min_value=0, max_value=3)},
    optional={
        "title": st.text("p", max_size=2),
        "author": CLEAN_USER,
        "comments": st.lists(
            st.fixed_dictionaries({"id": st.integers(0, 3)}, optional={"author": CLEAN_USER}), max_size=2
        ),
    },
)


@settings(max_examples=150)
@given(first=st.lists(CLEAN_POST, max_size=4), second=st.lists(CLEAN_POST, max_size=4))
def test_fast_merge_into_a_stored_record_matches_the_general_engine(first: list[Any], second: list[Any]) -> None:
    state = normalize([FPost], first, meta=META)
    for meta in (LATER, OLDER, META):
        fast, general = both(partial(lambda m: tables(normalize([FPost], second, state=state, meta=m)), meta))
        assert fast == general


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=150)
@given(data=st.data())
def test_fast_denormalize_matches_the_general_engine(name: str, data: st.DataObject) -> None:
    schema = SCHEMAS[name]
    raw = data.draw(INPUTS[name])
    node = compile_schema(schema)
    # A response denormalized on its own (what a fetch returns): entities given inline.
    general = attempt(lambda: read(node, raw, {}, False))
    assert attempt(lambda: read(node, raw, {}, True)) == general
    assert attempt(lambda: read_untracked(node, raw, {})) == (
        general[0],
        general[1] if general[0] == "error" else general[1][0],
    )
    outcome = run(lambda: normalize(schema, raw, meta=META))
    if outcome[0] != "ok":
        return
    stored = outcome[1]
    entities = stored.entities
    deletions = data.draw(st.lists(st.sampled_from(sorted(entities)), max_size=3)) if entities else []
    for key in deletions:  # some records replaced by the deletion marker
        pks = sorted(entities[key])
        entities = entities.set(key, entities[key].set(data.draw(st.sampled_from(pks)), INVALID))
    general = read(node, stored.result, entities, False)
    assert read(node, stored.result, entities, True) == general
    assert read_untracked(node, stored.result, entities) == general[0]


@settings(max_examples=100)
@given(data=st.data())
def test_memo_cache_reads_match_with_and_without_the_fast_path(data: st.DataObject) -> None:
    inputs = [data.draw(INPUTS["posts"]) for _ in range(3)]
    outcomes: list[list[Any]] = []
    for use_fast in (True, False):
        memo, state, seen = MemoCache(), normalize(SCHEMAS["posts"], {"posts": []}), []
        for value in inputs:
            try:
                state = normalize(SCHEMAS["posts"], value, state=state, meta=LATER)
            except SchemaError:
                continue  # both passes skip it (normalize equality is checked above)
            if use_fast:
                got = memo.denormalize(SCHEMAS["posts"], state.result, state.entities)
            else:
                with _fast.disabled():
                    got = memo.denormalize(SCHEMAS["posts"], state.result, state.entities)
            seen.append(shape(got))
        outcomes.append(seen)
    assert outcomes[0] == outcomes[1]


@settings(max_examples=200)
@given(
    deps=st.lists(
        st.tuples(st.sampled_from("ab"), st.sampled_from("123"), st.integers(0, 2), st.integers(0, 3)), max_size=8
    ),
    now=st.dictionaries(st.sampled_from("abc"), st.integers(0, 2)),
)
def test_grouped_dependency_check_agrees_with_the_plain_check(deps: list[Any], now: dict[str, int]) -> None:
    records = [{"v": i} for i in range(3)] + [None]
    table_versions = [{pk: records[(int(pk) + v) % 4] for pk in "123"} for v in range(3)]
    recorded = [(key, pk, table_versions[t], records[r]) for key, pk, t, r in deps]
    entities = {key: table_versions[v] for key, v in now.items()}
    assert groups_valid(entities, dep_groups(recorded)) == deps_valid(entities, recorded)


def test_fast_path_is_used_for_plain_entities_and_not_for_custom_hooks() -> None:
    assert _fast.normalizer(compile_schema([FPost])) is not None
    assert _fast.normalizer(FGqlUser) is not None  # GQLEntity's text ids need no hook
    assert _fast.normalizer(FCustom) is None
    assert _fast.denormalizer(FPost) is not None


def test_plan_is_rebuilt_when_a_nested_schema_is_reassigned() -> None:
    class Tag(Entity):
        id: int = 0

    class Box(Entity):
        id: int = 0
        tag: Tag | None = None
        schema = {"tag": Tag}

    out = normalize(Box, {"id": 1, "tag": {"id": 7}})
    assert out.entities["Box"]["1"]["tag"] == "7"
    Box.schema = {}
    out = normalize(Box, {"id": 1, "tag": {"id": 7}})
    assert out.entities["Box"]["1"]["tag"] == {"id": 7}


def test_a_chain_deeper_than_the_recursion_limit_gives_what_the_general_engine_gives() -> None:
    import sys

    depth = sys.getrecursionlimit() + 200  # too deep for the generated functions: they hand over
    head: dict[str, Any] = {"id": 0}
    node = head
    for i in range(1, depth):
        node["friend"] = {"id": i}
        node = node["friend"]
    fast = run(lambda: tables(normalize([FCycle], [head], meta=META)))
    with _fast.disabled():
        general = run(lambda: tables(normalize([FCycle], [head], meta=META)))
    assert fast == general
    rows = {str(i): {"id": i, "friend": str(i + 1) if i + 1 < depth else None} for i in range(depth)}
    entities = {"FCycle": rows}
    fast_read = run(lambda: read(FCycle, "0", entities, True)[1])
    general_read = run(lambda: read(FCycle, "0", entities, False)[1])
    assert fast_read == general_read
    assert run(lambda: read_untracked(FCycle, "0", entities)) == run(lambda: read(FCycle, "0", entities, False)[0])


def test_deep_data_is_deferred_in_the_same_order_as_the_general_engine() -> None:
    """Chains deeper than the engine's depth guard (but within the recursion limit): same store order, same deps."""
    depth = 150
    head: dict[str, Any] = {"id": 0, "owner": {"id": 0}}
    node = head
    for i in range(1, depth):
        node["friend"] = {"id": i, "owner": {"id": i % 5}, "name": ["n", str(i)]}
        node = node["friend"]
    fast, general = both(lambda: tables(normalize([FCycle], [head, None, {"id": 3}], meta=META)))
    assert fast == general
    stored = normalize([FCycle], [head], meta=META)
    fast_read = read(compile_schema([FCycle]), stored.result, stored.entities, True)
    assert fast_read == read(compile_schema([FCycle]), stored.result, stored.entities, False)
    assert read_untracked(compile_schema([FCycle]), stored.result, stored.entities) == fast_read[0]
    for fast_pass in (True, False):  # a memoized re-read after an unrelated change, both ways
        memo = MemoCache()
        first = memo.denormalize_detail([FCycle], stored.result, stored.entities)
        changed = stored.entities.set("FUser", stored.entities["FUser"].set("9", {"id": 9}))
        if fast_pass:
            again = memo.denormalize_detail([FCycle], stored.result, changed)
        else:
            with _fast.disabled():
                again = memo.denormalize_detail([FCycle], stored.result, changed)
        assert again.data is first.data


def test_an_untracked_read_shares_its_instances_with_the_general_engine_both_ways() -> None:
    """Entities the general engine reads (through Values) before and after the plans do are the same instances."""
    schema = {"a": Values(FUser), "b": [FUser], "c": [FPost], "d": Values(FPost)}
    reply = {
        "a": {"x": {"id": 1, "name": "u"}},
        "b": [{"id": 1}, {"id": 2}],
        "c": [{"id": 5, "author": {"id": 1}, "comments": [{"id": 1, "author": {"id": 2}}]}],
        "d": {"k": {"id": 5}},
    }
    stored = normalize(schema, reply, meta=META)
    node = compile_schema(schema)
    value: Any = denormalize_with(Unvisit(stored.entities), node, stored.result, tracked=False)
    assert value["a"]["x"] is value["b"][0] is value["c"][0].author
    assert value["d"]["k"] is value["c"][0] and value["c"][0].comments[0].author is value["b"][1]
    assert read_untracked(node, stored.result, stored.entities) == read(node, stored.result, stored.entities, False)[0]


class FreshRecords(Mapping[str, object]):
    """A table that hands out a new copy of a record on every lookup (not a dict or a PMap)."""

    def __init__(self, rows: Mapping[str, Any]) -> None:
        self.rows = rows

    def __getitem__(self, pk: str) -> object:
        return dict(self.rows[pk])

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def test_an_untracked_read_of_other_mappings_gives_what_the_general_engine_gives() -> None:
    user = {"id": 7}
    reply = [{"id": 1, "author": user, "comments": [{"id": 2, "author": user}]}, {"id": 3, "author": user}]
    stored = normalize([FPost], reply, meta=META)
    node = compile_schema([FPost])
    fresh = {key: FreshRecords(table) for key, table in stored.entities.items()}
    for entities in (fresh, FreshRecords({key: dict(table) for key, table in stored.entities.items()})):
        general = read(node, stored.result, entities, False)[0]
        assert read_untracked(node, stored.result, entities) == general
        assert read_untracked(FPost, "1", entities) == read(FPost, "1", entities, False)[0]


def test_two_classes_sharing_a_key_read_their_own_instances_on_the_fast_path() -> None:
    stored = normalize({"users": [FUser], "cards": [FUserCard]}, {"users": [{"id": 1, "name": "a"}]})
    memo = MemoCache()
    users = present(memo.denormalize([FUser], ["1"], stored.entities))
    cards = present(memo.denormalize([FUserCard], ["1"], stored.entities))
    assert [type(u) for u in users] == [FUser] and [type(c) for c in cards] == [FUserCard]
    assert cards[0].name == "a"


def test_the_fast_path_stores_frozen_copies_and_keeps_none_items() -> None:
    tags = ["a"]
    reply: list[Any] = [{"id": 1, "tags": tags, "extra": {"k": [1]}}, None]
    stored = normalize([FUser], reply)
    assert stored.result == ["1", None] and type(stored.result).__name__ == "FrozenList"
    record = stored.entities["FUser"]["1"]
    assert type(record["tags"]).__name__ == "FrozenList"
    assert type(record["extra"]["k"]).__name__ == "FrozenList"
    tags.append("b")
    assert record["tags"] == ["a"]
    read = denormalize_with(Unvisit(stored.entities), compile_schema([FUser]), ["1", None, "404"])
    assert isinstance(read, list) and read[1:] == [None]
