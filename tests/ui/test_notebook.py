"""The hooks inside Jupyter: a notebook run by nbclient in a real IPython kernel against the example API.

The notebook renders a `use_suspense` component under a provider, displays its
widget, then reads the widget tree in the kernel: first the fetched title,
then the title after a store change. Every wait in the kernel is bounded, and
so is each cell (nbclient's timeout).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from examples.todo_api import LocalServer

CELL_TIMEOUT = 120  # s, per cell and for the kernel's start (a loaded shared machine is slow to import solara)

SETUP = '''
import json
import threading

import solara

from restlayer import Entity, resource
from restlayer.solara import ControllerProvider, Suspense, use_suspense
from restlayer.sync import Controller


class Todo(Entity):
    id: int | None = None
    userId: int = 1
    title: str = ""
    completed: bool = False


TodoResource = resource(path="/todos/:id", schema=Todo, url_prefix=API_URL)
shown = []  # titles whose widgets are in place (recorded by an effect, after reconciliation)
shown_changed = threading.Condition()


@solara.component
def TodoTitle(id):
    todo = use_suspense(TodoResource.get, id=id)

    def note():
        with shown_changed:
            shown.append(todo.title)
            shown_changed.notify_all()

    solara.use_effect(note, [todo.title])
    return solara.Text(todo.title)


def wait_for(check, what):
    with shown_changed:
        if not shown_changed.wait_for(check, timeout=30):
            raise AssertionError(f"timed out waiting for {what}; shown: {shown!r}")


def texts(widget):
    """Every text in the widget tree, depth first."""
    found = []
    for child in getattr(widget, "children", None) or []:
        found.extend([child] if isinstance(child, str) else texts(child))
    return found


ctrl = Controller()
page = ControllerProvider(
    children=[Suspense(children=[TodoTitle(1)], fallback=solara.Text("Loading…"))], controller=ctrl
)
box, rc = solara.render(page)
'''

DISPLAY = "box"
FETCHED = """
wait_for(lambda: len(shown) >= 1, "the fetched todo")
with rc.thread_lock:  # the effect runs inside a render pass: read the tree once that pass is over
    print(json.dumps({"model_id": box.model_id, "texts": texts(box), "shown": shown}))
"""
CHANGED = """
ctrl.set(Todo, {"id": 1}, {"id": 1, "title": "renamed in a notebook"})
wait_for(lambda: "renamed in a notebook" in shown, "the re-render")
with rc.thread_lock:
    print(json.dumps({"texts": texts(box), "shown": shown}))
"""
CLOSE = """
rc.close()
ctrl.close()
"""


def notebook(api_url: str) -> Any:
    cells = [f"API_URL = {api_url!r}\n" + SETUP, DISPLAY, FETCHED, CHANGED, CLOSE]
    book = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]  # nbformat is untyped
    book.cells = [nbformat.v4.new_code_cell(source) for source in cells]  # type: ignore[no-untyped-call]
    return book


def printed(cell: Any) -> Any:
    """The JSON line the cell printed."""
    streams = [out["text"] for out in cell.outputs if out["output_type"] == "stream" and out["name"] == "stdout"]
    return json.loads("".join(streams).strip().splitlines()[-1])


def test_hooks_render_and_re_render_in_a_jupyter_kernel(api: LocalServer, tmp_path: Path) -> None:
    book = notebook(api.url)
    client = NotebookClient(
        book,
        timeout=CELL_TIMEOUT,
        startup_timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    seed = api.db.get("todos", 1)
    assert seed is not None
    title = seed["title"]
    view = [out for out in book.cells[1].outputs if out["output_type"] == "execute_result"]
    assert len(view) == 1, book.cells[1].outputs
    shown_widget = view[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    fetched = printed(book.cells[2])
    assert fetched["model_id"] == shown_widget  # the displayed output is the tree the hooks render into
    assert fetched["shown"] == [title]
    assert fetched["texts"] == [title]  # the fallback is gone, the data is in the widget
    changed = printed(book.cells[3])
    assert changed["shown"] == [title, "renamed in a notebook"]
    assert changed["texts"] == ["renamed in a notebook"]
    assert len(api.requests.matching("GET", "/todos/1")) == 1
