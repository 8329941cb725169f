"""Watch dispatch: a store change re-reads only the watchers whose data it can touch, and misses none."""

from __future__ import annotations

from typing import Any

from restlayer.core import Controller, GCPolicy
from restlayer.rest import RestEndpoint
from restlayer.schema import All, Invalidate
from tests.core._models import Clock, Picky, Todo, User

PREFIX = "http://127.0.0.1:9"  # nothing is fetched: the store is written directly


def counting_get(reads: list[str]) -> RestEndpoint[Any]:
    """`GET /todos/:id` whose store key records every read of the endpoint (each read computes the key)."""
    base: RestEndpoint[Any] = RestEndpoint(path="/todos/:id", schema=Todo, url_prefix=PREFIX)

    def key(*args: Any) -> str:
        found = base.key(*args)
        reads.append(found)
        return found

    return base.extend(key=key)


def test_a_change_re_reads_only_the_watchers_of_the_changed_entity(ctrl: Controller) -> None:
    reads: list[str] = []
    get = counting_get(reads)
    fired: list[int] = []
    for i in range(1, 21):
        ctrl.set(Todo, {"id": i}, {"id": i, "title": f"todo {i}"})
        ctrl.watch(get, id=i, callback=lambda todo: fired.append(-1 if todo is None else todo.id))
    reads.clear()
    ctrl.set(Todo, {"id": 7}, {"id": 7, "title": "changed"})
    assert fired == [7]
    assert set(reads) == {get.key({"id": 7})}  # the 19 other watchers were not read again


def test_a_stored_result_replaced_is_seen_by_its_watcher(ctrl: Controller) -> None:
    listing: RestEndpoint[Any] = RestEndpoint(path="/todos", schema=[Todo], url_prefix=PREFIX)
    seen: list[Any] = []
    ctrl.set_response(listing, None, [{"id": 1, "title": "a"}])
    ctrl.watch(listing, callback=seen.append)
    ctrl.set_response(listing, None, [{"id": 1, "title": "a"}, {"id": 2, "title": "b"}])
    assert [[t.id for t in todos] for todos in seen] == [[1, 2]]


def test_a_watched_all_query_sees_a_new_entity(ctrl: Controller) -> None:
    everything: RestEndpoint[Any] = RestEndpoint(path="/todos", schema=All(Todo), url_prefix=PREFIX)
    seen: list[Any] = []
    ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "a"})
    ctrl.watch(everything, callback=seen.append)
    ctrl.set(Todo, {"id": 2}, {"id": 2, "title": "b"})  # a record no earlier read touched
    assert [[t.id for t in todos] for todos in seen] == [[1, 2]]


def test_a_watched_lookup_by_index_sees_the_entity_arrive(ctrl: Controller) -> None:
    by_name: RestEndpoint[Any] = RestEndpoint(path="/users{/:id}", schema=User, url_prefix=PREFIX)
    seen: list[Any] = []
    ctrl.watch(by_name, {"username": "bret"}, callback=seen.append)
    ctrl.set(User, {"id": 1}, {"id": 1, "username": "bret", "name": "Leanne"})  # only the index names it
    assert [user.name for user in seen] == ["Leanne"]


def test_a_value_changed_and_changed_back_fires_twice(ctrl: Controller) -> None:
    get: RestEndpoint[Any] = RestEndpoint(path="/todos/:id", schema=Todo, url_prefix=PREFIX)
    seen: list[str | None] = []
    ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "stored"})
    ctrl.watch(get, id=1, callback=lambda todo: seen.append(None if todo is None else todo.title))
    ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "second"})
    ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "stored"})
    assert seen == ["second", "stored"]


def test_a_watched_all_query_ignores_a_change_to_another_type(ctrl: Controller) -> None:
    everything: RestEndpoint[Any] = RestEndpoint(path="/todos", schema=All(Todo), url_prefix=PREFIX)
    seen: list[Any] = []
    ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "a"})
    ctrl.watch(everything, callback=seen.append)
    ctrl.set(User, {"id": 1}, {"id": 1, "username": "bret"})  # read again (a table changed), same todos
    assert seen == []


def test_a_watcher_holds_what_it_reads_now_not_what_it_first_read(clock: Clock) -> None:
    policy = GCPolicy(interval_ms=10**9)
    ctrl = Controller(clock=clock, gc_policy=policy)
    listing: RestEndpoint[Any] = RestEndpoint(path="/todos", schema=[Todo], url_prefix=PREFIX)
    ctrl.set_response(listing, None, [{"id": 1}, {"id": 2}])
    ctrl.watch(listing, callback=lambda todos: None)
    ctrl.set_response(listing, None, [{"id": 2}, {"id": 3}])
    clock.advance(10**9)
    policy.sweep()
    assert sorted(ctrl.get_state().entities["Todo"]) == ["2", "3"]  # todo 1 is no longer held
    ctrl.close()


