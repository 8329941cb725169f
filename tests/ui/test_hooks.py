"""restlayer.solara hooks rendered without a kernel (solara.render) against the real example API."""
# mypy: disallow-untyped-decorators=False
# (solara.component is untyped)

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import uuid
import weakref
from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest
import solara

from restlayer import RestEndpoint, resource
from restlayer.core import Controller as AsyncController
from restlayer.errors import ClosedError, ParamError, RestLayerError
from restlayer.solara import (
    Binding,
    ControllerProvider,
    ErrorBoundary,
    Suspense,
    use_binding,
    use_cache,
    use_controller,
    use_dle,
    use_fetch,
    use_live,
    use_subscription,
    use_suspense,
)
from restlayer.sync import Controller
from tests._present import present
from tests.core._models import Picky, Todo
from tests.ui.conftest import Seen


@pytest.fixture
def Todos(api: Any) -> Any:
    return resource(path="/todos/:id", schema=Todo, url_prefix=api.url, optimistic=True)


@pytest.fixture
def mount() -> Iterator[Any]:
    """Render an element kernel-less; every render context is closed at the end of the test."""
    contexts: list[Any] = []

    def render(element: Any) -> Any:
        _box, rc = solara.render(element, handle_error=False)
        contexts.append(rc)
        return rc

    yield render
    for rc in contexts:
        rc.close()


def gets(api: Any, path: str) -> int:
    return len(api.requests.matching("GET", path))


def test_provider_closes_the_controller_it_created_on_unmount(mount: Any, seen: Seen, Todos: Any) -> None:
    @solara.component
    def Probe() -> Any:
        seen.add("ctrl", use_controller())
        return solara.Text("x")

    rc = mount(ControllerProvider(children=[Probe()]))
    ctrl = seen.of("ctrl")[0]
    assert isinstance(ctrl, Controller)
    rc.close()
    with pytest.raises(ClosedError, match="closed"):
        ctrl.submit(lambda c: c.fetch(Todos.get, id=1))


def test_an_unmounted_provider_lets_go_of_the_controller_it_created(mount: Any, seen: Seen, Todos: Any) -> None:
    """Each page (session) creates a controller with its whole store: one left behind per page is a leak."""

    @solara.component
    def Probe() -> Any:
        seen.add("ctrl", weakref.ref(use_controller()))
        seen.add("title", use_dle(Todos.get, id=1).data)
        return solara.Text("x")

    rc = mount(ControllerProvider(children=[Probe()]))
    seen.wait(lambda: any(seen.of("title")), "the todo")
    created = seen.of("ctrl")[0]
    rc.close()
    seen.items.clear()
    gc.collect()
    assert created() is None


def test_provider_leaves_a_given_controller_open(mount: Any, seen: Seen, sctrl: Controller, Todos: Any) -> None:
    @solara.component
    def Probe() -> Any:
        seen.add("ctrl", use_controller())
        return solara.Text("x")

    rc = mount(ControllerProvider(children=[Probe()], controller=sctrl))
    assert seen.of("ctrl") == [sctrl]
    rc.close()
    assert sctrl.fetch(Todos.get, id=1).id == 1


@pytest.mark.parametrize("given", [AsyncController, object], ids=["async-controller", "other"])
def test_provider_given_no_blocking_controller_says_so(mount: Any, given: Any) -> None:
    @solara.component
    def Probe() -> Any:
        use_controller()
        return solara.Text("x")

    with pytest.raises(ParamError, match=r"restlayer\.sync\.Controller"):
        mount(ControllerProvider(children=[Probe()], controller=given()))


def test_hooks_without_provider_say_so(mount: Any, Todos: Any) -> None:
    @solara.component
    def Orphan() -> Any:
        use_dle(Todos.get, id=1)
        return solara.Text("x")

    with pytest.raises(RestLayerError, match="ControllerProvider"):
        mount(Orphan())


@pytest.mark.parametrize("hook", [use_dle, use_cache, use_suspense, use_live, use_subscription])
@pytest.mark.parametrize("wrong", ["/todos/1", None], ids=["url", "none"])
def test_hooks_given_no_endpoint_say_so(mount: Any, hook: Any, wrong: object) -> None:
    @solara.component
    def Item() -> Any:
        hook(wrong, {"id": 1})
        return solara.Text("x")

    with pytest.raises(ParamError, match="expected an endpoint"):
        mount(ControllerProvider(children=[Item()]))


