"""MemoCache and referential stability."""

from __future__ import annotations

from typing import Any

import pytest

from restlayer.errors import RestLayerError
from restlayer.schema import All, Collection, Denormalized, Entity, MemoCache, Query, denormalize, normalize
from tests._present import present

from ._models import Todo, User, meta


def base() -> Any:
    """List of Todo 1 and 2 with authors u1, u2."""
    return normalize(
        [Todo],
        [
            {"id": 1, "title": "a", "author": {"id": "u1", "username": "one"}},
            {"id": 2, "title": "b", "author": {"id": "u2", "username": "two"}},
        ],
        meta=meta(1000),
    )


def test_same_inputs_same_object() -> None:
    """Check: two reads with the same inputs -> identical."""
    r = base()
    memo = MemoCache()
    first = memo.denormalize([Todo], r.result, r.entities)
    assert memo.denormalize([Todo], r.result, r.entities) is first
    assert first == [
        Todo(id=1, title="a", author=User.from_json({"id": "u1", "username": "one"})),
        Todo(id=2, title="b", author=User.from_json({"id": "u2", "username": "two"})),
    ]


def test_other_entity_keeps_result() -> None:
    """Check: store a new User u9 -> same list object."""
    r = base()
    memo = MemoCache()
    old = memo.denormalize([Todo], r.result, r.entities)
    r2 = normalize(User, {"id": "u9"}, state=r, meta=meta(2000))
    assert memo.denormalize([Todo], r.result, r2.entities) is old
    r3 = normalize(Todo, {"id": 3}, state=r2, meta=meta(2000))  # same type, other entity
    assert memo.denormalize([Todo], r.result, r3.entities) is old


def test_changed_item_new_list_others_kept() -> None:
    """Check: renormalize Todo 2 with a new title."""
    r = base()
    memo = MemoCache()
    old = present(memo.denormalize([Todo], r.result, r.entities))
    r2 = normalize(Todo, {"id": 2, "title": "B"}, state=r, meta=meta(2000))
    new = present(memo.denormalize([Todo], r.result, r2.entities))
    assert new is not old
    assert new[0] is old[0]
    assert new[1] is not old[1]
    assert new[1].author is old[1].author
    assert new[1].title == "B"


def test_changed_nested_entity_renews_embedders_only() -> None:
    """Check: renormalize User u1 -> new[0] is not old[0], new[1] is old[1]."""
    r = base()
    memo = MemoCache()
    old = present(memo.denormalize([Todo], r.result, r.entities))
    r2 = normalize(User, {"id": "u1", "username": "ONE"}, state=r, meta=meta(2000))
    new = present(memo.denormalize([Todo], r.result, r2.entities))
    assert new is not old
    assert new[0] is not old[0]
    assert new[1] is old[1]
    assert present(new[0].author).username == "ONE"


def test_identity_follows_record_not_equality() -> None:
    """Check: renormalize Todo 1 with identical data -> new[0] is not old[0]."""
    r = base()
    memo = MemoCache()
    old = present(memo.denormalize([Todo], r.result, r.entities))
    r2 = normalize(Todo, {"id": 1, "title": "a", "author": "u1"}, state=r, meta=meta(2000))
    new = present(memo.denormalize([Todo], r.result, r2.entities))
    assert new[0] is not old[0]
    assert new[0] == old[0]
    assert new[1] is old[1]


def test_forget_drops_the_read_of_that_container_only() -> None:
    """A forgotten input is read afresh: equal, a new list, the same instances (a pk's read too)."""
    r = base()
    memo = MemoCache()
    first = present(memo.denormalize([Todo], r.result, r.entities))
    one = present(memo.denormalize(Todo, "1", r.entities))
    memo.forget([Todo], list(r.result))  # an equal but other container: not the one read
    assert memo.denormalize([Todo], r.result, r.entities) is first
    memo.forget([Todo], r.result)
    memo.forget(Todo, "1")  # a pk's read is rebuilt from the instance cache: the same instance
    again = present(memo.denormalize([Todo], r.result, r.entities))
    assert again == first and again is not first
    assert again[0] is first[0] is one
    assert memo.denormalize(Todo, "1", r.entities) is one


def test_inputs_that_compare_equal_but_name_other_pks_are_read_apart() -> None:
    """1, 1.0 and True are equal in Python, but name the pks "1", "1.0" and "true"."""
    r = normalize([User], [{"id": "1", "username": "one"}, {"id": "1.0", "username": "float"}, {"id": "true"}])
    memo = MemoCache()
    names = [getattr(memo.denormalize(User, pk, r.entities), "username", None) for pk in (1, 1.0, True)]
    assert names == [present(denormalize(User, pk, r.entities)).username for pk in (1, 1.0, True)]
    assert names[:2] == ["one", "float"]