def test_a_watcher_removed_by_another_callback_is_not_called_in_that_round(ctrl: Controller) -> None:
    """A parent stopping a child on a change: the child sees nothing after its stop function returned."""
    get: RestEndpoint[Any] = RestEndpoint(path="/todos/:id", schema=Todo, url_prefix=PREFIX)
    ctrl.set_response(get, {"id": 1}, {"id": 1, "title": "a"})
    child_saw: list[str | None] = []
    stops: list[Any] = []
    ctrl.watch(get, {"id": 1}, callback=lambda todo: stops[0]())
    stops.append(
        ctrl.watch(get, {"id": 1}, callback=lambda todo: child_saw.append(None if todo is None else todo.title))
    )
    ctrl.set_response(get, {"id": 1}, {"id": 1, "title": "b"})
    assert child_saw == []


def test_a_watcher_removed_mid_round_keeps_the_holds_of_the_others(clock: Clock) -> None:
    """Removed mid-round, a watcher used to be re-read and release its old holds twice: a todo another
    watcher still read was then swept."""
    policy = GCPolicy(interval_ms=10**9)
    ctrl = Controller(clock=clock, gc_policy=policy)
    listing: RestEndpoint[Any] = RestEndpoint(path="/todos", schema=[Todo], url_prefix=PREFIX)
    get: RestEndpoint[Any] = RestEndpoint(path="/todos/:id", schema=Todo, url_prefix=PREFIX)
    ctrl.set_response(listing, None, [{"id": 1}, {"id": 2}])
    ctrl.set_response(get, {"id": 2}, {"id": 2})
    stops: list[Any] = []
    ctrl.watch(listing, callback=lambda todos: stops[0]())
    stops.append(ctrl.watch(listing, callback=lambda todos: None))
    seen: list[Any] = []
    ctrl.watch(get, {"id": 2}, callback=seen.append)  # holds todo 2 throughout
    ctrl.set_response(listing, None, [{"id": 1}, {"id": 3}])
    clock.advance(10**9)
    policy.sweep()
    assert "2" in ctrl.get_state().entities["Todo"]
    assert ctrl.get_response(get, id=2).data is not None and seen == []
    ctrl.close()


def test_a_watcher_is_called_with_none_once_its_data_is_gone(ctrl: Controller) -> None:
    """Deleting the entity or resetting the store gives `None`, which the callback's type admits."""
    get: RestEndpoint[Todo] = RestEndpoint(path="/todos/:id", schema=Todo, url_prefix=PREFIX)
    listing: RestEndpoint[list[Todo]] = RestEndpoint(path="/todos", schema=[Todo], url_prefix=PREFIX)
    items: list[Todo | None] = []
    lists: list[list[Todo] | None] = []
    ctrl.set_response(get, {"id": 1}, {"id": 1, "title": "a"})
    ctrl.set_response(listing, None, [{"id": 1, "title": "a"}])
    ctrl.watch(get, {"id": 1}, callback=items.append)
    ctrl.watch(listing, callback=lists.append)
    ctrl.set(Invalidate(Todo), {"id": 1})
    ctrl.reset_entire_store()
    assert items == [None]
    assert lists == [[], None]


def test_watch_response_is_told_once_that_its_call_no_longer_reads(ctrl: Controller) -> None:
    """A screen must learn its data became unreadable (to show the error), not keep the stale value."""
    one: RestEndpoint[Any] = RestEndpoint(path="/todos/:id", schema=Picky, url_prefix=PREFIX)
    ctrl.set_response(one, {"id": 1}, {"id": 1, "title": "fine"})
    told: list[Any] = []
    plain: list[Any] = []
    ctrl.watch_response(one, id=1, callback=told.append)
    ctrl.watch(one, id=1, callback=plain.append)
    ctrl.set(Picky, {"id": 1}, {"id": 1, "title": "BOOM"})
    ctrl.set(Picky, {"id": 1}, {"id": 1, "title": "BOOM", "completed": True})  # still unreadable: told once
    assert [t.title for t in told] == ["fine"]  # with what it showed last
    assert plain == []  # `watch` gives data only: it has none to give
    ctrl.set(Picky, {"id": 1}, {"id": 1, "title": "fixed"})
    assert [t.title for t in told] == ["fine", "fixed"]
    assert [t.title for t in plain] == ["fixed"]