def test_suspense_shows_fallback_then_data_with_one_request(mount: Any, seen: Seen, api: Any, Todos: Any) -> None:
    @solara.component
    def Item() -> Any:
        todo = use_suspense(Todos.get, id=1)
        seen.add("item", todo.title)
        return solara.Text(todo.title)

    @solara.component
    def Loading() -> Any:
        seen.add("fallback", True)
        return solara.Text("loading")

    mount(ControllerProvider(children=[Suspense(children=[Item()], fallback=Loading())]))
    seen.wait(lambda: bool(seen.of("item")), "the item to render")
    assert seen.of("fallback") == [True]
    assert seen.of("item")[0] == api.db.get("todos", 1)["title"]
    assert gets(api, "/todos/1") == 1


def test_suspense_raises_a_stored_error_to_the_error_boundary(mount: Any, seen: Seen, api: Any, Todos: Any) -> None:
    @solara.component
    def Item() -> Any:
        use_suspense(Todos.get, id=99999)
        seen.add("item", True)
        return solara.Text("never")

    def show(error: BaseException, retry: Any) -> Any:
        seen.add("error", getattr(error, "status", None))
        return solara.Text("failed")

    boundary = ErrorBoundary(children=[Suspense(children=[Item()])], fallback=show)
    mount(ControllerProvider(children=[boundary]))
    seen.wait(lambda: bool(seen.of("error")), "the error boundary")
    assert seen.of("error")[0] == 404
    assert seen.of("item") == []


def test_dle_loading_then_data_and_none_args_do_not_fetch(mount: Any, seen: Seen, api: Any, Todos: Any) -> None:
    @solara.component
    def Item() -> Any:
        dle = use_dle(Todos.get, id=2)
        skipped = use_dle(Todos.get, None)
        seen.add("dle", (dle.loading, dle.data and dle.data.id, dle.error))
        seen.add("skipped", tuple(skipped))
        return solara.Text("x")

    mount(ControllerProvider(children=[Item()]))
    seen.wait(lambda: (False, 2, None) in seen.of("dle"), "data after loading")
    assert seen.of("dle")[0] == (True, None, None)
    assert set(seen.of("skipped")) == {(None, False, None)}
    assert [r.path for r in api.requests] == ["/todos/2"]


def test_dle_shows_the_error_of_a_failed_fetch(mount: Any, seen: Seen, api: Any, Todos: Any) -> None:
    @solara.component
    def Item() -> Any:
        dle = use_dle(Todos.get, id=99999)
        seen.add("dle", (dle.loading, dle.data, getattr(dle.error, "status", None)))
        return solara.Text("x")

    mount(ControllerProvider(children=[Item()]))
    # the failure stores an error but no data: the component must still learn the fetch is over
    seen.wait(lambda: (False, None, 404) in seen.of("dle"), "the 404 after loading")
    assert seen.of("dle")[0] == (True, None, None)


@pytest.fixture
def crawling() -> Iterator[tuple[Controller, list[float]]]:
    """A controller whose clock moves a microsecond per reading (what expires at once does expire) and as
    far as the test moves `now[0]` (ms)."""
    now = [1_000_000.0]

    def clock() -> float:
        now[0] += 0.001
        return now[0]

    ctrl = Controller(clock=clock)
    yield ctrl, now
    ctrl.close()


def test_suspense_shows_an_error_that_expires_at_once_instead_of_fetching_again(
    mount: Any, seen: Seen, api: Any, crawling: tuple[Controller, list[float]]
) -> None:
    """`error_expiry_length=0`: the failure shows, one request; a retry a second later asks the server again."""
    ctrl, now = crawling
    Failing = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, error_expiry_length=0)

    @solara.component
    def Item() -> Any:
        use_suspense(Failing.get, id=99999)
        return solara.Text("never")

    def show(error: BaseException, retry: Any) -> Any:
        seen.add("error", (getattr(error, "status", None), retry))
        return solara.Text("failed")

    page = ErrorBoundary(children=[Suspense(children=[Item()])], fallback=show)
    rc = mount(ControllerProvider(children=[page], controller=ctrl))
    seen.wait(lambda: bool(seen.of("error")), "the error boundary")
    assert seen.of("error")[0][0] == 404
    assert gets(api, "/todos/99999") == 1
    now[0] += 1000  # a second later the user retries: that one is sent
    shown = len(seen.of("error"))
    seen.of("error")[-1][1]()
    seen.wait(lambda: len(seen.of("error")) > shown, "the retried request's error")
    assert gets(api, "/todos/99999") == 2
    rc.close()