def test_entity_read_is_the_list_element() -> None:
    """Check: MemoCache().denormalize(Todo, "1", ...) is element 0 of the list read."""
    r = base()
    memo = MemoCache()
    lst = present(memo.denormalize([Todo], r.result, r.entities))
    assert present(memo.denormalize(Todo, "1", r.entities)) is lst[0]


def test_one_entity_through_two_schemas_is_one_instance() -> None:
    r = base()
    memo = MemoCache()
    a = present(memo.denormalize({"todos": [Todo]}, {"todos": ["1", "2"]}, r.entities))
    b = present(memo.denormalize(Collection([Todo]), ["1"], r.entities))
    c = present(memo.query(Todo, [{"id": 1}], r))
    assert a["todos"][0] is b[0] is c
    assert present(memo.denormalize(User, "u2", r.entities)) is a["todos"][1].author


def test_new_input_object_equal_content() -> None:
    r = base()
    memo = MemoCache()
    first = present(memo.denormalize([Todo], ["1", "2"], r.entities))
    second = present(memo.denormalize([Todo], ["1", "2"], r.entities))
    assert second is not first
    assert second == first
    assert second[0] is first[0] and second[1] is first[1]


def test_plain_denormalize_builds_new_objects() -> None:
    r = base()
    a = present(denormalize([Todo], r.result, r.entities))
    b = present(denormalize([Todo], r.result, r.entities))
    assert a == b
    assert a is not b and a[0] is not b[0]


def test_args_part_of_cache_key() -> None:
    r = base()
    memo = MemoCache()
    a = present(memo.denormalize([Todo], r.result, r.entities, [1]))
    assert memo.denormalize([Todo], r.result, r.entities, [1]) is a
    b = present(memo.denormalize([Todo], r.result, r.entities, [2]))
    assert b is not a
    assert b[0] is a[0]


def test_query_all_cached_per_schema_object() -> None:
    r = base()
    memo = MemoCache()
    q = All(Todo)
    first = present(memo.query(q, [], r))
    assert memo.query(q, [], r) is first
    assert memo.query(All(Todo), [], r) is not first
    r2 = normalize(User, {"id": "u9"}, state=r)
    assert memo.query(q, [], r2) is first
    r3 = normalize(Todo, {"id": 3}, state=r2)
    third = present(memo.query(q, [], r3))
    assert third is not first and len(third) == 3


def test_denormalize_detail() -> None:
    r = base()
    memo = MemoCache()
    detail = memo.denormalize_detail([Todo], r.result, r.entities)
    assert isinstance(detail, Denormalized)
    assert detail.invalid is False
    assert detail.found is True
    assert detail.data is memo.denormalize([Todo], r.result, r.entities)
    assert set(detail.refs) == {("Todo", "1"), ("Todo", "2"), ("User", "u1"), ("User", "u2")}
    missing = memo.denormalize_detail(Todo, "9", r.entities)
    assert missing.data is None and missing.invalid is False
    assert ("Todo", "9") in missing.refs


def test_invalid_result_cached_and_refreshed() -> None:
    class V(Entity):
        id: int = 0
        name: str = ""

        @classmethod
        def validate(cls, processed: Any) -> str | None:
            return None if processed.get("name") else "no name"

    entities: Any = normalize(V, {"id": 1, "name": "x"}).entities
    memo = MemoCache()
    assert memo.denormalize(V, "1", entities) == V(id=1, name="x")
    bad = entities.set("V", entities["V"].set("1", {"id": 1}))
    d = memo.denormalize_detail(V, "1", bad)
    assert d.invalid is True and d.data is None


def test_clear_and_prune() -> None:
    r = base()
    memo = MemoCache()
    first = present(memo.denormalize([Todo], r.result, r.entities))
    memo.prune(r.entities)
    second = present(memo.denormalize([Todo], r.result, r.entities))
    assert second[0] is first[0]
    memo.clear()
    third = present(memo.denormalize([Todo], r.result, r.entities))
    assert third == first and third[0] is not first[0]


def _todo_and_user_store() -> Any:
    r = normalize([Todo], [{"id": 1, "title": "t"}])
    return normalize([User], [{"id": 1, "name": "u"}], state=r)


