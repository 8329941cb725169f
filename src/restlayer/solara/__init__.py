"""Solara data-binding hooks: components read the restlayer store and re-render when their data changes.

Install with `pip install restlayer[solara]`. Put a `ControllerProvider` at the
top of the page; below it, components call `use_suspense`, `use_dle`,
`use_cache`, `use_subscription` or `use_live`. Solara has no React Suspense, so
`use_suspense` raises `restlayer.errors.SuspendedError` while its data loads and the
nearest `Suspense` boundary shows a fallback instead of its children until the
fetch settles; a stored error is raised to the nearest `ErrorBoundary`.

With many mounted components, run the app under reacton's fast renderer
(`REACTON_FAST=1` in the environment): it re-renders only the components whose
state changed, where the default one updates every widget of the page on each
change (the Solara guide has the numbers). Importing this module changes no setting.
"""

from __future__ import annotations

import concurrent.futures
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar, cast, overload

import reacton
import solara
from reacton.core import Element

from restlayer._typing import A, P, T
from restlayer.core import DLE, Endpoint, ExpiryStatus
from restlayer.core import Controller as AsyncController
from restlayer.core._read import bind_arguments, skips
from restlayer.core._watch import changed
from restlayer.errors import ClosedError, ParamError, RestLayerError, SuspendedError
from restlayer.solara._binding import Binding
from restlayer.sync import Controller

__all__ = [
    "Binding",
    "ControllerProvider",
    "ErrorBoundary",
    "Fetch",
    "SuspendedError",
    "Suspense",
    "use_binding",
    "use_cache",
    "use_controller",
    "use_dle",
    "use_fetch",
    "use_live",
    "use_subscription",
    "use_suspense",
]

R = TypeVar("R")
#: Children of the provider and the boundaries: elements (or anything else Solara renders), passed on untouched.
Children = Sequence[object]

_binding_context: reacton.core.UserContext[Binding | None] = reacton.create_context(None)
#: The controllers a provider created (a Suspense above such a provider must not wait). Weak, and holding
#: nothing that refers back to them: each page's controller, with its whole store, goes with its page.
_created: weakref.WeakSet[Controller] = weakref.WeakSet()


def _not_suspended(record: logging.LogRecord) -> bool:
    """Solara logs every exception a component raises; waiting for data is not worth a traceback."""
    return not (record.exc_info and isinstance(record.exc_info[1], SuspendedError))


logging.getLogger("reacton").addFilter(_not_suspended)


def _stack(children: Children | None) -> Element[object]:
    """`children` on top of each other, like `solara.Column`.

    Column's widget stores its elevation as a float but is given the int 0, so
    reacton sees it changed and re-sets every child on each re-render below it
    (a 1,000-item list re-validated); a div holds exactly what it is given.
    """
    stack: Element[object] = solara.Div(
        children=children or [], classes=["d-flex", "flex-column"], style="row-gap: 12px"
    )
    return stack


# ----- the provider -------------------------------------------------------------------------------
@solara.component  # type: ignore[untyped-decorator]  # solara is untyped
def ControllerProvider(children: Children | None = None, controller: Controller | None = None) -> Element[object]:
    """Give every component below a controller: `controller`, or a new one closed when this unmounts."""
    binding = reacton.use_memo(lambda: _provided(controller), [controller])
    reacton.use_effect(lambda: binding.close, [binding])
    reacton.provide_context(_binding_context, binding)
    return _stack(children)


def _provided(controller: Controller | None) -> Binding:
    """The binding of a provider given `controller`, or of a new controller it owns (recorded in `_created`).

    The hooks read through the blocking controller's loop thread: anything else given
    (the async `restlayer.Controller`, say) is refused here, by name, rather than failing
    at the first hook with an AttributeError.
    """
    if controller is not None:
        if not isinstance(controller, Controller):
            raise ParamError(
                f"ControllerProvider: controller must be a restlayer.sync.Controller (the blocking one), "
                f"not {controller!r}"
            )
        return Binding(controller, owned=False)
    binding = Binding(Controller(), owned=True)
    _created.add(binding.controller)
    return binding