def test_dle_shows_an_error_that_expires_at_once_instead_of_loading_again(
    mount: Any, seen: Seen, api: Any, crawling: tuple[Controller, list[float]]
) -> None:
    ctrl, _now = crawling
    Failing = resource(path="/todos/:id", schema=Todo, url_prefix=api.url, error_expiry_length=0)

    @solara.component
    def Item() -> Any:
        dle = use_dle(Failing.get, id=99999)
        seen.add("dle", (dle.loading, dle.data, getattr(dle.error, "status", None)))
        return solara.Text("x")

    rc = mount(ControllerProvider(children=[Item()], controller=ctrl))
    seen.wait(lambda: (False, None, 404) in seen.of("dle"), "the 404 after loading")
    assert gets(api, "/todos/99999") == 1
    assert seen.of("dle")[-1] == (False, None, 404)
    rc.close()


def test_invalidating_a_shown_item_fetches_it_again(
    mount: Any, seen: Seen, sctrl: Controller, api: Any, Todos: Any
) -> None:
    sctrl.fetch(Todos.get, id=1)

    @solara.component
    def Item() -> Any:
        todo = use_suspense(Todos.get, id=1)
        seen.add("item", todo.title)
        return solara.Text(todo.title)

    rc = mount(ControllerProvider(children=[Suspense(children=[Item()])], controller=sctrl))
    api.db.update("todos", 1, {"title": "changed on the server"})
    sctrl.invalidate(Todos.get, id=1)  # the entity stays stored: only the call's metadata changes
    seen.wait(lambda: "changed on the server" in seen.of("item"), "the item fetched again")
    assert gets(api, "/todos/1") == 2
    rc.close()  # the page goes before the test's controller closes, as in an app


def test_expiring_a_shown_item_refreshes_it_in_the_background(
    mount: Any, seen: Seen, sctrl: Controller, api: Any, Todos: Any
) -> None:
    sctrl.fetch(Todos.get, id=2)

    @solara.component
    def Item() -> Any:
        dle = use_dle(Todos.get, id=2)
        seen.add("item", dle.data and dle.data.title)
        return solara.Text("x")

    rc = mount(ControllerProvider(children=[Item()], controller=sctrl))
    api.db.update("todos", 2, {"title": "renamed elsewhere"})
    sctrl.expire_all(Todos.get.test_key)  # stale, still valid: a background fetch, no loading state
    seen.wait(lambda: "renamed elsewhere" in seen.of("item"), "the stale item refreshed")
    assert None not in seen.of("item")  # refreshed in the background: never shown loading
    rc.close()  # the page goes before the test's controller closes, as in an app


def test_cache_never_fetches_but_shows_what_another_component_fetched(
    mount: Any, seen: Seen, api: Any, Todos: Any
) -> None:
    @solara.component
    def Cached() -> Any:
        todo = use_cache(Todos.get, id=3)
        seen.add("cached", todo and todo.id)
        return solara.Text("x")

    @solara.component
    def Page() -> Any:
        fetch, set_fetch = solara.use_state(False)
        seen.add("fetcher", set_fetch)
        return solara.Column(children=[Cached(), *([Fetcher()] if fetch else [])])

    @solara.component
    def Fetcher() -> Any:
        use_dle(Todos.get, id=3)
        return solara.Text("y")

    mount(ControllerProvider(children=[Page()]))
    assert seen.of("cached") == [None]
    assert len(api.requests) == 0
    seen.of("fetcher")[0](True)
    seen.wait(lambda: 3 in seen.of("cached"), "the cached read to show the fetched todo")
    assert gets(api, "/todos/3") == 1