def test_memo_never_confuses_inline_schemas_whose_address_is_reused() -> None:
    """A freed inline schema's id() may be reused by the next one: results stay per schema object."""
    r = _todo_and_user_store()
    memo = MemoCache()
    for _ in range(50):
        assert [type(x) for x in present(memo.query(All(Todo), [], r))] == [Todo]
        assert [type(x) for x in present(memo.query(All(User), [], r))] == [User]
        assert [type(x) for x in present(memo.query(Query(All(Todo)), [], r))] == [Todo]
        assert [type(x) for x in present(memo.query(Query(All(User)), [], r))] == [User]


def test_memo_never_confuses_inline_collections_whose_address_is_reused() -> None:
    r = normalize(Collection([Todo]), [{"id": 1}], [{"x": "1"}])
    r = normalize(Collection([User]), [{"id": 1}], [{"x": "1"}], state=r)
    memo = MemoCache()
    for _ in range(50):
        assert [type(x) for x in present(memo.query(Collection([Todo]), [{"x": "1"}], r))] == [Todo]
        assert [type(x) for x in present(memo.query(Collection([User]), [{"x": "1"}], r))] == [User]


class ArticleAuthor(Entity):
    id: int = 0
    name: str = ""


class ArticleSummary(Entity):
    id: int = 0
    title: str = ""
    key = "Article"


class Article(Entity):
    id: int = 0
    title: str = ""
    body: str = ""
    author: Any = None
    key = "Article"
    schema = {"author": ArticleAuthor}

    @classmethod
    def validate(cls, processed: Any) -> str | None:
        return None if "body" in processed else "a full article has a body"


def test_two_classes_sharing_a_key_each_read_their_own_instances() -> None:
    """Summary/detail pattern: reading through Article never returns an ArticleSummary (nor the reverse)."""
    r = normalize(Article, {"id": 1, "title": "t", "body": "b", "author": {"id": 7, "name": "ann"}})
    memo = MemoCache()
    summary: Any = memo.denormalize(ArticleSummary, "1", r.entities)
    article = memo.denormalize(Article, "1", r.entities)
    assert summary.author == "7"  # no nested schema on the summary: the stored pk
    assert type(summary) is ArticleSummary
    assert type(article) is Article
    assert article.author == ArticleAuthor(id=7, name="ann")
    assert type(memo.denormalize(ArticleSummary, "1", r.entities)) is ArticleSummary
    assert memo.denormalize([Article], ["1"], r.entities) == [article]


def test_shared_key_class_runs_its_own_validate() -> None:
    r = normalize(ArticleSummary, {"id": 2, "title": "only a summary"})
    memo = MemoCache()
    assert type(memo.denormalize(ArticleSummary, "2", r.entities)) is ArticleSummary
    assert memo.denormalize(Article, "2", r.entities) is None  # the summary lacks a body: invalid as an Article


class _Flaky:
    """How many more times `from_json` of the entities below raises (a user hook that fails, then recovers)."""

    fails = 0


class _Profile(Entity):
    id: str = ""
    bio: str = ""

    @classmethod
    def from_json(cls, data: Any) -> Any:
        if _Flaky.fails > 0:
            _Flaky.fails -= 1
            raise ValueError("profile service down")
        return super().from_json(data)


class _Task(Entity):
    id: str = ""
    owner: _Owner | None = None


class _Owner(Entity):
    id: str = ""
    name: str = ""
    tasks: list[_Task] = []
    profile: _Profile | None = None

    schema = {"tasks": [_Task], "profile": _Profile}


_Task.schema = {"owner": _Owner}


def test_a_read_whose_hook_raises_leaves_nothing_half_built(each_engine: str) -> None:
    """It raised a bare ValueError, and left its half-built instances cached: the owner being built when
    `_Profile.from_json` raised (a later read of it: an empty `_Owner()`), and the task that came back to it
    (a later read of the task: that empty owner). Each read now raises a RestLayerError (the hook's error as
    the cause) while the hook fails, then gives the full data."""
    r = normalize(
        _Owner,
        {"id": "o1", "name": "Ann", "tasks": [{"id": "t1", "owner": "o1"}], "profile": {"id": "p1", "bio": "hi"}},
        meta=meta(1),
    )
    memo = MemoCache()
    _Flaky.fails = 2
    for _ in range(2):
        with pytest.raises(RestLayerError, match=r"_Profile\.from_json raised ValueError: profile service") as info:
            memo.denormalize(_Owner, r.result, r.entities)
        assert isinstance(info.value.__cause__, ValueError)
    task = memo.denormalize(_Task, "t1", r.entities)
    assert task is not None and task.owner is not None
    assert task.owner.name == "Ann" and task.owner.profile == _Profile(id="p1", bio="hi")
    owner = memo.denormalize(_Owner, r.result, r.entities)
    assert owner is task.owner and owner.tasks == [task]