def use_binding() -> Binding:
    """The nearest provider's `Binding`: its controller plus live hook counts (`watching`, `subscribed`)."""
    binding = reacton.use_context(_binding_context)
    if binding is None:
        raise RestLayerError("restlayer.solara hooks need a ControllerProvider above the component")
    return binding


def use_controller() -> Controller:
    """The blocking controller of the nearest `ControllerProvider` (for mutations: `.submit(...)`)."""
    return use_binding().controller


class Fetch(Protocol):
    """What `use_fetch()` gives: `fetch(endpoint, *args)` starts the call and returns its future at once.

    A typed endpoint's arguments are checked as `Controller.fetch` checks them.
    """

    def __call__(self, endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> concurrent.futures.Future[T]: ...


def use_fetch() -> Fetch:
    """A function `fetch(endpoint, *args)` for event handlers: starts the request and returns at once.

    Optimistic updates show up right away; the returned future settles with the
    result or the error, and its done-callbacks run where they may set component
    state (not on the controller's loop thread). It settles also when the provider
    unmounts meanwhile (with `ClosedError` when that closed the controller).
    """
    binding = use_binding()

    def fetch(endpoint: Endpoint[T], *args: object, **kwargs: object) -> concurrent.futures.Future[T]:
        outcome: concurrent.futures.Future[T] = concurrent.futures.Future()

        def settle(inner: concurrent.futures.Future[T]) -> None:
            if inner.cancelled():  # only closing the controller cancels it: say so, as its blocking calls do
                outcome.set_exception(ClosedError(f"the controller was closed while fetching {endpoint.name}"))
                return
            error = inner.exception()
            if error is None:
                outcome.set_result(inner.result())
            else:
                outcome.set_exception(error)

        inner = binding.controller.submit(lambda c: c.fetch(endpoint, *args, **kwargs))
        # settled even after the provider unmounted: a caller may block on the future
        inner.add_done_callback(lambda done: binding.deliver(lambda: settle(done), always=True))
        return outcome

    return fetch


# ----- reading and re-rendering ---------------------------------------------------------------------
def _bound(
    endpoint: Endpoint[object], args: tuple[object, ...], kwargs: dict[str, object]
) -> tuple[object, ...] | None:
    """Canonical arguments, or None when the caller passed `None` ("do not fetch"), as the Controller binds them."""
    return None if skips(args, kwargs) else bind_arguments(endpoint, args, kwargs)


def _differs(shown: object, now: object) -> bool:
    """Whether a hook's read `now` shows something else than `shown` (a DLE compares field by field).

    Equal data rebuilt as new objects is no change, as for `watch`.
    """
    if isinstance(shown, DLE) and isinstance(now, DLE):
        return any(changed(old, new) for old, new in zip(shown, now, strict=True))
    return changed(shown, now)


#: A hook starts no new fetch of a call whose last fetch settled less than this long ago (ms) and whose
#: expiry came with it, whatever the endpoint's `data_expiry_length` / `error_expiry_length`: a shorter one
#: would have each read of the outcome (the re-render it causes) fetch again, request after request.
_REFETCH_FLOOR = 1000.0


def _settled_lately(c: AsyncController, endpoint: Endpoint[object], bound: tuple[object, ...]) -> bool:
    """Whether `endpoint(*bound)` is due again only by its own short expiry, set by a fetch settled lately.

    Not when the stored result is unusable (invalidated, an entity of it deleted) or
    was expired on purpose (`expire_all` moves `expires_at` before the fetch's date):
    those refetch at once as ever.
    """
    meta = c.get_state().meta.get(endpoint.key(*bound))
    date = None if meta is None else meta.get("date")
    if meta is None or date is None or meta.get("expires_at", date) < date:
        return False
    if c.now() >= date + _REFETCH_FLOOR:
        return False
    return c.get_response(endpoint, *bound).expiry_status != ExpiryStatus.INVALID


def _read_dle(c: AsyncController, endpoint: Endpoint[T], bound: tuple[object, ...]) -> DLE[T]:
    """`c.dle(endpoint, *bound)` for a hook: an outcome is shown, not fetched again, for a floor of time.

    A UI reads a call again on every change of it, and a settled fetch is such a
    change: with an expiry length shorter than a render (`0`), each outcome would
    start the next fetch at once (`use_dle` loading or refreshing for ever,
    `use_suspense` suspending again instead of raising the error). Within the floor
    it reads as `dle` does when no fetch is needed: the stored data and error.
    """
    if not _settled_lately(c, endpoint, bound):
        return c.dle(endpoint, *bound)
    return DLE(c.get_response(endpoint, *bound).data, False, c.get_error(endpoint, *bound))


async def _settle(c: AsyncController, waiting: SuspendedError) -> object:
    """What a `Suspense` waits for: `c.suspense(...)` of the call `waiting` suspended on.

    A call settled lately is settled already: its hook shows the outcome rather
    than fetching again (`_read_dle`), so the wait must not send the request either.
    """
    if _settled_lately(c, waiting.endpoint, waiting.arguments):
        return None
    return await c.suspense(waiting.endpoint, *waiting.arguments)


def _use_read(
    endpoint: Endpoint[object], bound: tuple[object, ...] | None, read: Callable[[AsyncController], R], empty: R
) -> R:
    """`read(controller)` now, and re-render this component whenever that read would show something else.

    The store tells of each change of the data or metadata of `endpoint(*bound)`;
    the read runs again then (starting a fetch the change made needed, as a render
    would) and the component re-renders only when the result differs.
    """
    binding = use_binding()
    _, set_tick = reacton.use_state(0)
    shown: reacton.core.Ref[object] = reacton.use_ref(None)
    key = None if bound is None else endpoint.key(*bound)

    def watch() -> Callable[[], None] | None:
        if bound is None:
            return None
        watching = True

        def refresh() -> None:
            if not watching:
                return  # unmounted meanwhile: its reads must not start fetches any more
            try:
                now = binding.controller.call(read, binding.controller.controller)
            except ClosedError:
                return  # the controller is gone: nothing will change any more
            except Exception:  # the call no longer reads: the render raises it to the boundary
                set_tick(lambda n: n + 1)
                return
            if _differs(shown.current, now):
                set_tick(lambda n: n + 1)

        stop = binding.watch(endpoint, bound, refresh)
        refresh()  # a change between the render's read and the watch's start would otherwise be missed

        def unwatch() -> None:
            nonlocal watching
            watching = False
            stop()

        return unwatch

    reacton.use_effect(watch, [binding, id(endpoint), key])
    if bound is None:
        return empty
    value = binding.controller.call(read, binding.controller.controller)
    shown.current = value
    return value


@overload
def use_dle(endpoint: Endpoint[T], skip: None, /) -> DLE[T]: ...
@overload
def use_dle(endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> DLE[T]: ...
@overload
def use_dle(endpoint: Endpoint[T, [P]], params: P | None, /) -> DLE[T]: ...
def use_dle(endpoint: Endpoint[T], *args: object, **kwargs: object) -> DLE[T]:
    """`DLE(data, loading, error)` for `endpoint(*args)`; starts a fetch when needed, never suspends."""
    bound = _bound(endpoint, args, kwargs)
    nothing: DLE[T] = DLE(None, False, None)
    return _use_read(endpoint, bound, lambda c: _read_dle(c, endpoint, bound or ()), nothing)


@overload
def use_cache(endpoint: Endpoint[T], skip: None, /) -> T | None: ...
@overload
def use_cache(endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T | None: ...
@overload
def use_cache(endpoint: Endpoint[T, [P]], params: P | None, /) -> T | None: ...
def use_cache(endpoint: Endpoint[T], *args: object, **kwargs: object) -> T | None:
    """The stored data for `endpoint(*args)` (None when absent); never fetches."""
    bound = _bound(endpoint, args, kwargs)
    return _use_read(endpoint, bound, lambda c: c.cache(endpoint, *(bound or ())), None)


@overload
def use_suspense(endpoint: Endpoint[T], skip: None, /) -> T | None: ...
@overload
def use_suspense(endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T: ...
@overload
def use_suspense(endpoint: Endpoint[T, [P]], params: P | None, /) -> T | None: ...
def use_suspense(endpoint: Endpoint[T], *args: object, **kwargs: object) -> T | None:
    """The data once valid; raises `SuspendedError` while it loads (see `Suspense`) and the stored error after.

    With `None` for the arguments nothing is fetched and the result is None.
    """
    bound = _bound(endpoint, args, kwargs)
    nothing: DLE[T] = DLE(None, False, None)
    controller = use_controller()  # the boundary above may belong to another provider: it must wait on this one
    dle = _use_read(endpoint, bound, lambda c: _read_dle(c, endpoint, bound or ()), nothing)
    if bound is None:
        return None  # "do not fetch" reads nothing, as the Controller's own bindings do
    if dle.loading:
        raise SuspendedError(endpoint, bound, controller)
    if dle.error is not None:
        raise dle.error
    return cast(T, dle.data)  # valid and without error: the data is there


@overload
def use_subscription(endpoint: Endpoint[object], skip: None, /) -> None: ...
@overload
def use_subscription(endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> None: ...
@overload
def use_subscription(endpoint: Endpoint[object, [P]], params: P | None, /) -> None: ...
def use_subscription(endpoint: Endpoint[object], *args: object, **kwargs: object) -> None:
    """Poll `endpoint(*args)` at its `poll_frequency` while this component is rendered."""
    bound = _bound(endpoint, args, kwargs)
    if bound is not None and endpoint.poll_frequency is None:
        raise RestLayerError(f"{endpoint.name}: use_subscription needs an endpoint with poll_frequency")
    _use_polling(endpoint, bound)


def _use_polling(endpoint: Endpoint[object], bound: tuple[object, ...] | None) -> None:
    """Poll `endpoint(*bound)` while rendered when it has a `poll_frequency`, else nothing.

    The same hooks run either way, so a component may switch between a polled and a
    plain endpoint from one render to the next (reacton refuses a changed hook count).
    """
    binding = use_binding()
    polls = bound is not None and endpoint.poll_frequency is not None
    key = endpoint.key(*bound) if bound is not None and polls else None

    def subscribe() -> Callable[[], None] | None:
        return binding.subscribe(endpoint, bound) if bound is not None and polls else None

    reacton.use_effect(subscribe, [binding, id(endpoint), key])


@overload
def use_live(endpoint: Endpoint[T], skip: None, /) -> T | None: ...
@overload
def use_live(endpoint: Endpoint[T, A], *args: A.args, **kwargs: A.kwargs) -> T: ...
@overload
def use_live(endpoint: Endpoint[T, [P]], params: P | None, /) -> T | None: ...
def use_live(endpoint: Endpoint[T], *args: object, **kwargs: object) -> T | None:
    """`use_suspense` plus polling while rendered (when the endpoint has a poll_frequency)."""
    _use_polling(endpoint, _bound(endpoint, args, kwargs))
    return cast("T | None", use_suspense(endpoint, *args, **kwargs))


# ----- boundaries --------------------------------------------------------------------------------
def _closed_meanwhile(future: concurrent.futures.Future[object]) -> bool:
    """Whether a boundary's wait ended because the controller it waited on was closed."""
    return future.cancelled() or isinstance(future.exception(), ClosedError)


def _stranded(waiting: SuspendedError, *, owned: bool) -> RestLayerError:
    """Why a `Suspense` cannot wait for `waiting`: the controller it waits on is closed.

    `owned`: that controller was created by another provider, below the boundary.
    Showing the fallback removes that provider and so its controller; a provider
    rendered again would create a new, empty one, so waiting would never end.
    """
    name = getattr(waiting.endpoint, "name", waiting.endpoint)
    if owned:
        return ClosedError(
            f"{name}: a Suspense cannot wait for data read below a ControllerProvider that creates its "
            "own controller (the fallback replaces that provider, and its controller with it); give that "
            "provider a controller, or put a Suspense below it"
        )
    return ClosedError(f"{name}: the controller was closed while a Suspense waited for its data")


def _given_anew(
    suspended: reacton.core.Ref[tuple[SuspendedError, Children | None] | None],
    waiting: SuspendedError | None,
    children: Children | None,
) -> bool:
    """Whether the parent gave a waiting `Suspense` new children since `waiting` suspended the old ones.

    As in React, they are rendered at once rather than after the old wait: switched to
    `None` ("do not fetch") or to arguments already stored, they need none of it, and
    the old request may take long. `suspended` remembers the wait and its children
    (a re-render for the boundary's own state keeps the same children).
    """
    if waiting is None:
        suspended.current = None
        return False
    if suspended.current is None or suspended.current[0] is not waiting:
        suspended.current = (waiting, children)
        return False
    return suspended.current[1] is not children


@solara.component  # type: ignore[untyped-decorator]  # solara is untyped
def Suspense(children: Children | None = None, fallback: object = None) -> object:
    """Render `children`, or `fallback` (a progress bar by default) while any of them waits for data.

    The fallback replaces the children, which are rendered anew afterwards: their own
    state (`solara.use_state`) starts over, unlike under React's Suspense. Keep what must
    outlive a load above the boundary, or read with `use_dle`.
    """
    binding = use_binding()
    exception, clear = reacton.use_exception()
    waiting = exception if isinstance(exception, SuspendedError) else None
    stranded, set_stranded = reacton.use_state(cast("RestLayerError | None", None))
    followed = reacton.use_ref(binding)
    suspended: reacton.core.Ref[tuple[SuspendedError, Children | None] | None] = reacton.use_ref(None)
    if _given_anew(suspended, waiting, children):
        clear()  # they may need nothing of what was waited for; if they do, they suspend anew
        exception = waiting = None

    def wait() -> Callable[[], None] | None:
        swapped, followed.current = followed.current is not binding, binding
        if waiting is None:
            return None
        if swapped:  # the provider was given another controller: what waited read the old one
            clear()  # render the children again: they read the new one (and suspend anew if need be)
            return None
        mounted = True
        controller = waiting.controller or binding.controller
        if controller is not binding.controller and controller in _created:
            # the fallback replaces the provider that created this controller (or it never mounted):
            # nobody else closes it, and one created again would never get its data either
            controller.close()
            set_stranded(_stranded(waiting, owned=True))
            return None

        def give_up() -> None:
            set_stranded(_stranded(waiting, owned=False))

        def settled(future: concurrent.futures.Future[object]) -> None:
            if mounted:  # delivered by this boundary's binding: the waited controller's may be gone
                binding.deliver(give_up if _closed_meanwhile(future) else clear)

        try:
            future = controller.submit(lambda c: _settle(c, waiting))
        except ClosedError:
            give_up()
            return None
        future.add_done_callback(settled)

        def unmount() -> None:
            nonlocal mounted
            mounted = False

        return unmount

    # a new controller (the provider given another one) has its own store, and the old binding is
    # closed: it would never deliver the end of a wait begun there
    reacton.use_effect(wait, [waiting, binding])
    if stranded is not None:
        raise stranded
    if exception is not None and waiting is None:
        raise exception
    if waiting is not None:
        return fallback if fallback is not None else solara.ProgressLinear(True)
    return _stack(children)


@solara.component  # type: ignore[untyped-decorator]  # solara is untyped
def ErrorBoundary(
    children: Children | None = None,
    fallback: Callable[[BaseException, Callable[[], None]], object] | None = None,
) -> object:
    """Render `children`, or `fallback(error, retry)` (an error box by default) when one raises."""
    exception, clear = reacton.use_exception()
    if isinstance(exception, SuspendedError):
        raise exception  # loading is the Suspense boundary's business
    if exception is not None:
        if fallback is not None:
            return fallback(exception, clear)
        return solara.v.Alert(type="error", outlined=True, children=[f"{type(exception).__name__}: {exception}"])
    return _stack(children)