def test_dle_of_data_stale_at_once_fetches_it_once_per_read_not_in_a_loop(mount: Any, seen: Seen, api: Any) -> None:
    """`data_expiry_length=0`: the reply's own arrival is no reason to ask again (each would, for ever)."""
    name = f"stale-{uuid.uuid4().hex}"
    httpx.post(f"{api.url}/_test/gate/{name}/open")  # every request answered at once, and counted
    stale = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url, data_expiry_length=0)

    @solara.component
    def Item() -> Any:
        seen.add("data", use_dle(stale, name=name).data)
        return solara.Text("x")

    rc = mount(ControllerProvider(children=[Item()]))
    seen.wait(lambda: {"gate": name, "arrival": 1} in seen.of("data"), "the reply")
    more = httpx.get(f"{api.url}/_test/gate/{name}/arrivals", params={"count": 2, "ms": 300}, timeout=15)
    assert more.json() == {"arrivals": 1}
    rc.close()


def test_a_shown_item_that_can_no_longer_be_read_shows_the_error(
    mount: Any, seen: Seen, sctrl: Controller, api: Any
) -> None:
    """Not the stale title for good: the read's error reaches the boundary."""
    Pickies = resource(path="/todos/:id", schema=Picky, url_prefix=api.url)
    sctrl.fetch(Pickies.get, id=1)

    @solara.component
    def Item() -> Any:
        seen.add("item", present(use_cache(Pickies.get, id=1)).title)
        return solara.Text("x")

    def show(error: BaseException, retry: Any) -> Any:
        seen.add("error", error)
        return solara.Text("failed")

    rc = mount(ControllerProvider(children=[ErrorBoundary(children=[Item()], fallback=show)], controller=sctrl))
    sctrl.set(Picky, {"id": 1}, {"id": 1, "title": "BOOM"})
    seen.wait(lambda: bool(seen.of("error")), "the boundary to show the read's error")
    error = seen.of("error")[0]
    assert isinstance(error, RestLayerError) and "BOOM" in str(error)
    assert seen.of("item") == [api.db.get("todos", 1)["title"]]
    rc.close()


def test_change_of_an_unrelated_entity_does_not_rerender(mount: Any, seen: Seen, sctrl: Controller, Todos: Any) -> None:
    sctrl.fetch(Todos.get, id=1)
    sctrl.fetch(Todos.get, id=2)

    @solara.component
    def Item(id: int) -> Any:
        todo = use_suspense(Todos.get, id=id)
        seen.add(f"item{id}", todo.title)
        return solara.Text(todo.title)

    mount(ControllerProvider(children=[Suspense(children=[Item(1), Item(2)])], controller=sctrl))
    assert len(seen.of("item1")) == len(seen.of("item2")) == 1
    sctrl.set(Todo, {"id": 2}, {"id": 2, "title": "two, renamed"})
    seen.wait(lambda: "two, renamed" in seen.of("item2"), "item 2 to re-render")
    sctrl.set(Todo, {"id": 1}, {"id": 1, "title": "one, renamed"})
    seen.wait(lambda: "one, renamed" in seen.of("item1"), "item 1 to re-render")
    # item 1 rendered once for its own change, never for item 2's
    assert len(seen.of("item1")) == 2
    assert len(seen.of("item2")) == 2


def test_equal_data_written_again_does_not_rerender(mount: Any, seen: Seen, sctrl: Controller, Todos: Any) -> None:
    todo = sctrl.fetch(Todos.get, id=1)

    @solara.component
    def Item() -> Any:
        seen.add("item", present(use_cache(Todos.get, id=1)).title)
        return solara.Text("x")

    mount(ControllerProvider(children=[Item()], controller=sctrl))
    sctrl.set(Todo, {"id": 1}, {"id": 1, "userId": todo.userId, "title": todo.title, "completed": todo.completed})
    sctrl.set(Todo, {"id": 1}, {"id": 1, "title": "changed"})
    seen.wait(lambda: "changed" in seen.of("item"), "the real change")
    assert seen.of("item") == [todo.title, "changed"]


def test_removed_component_stops_watching_and_polling(mount: Any, seen: Seen, api: Any, Todos: Any) -> None:
    polled = Todos.get.extend(poll_frequency=60_000)

    @solara.component
    def Live() -> Any:
        seen.add("live", use_live(polled, id=1).id)
        return solara.Text("x")

    @solara.component
    def Page() -> Any:
        show, set_show = solara.use_state(True)
        seen.add("toggle", set_show)
        seen.add("binding", use_binding())
        return solara.Column(children=[Suspense(children=[Live()])] if show else [])

    mount(ControllerProvider(children=[Page()]))
    seen.wait(lambda: 1 in seen.of("live"), "the live value")
    binding: Binding = seen.of("binding")[0]
    seen.wait(lambda: (binding.watching, binding.subscribed) == (1, 1), "the live component's watch and poll")
    seen.of("toggle")[0](False)
    seen.wait(lambda: (binding.watching, binding.subscribed) == (0, 0), "the removed component to let go")


