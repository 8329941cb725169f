"""`Binding`: what a `ControllerProvider` hands its component tree.

It pairs a blocking `restlayer.sync.Controller` (whose own loop thread runs the
async Controller) with one "delivery" thread. Store changes are noticed on the
loop thread, but a Solara re-render must not run there (rendering reads the
store through that very loop), so callbacks that touch component state are
handed to the delivery thread instead.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable

from restlayer.core import Endpoint
from restlayer.sync import Controller as SyncController


class Binding:
    """A controller plus the thread that delivers its change notifications to components."""

    def __init__(self, controller: SyncController, *, owned: bool) -> None:
        self.controller = controller
        self.owned = owned
        self.closed = False
        self._lock = threading.Lock()
        self._delivery = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="restlayer-ui")
        self.watching = 0  # live `watch` registrations made by hooks (drops to 0 when all unmount)
        self.subscribed = 0  # live polling subscriptions made by hooks

    def deliver(self, fn: Callable[[], object], *, always: bool = False) -> None:
        """Run `fn` on the delivery thread, unless this binding is closed.

        `always`: run it even so, for what must happen once whatever the UI does (settling
        a future a caller may wait on): on a thread of its own when closed, or where the
        binding closes when it was still queued then. Never inline: the caller may be the
        controller's loop thread, where a callback blocking on the controller would hang it.
        """
        with self._lock:
            if not self.closed:
                queued = self._delivery.submit(fn)
                if always:
                    queued.add_done_callback(lambda done: fn() if done.cancelled() else None)
                return
        if always:
            threading.Thread(target=fn, name="restlayer-ui-late", daemon=True).start()

    def watch(
        self, endpoint: Endpoint[object], args: tuple[object, ...], on_change: Callable[[], object]
    ) -> Callable[[], None]:
        """Call `on_change()` (on the delivery thread) whenever `endpoint(*args)` may show differently.

        That is a change of its data or of its metadata (a fetch settled with an error
        or with equal data, an invalidation, an expiry): a hook shows loading and errors
        too, and must fetch again what was invalidated. `args` are canonical (`endpoint.bind`).
        """

        def notify(_data: object) -> None:
            self.deliver(on_change)

        unwatch = self.controller.watch_response(endpoint, *args, callback=notify)
        return self._counted("watching", unwatch)

    def subscribe(self, endpoint: Endpoint[object], args: tuple[object, ...]) -> Callable[[], None]:
        """Poll `endpoint(*args)` until the returned function is called."""
        self.controller.subscribe(endpoint, *args)
        return self._counted("subscribed", lambda: self.controller.unsubscribe(endpoint, *args))

    def _counted(self, counter: str, undo: Callable[[], object]) -> Callable[[], None]:
        """Count one live watch/subscription in `counter`; the returned stop runs `undo` once."""
        with self._lock:
            setattr(self, counter, getattr(self, counter) + 1)
        done = False

        def stop() -> None:
            nonlocal done
            with self._lock:
                if done:
                    return
                done = True
                setattr(self, counter, getattr(self, counter) - 1)
                if self.closed and self.owned:  # the controller is gone, and its watchers with it
                    return
            undo()

        return stop

    def close(self) -> None:
        """Stop delivering; close the controller when this binding created it."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        self._delivery.shutdown(wait=False, cancel_futures=True)
        if self.owned:
            self.controller.close()