def test_live_may_switch_between_a_polled_and_a_plain_endpoint(mount: Any, seen: Seen, Todos: Any) -> None:
    polled = Todos.get.extend(poll_frequency=60_000)

    @solara.component
    def Live(endpoint: Any) -> Any:
        seen.add("live", (endpoint.poll_frequency, use_live(endpoint, id=1).id))
        return solara.Text("x")

    @solara.component
    def Page() -> Any:
        live, set_live = solara.use_state(False)
        seen.add("toggle", set_live)
        seen.add("binding", use_binding())
        return solara.Div(children=[Suspense(children=[Live(polled if live else Todos.get)])])

    mount(ControllerProvider(children=[Page()]))
    seen.wait(lambda: (None, 1) in seen.of("live"), "the plain endpoint's value")
    binding: Binding = seen.of("binding")[0]
    seen.of("toggle")[0](True)
    seen.wait(lambda: (60_000, 1) in seen.of("live") and binding.subscribed == 1, "the polled endpoint to poll")
    seen.of("toggle")[0](False)  # one hook fewer would make reacton refuse the render
    seen.wait(lambda: seen.of("live")[-1] == (None, 1) and binding.subscribed == 0, "polling to stop")


def test_unmounting_after_the_app_closed_its_controller(mount: Any, seen: Seen, Todos: Any) -> None:
    polled = Todos.get.extend(poll_frequency=60_000)
    ctrl = Controller()
    ctrl.fetch(Todos.get, id=1)  # fresh: no request runs when the app closes

    @solara.component
    def Item() -> Any:
        use_subscription(polled, id=1)
        seen.add("loading", use_dle(Todos.get, id=1).loading)
        return solara.Text("x")

    rc = mount(ControllerProvider(children=[Item()], controller=ctrl))
    assert seen.of("loading") == [False]
    ctrl.close()  # the app closes its controller before the page goes
    rc.close()  # the subscription and the watch end without an error


def test_subscription_needs_a_poll_frequency(mount: Any, Todos: Any) -> None:
    @solara.component
    def Sub() -> Any:
        use_subscription(Todos.get, id=1)
        return solara.Text("x")

    with pytest.raises(RestLayerError, match="poll_frequency"):
        mount(ControllerProvider(children=[Sub()]))


def test_subscription_polls_while_rendered(mount: Any, seen: Seen, api: Any, Todos: Any) -> None:
    polled = Todos.get.extend(poll_frequency=50)

    @solara.component
    def Item() -> Any:
        use_subscription(polled, id=1)
        dle = use_dle(polled, id=1)
        seen.add("title", dle.data and dle.data.title)
        return solara.Text("x")

    mount(ControllerProvider(children=[Item()]))
    seen.wait(lambda: any(seen.of("title")), "the first fetch")
    api.db.update("todos", 1, {"title": "changed on the server"})
    seen.wait(lambda: "changed on the server" in seen.of("title"), "polling to bring the server's change")


def test_use_fetch_returns_at_once_and_reports_a_refusal_off_the_loop_thread(
    mount: Any, seen: Seen, sctrl: Controller, Todos: Any, api: Any
) -> None:
    original = sctrl.fetch(Todos.get, id=1).title

    @solara.component
    def Item() -> Any:
        seen.add("fetch", use_fetch())
        seen.add("title", present(use_cache(Todos.get, id=1)).title)
        return solara.Text("x")

    mount(ControllerProvider(children=[Item()], controller=sctrl))
    future = seen.of("fetch")[0](Todos.partial_update, {"id": 1}, {"title": "REJECT"})
    future.add_done_callback(
        lambda done: seen.add("done", (threading.current_thread().name, getattr(done.exception(), "status", None)))
    )
    seen.wait(lambda: bool(seen.of("done")), "the refusal")
    thread, status = seen.of("done")[0]
    assert status == 400
    assert thread.startswith("restlayer-ui")  # where component state may be set, not the loop thread
    stored = sctrl.cache(Todos.get, id=1)
    assert stored is not None and stored.title == original  # rolled back
    assert api.db.get("todos", 1)["title"] == original


def test_use_fetch_settles_when_the_provider_unmounts_during_the_request(mount: Any, seen: Seen, api: Any) -> None:
    name = f"unmount-{uuid.uuid4().hex}"
    held = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)

    @solara.component
    def Item() -> Any:
        seen.add("fetch", use_fetch())
        return solara.Text("x")

    rc = mount(ControllerProvider(children=[Item()]))
    future = seen.of("fetch")[0](held, name=name)
    arrived = httpx.get(f"{api.url}/_test/gate/{name}/arrivals", params={"count": 1}, timeout=15)
    assert arrived.json() == {"arrivals": 1}  # the request is held by the server
    try:
        rc.close()  # unmounted: the provider closes the controller it created
        # the request's own ClosedError, or the cancelled call's: which one comes first is up to the threads
        with pytest.raises(ClosedError, match=r"(?i)the controller (is|was) closed"):
            future.result(timeout=10)
    finally:
        httpx.post(f"{api.url}/_test/gate/{name}/open")


def test_use_fetch_settling_after_the_page_went_runs_callbacks_off_the_loop_thread(
    mount: Any, seen: Seen, sctrl: Controller, api: Any
) -> None:
    name = f"late-{uuid.uuid4().hex}"
    held = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)

    @solara.component
    def Item() -> Any:
        seen.add("fetch", use_fetch())
        return solara.Text("x")

    rc = mount(ControllerProvider(children=[Item()], controller=sctrl))
    future = seen.of("fetch")[0](held, name=name)
    future.add_done_callback(lambda done: seen.add("done", threading.current_thread().name))
    try:
        arrived = httpx.get(f"{api.url}/_test/gate/{name}/arrivals", params={"count": 1}, timeout=15)
        assert arrived.json() == {"arrivals": 1}
        rc.close()  # the page goes; the app's controller stays open and the request goes on
    finally:
        httpx.post(f"{api.url}/_test/gate/{name}/open")
    assert future.result(timeout=10) == {"gate": name, "arrival": 1}
    seen.wait(lambda: bool(seen.of("done")), "the done-callback")
    # a callback blocking on the controller there would hang it
    assert not seen.of("done")[0].startswith("restlayer-sync-loop")


@pytest.mark.parametrize("then", [None, {"name": "stored"}], ids=["none", "stored-args"])
def test_suspense_shows_new_children_at_once_instead_of_waiting_for_the_old_request(
    mount: Any, seen: Seen, sctrl: Controller, api: Any, then: dict[str, str] | None
) -> None:
    """Switching a suspended item to `None` ("do not fetch") or to stored data must not wait for the old request."""
    name = f"switch-{uuid.uuid4().hex}"
    held = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)
    sctrl.set_response(held, {"name": "stored"}, {"gate": "stored"})

    @solara.component
    def Item(args: dict[str, str] | None) -> Any:
        seen.add("item", (args, use_suspense(held, args)))
        return solara.Text("x")

    @solara.component
    def Page() -> Any:
        args, set_args = solara.use_state(cast("dict[str, str] | None", {"name": name}))
        seen.add("switch", set_args)
        return Suspense(children=[Item(args)])

    rc = mount(ControllerProvider(children=[Page()], controller=sctrl))
    try:
        arrived = httpx.get(f"{api.url}/_test/gate/{name}/arrivals", params={"count": 1}, timeout=15)
        assert arrived.json() == {"arrivals": 1}  # the item is suspended on the held request
        seen.of("switch")[0](then)
        expected = (then, None if then is None else {"gate": "stored"})
        seen.wait(lambda: expected in seen.of("item"), "the item with its new arguments")
    finally:
        httpx.post(f"{api.url}/_test/gate/{name}/open")
        rc.close()


@pytest.mark.parametrize("owned", [False, True], ids=["given", "created"])
def test_suspense_follows_a_new_controller_given_while_it_waits(mount: Any, seen: Seen, api: Any, owned: bool) -> None:
    name = f"swap-{uuid.uuid4().hex}"
    held = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)
    first, second = Controller(), Controller()
    second.set_response(held, {"name": name}, {"from": "second"})
    start = None if owned else first  # None: the provider creates the first controller (closed at the swap)

    @solara.component
    def Item() -> Any:
        seen.add("item", use_suspense(held, name=name))
        return solara.Text("x")

    @solara.component
    def Page() -> Any:
        ctrl, set_ctrl = solara.use_state(start)
        seen.add("swap", set_ctrl)
        return ControllerProvider(children=[Suspense(children=[Item()])], controller=ctrl)

    rc = mount(Page())
    try:
        arrived = httpx.get(f"{api.url}/_test/gate/{name}/arrivals", params={"count": 1}, timeout=15)
        assert arrived.json() == {"arrivals": 1}  # the first controller's request is held by the server
        seen.of("swap")[0](second)  # the app hands the page another controller, which has the data
        seen.wait(lambda: {"from": "second"} in seen.of("item"), "the second controller's data")
    finally:
        httpx.post(f"{api.url}/_test/gate/{name}/open")
        rc.close()  # the page goes before the controllers it was given
        first.close()
        second.close()


def test_suspense_waits_on_the_controller_of_a_provider_below_it(mount: Any, seen: Seen, api: Any) -> None:
    name = f"nested-{uuid.uuid4().hex}"
    held = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)
    inner = Controller()

    @solara.component
    def Item() -> Any:
        seen.add("item", use_suspense(held, name=name))
        return solara.Text("x")

    page = Suspense(children=[ControllerProvider(children=[Item()], controller=inner)])
    rc = mount(ControllerProvider(children=[page]))
    try:
        arrived = httpx.get(f"{api.url}/_test/gate/{name}/arrivals", params={"count": 1}, timeout=15)
        assert arrived.json() == {"arrivals": 1}
        httpx.post(f"{api.url}/_test/gate/{name}/open")
        seen.wait(lambda: bool(seen.of("item")), "the item")
        # the outer controller, whose store the item never reads, sent no request of its own
        assert seen.of("item")[0] == {"gate": name, "arrival": 1}
        assert inner.cache(held, name=name) == {"gate": name, "arrival": 1}
        again = httpx.get(f"{api.url}/_test/gate/{name}/arrivals", params={"count": 2, "ms": 200}, timeout=15)
        assert again.json() == {"arrivals": 1}
    finally:
        httpx.post(f"{api.url}/_test/gate/{name}/open")
        rc.close()
        inner.close()


def test_suspense_above_a_provider_owning_its_controller_says_why_it_cannot_wait(
    mount: Any, seen: Seen, api: Any
) -> None:
    name = f"owned-{uuid.uuid4().hex}"
    held = RestEndpoint(path="/_test/gate/:name", url_prefix=api.url)

    @solara.component
    def Item() -> Any:
        seen.add("item", use_suspense(held, name=name))
        return solara.Text("x")

    def show(error: BaseException, retry: Any) -> Any:
        seen.add("error", error)
        return solara.Text("failed")

    # the fallback replaces the inner provider, which closes the controller its item waits on
    page = ErrorBoundary(children=[Suspense(children=[ControllerProvider(children=[Item()])])], fallback=show)
    rc = mount(ControllerProvider(children=[page]))
    try:
        seen.wait(lambda: bool(seen.of("error")), "the boundary to say why")
        error = seen.of("error")[0]
        assert isinstance(error, RestLayerError) and "ControllerProvider" in str(error)
        assert seen.of("item") == []
    finally:
        httpx.post(f"{api.url}/_test/gate/{name}/open")
        rc.close()


RENDERER_PROBE = """
import os, solara
import restlayer.solara
_box, rc = solara.render(solara.Text("x"), handle_error=False)
print(os.environ.get("REACTON_FAST"), type(rc).__name__)
rc.close()
"""


@pytest.mark.parametrize(
    ("chosen", "expected"), [(None, "None _RenderContext"), ("1", "1 _RenderContextFast")], ids=["unset", "app-chose-1"]
)
def test_importing_the_hooks_leaves_the_renderer_to_the_app(chosen: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REACTON_FAST"}
    if chosen is not None:
        env["REACTON_FAST"] = chosen
    done = subprocess.run(
        [sys.executable, "-c", RENDERER_PROBE], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == expected
