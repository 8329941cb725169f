"""The page of the todo app: lists per user, create, toggle, rename, delete, all optimistic.

Solara imports this module (`SOLARA_APP=examples.todo_app.app`); the API it talks
to is read from the `RESTLAYER_TODO_API` environment variable, set by
`python -m examples.todo_app`. Every list polls the API (`TODO_APP_POLL_MS`,
default 1000 ms), so a change made elsewhere shows up without a reload; a change
the server refuses is rolled back by the store and explained in a banner.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import solara

from restlayer import Entity, resource
from restlayer.solara import ControllerProvider, Suspense, use_fetch, use_live, use_suspense

API = os.environ.get("RESTLAYER_TODO_API", "http://127.0.0.1:8000")
POLL_MS = int(os.environ.get("TODO_APP_POLL_MS", "1000"))


class Todo(Entity):
    id: int | None = None
    userId: int = 1
    title: str = ""
    completed: bool = False


class User(Entity):
    id: int | None = None
    name: str = ""
    username: str = ""


TodoResource = resource(path="/todos/:id", schema=Todo, url_prefix=API, optimistic=True)
UserResource = resource(path="/users/:id", schema=User, url_prefix=API)
todo_list = TodoResource.get_list.extend(poll_frequency=POLL_MS)

ErrorSink = Callable[[BaseException | None], None]
ROW = {"align-items": "center"}  # a row's controls on one line, whatever their heights
PAGE = {"max-width": "760px", "padding": "24px 16px 64px"}  # 64px at the bottom: clear of Solara's badge


def explain(error: BaseException) -> str:
    """A refused change in words: the server's own message when its reply carries one."""
    response = getattr(error, "response", None)
    if response is not None:
        try:
            return f"{response.status_code}: {response.json()['message']}"
        except (ValueError, KeyError, TypeError):
            pass
    return str(error)


def report(future: Future[Any], on_error: ErrorSink) -> None:
    """Show the error of a refused change in the banner (the store has already rolled it back)."""
    future.add_done_callback(lambda done: None if done.cancelled() else on_error(done.exception()))


@solara.component
def TodoItem(todo: Todo, on_error: ErrorSink) -> Any:
    """One todo: a checkbox to toggle it, and buttons to rename or delete it."""
    fetch = use_fetch()
    editing, set_editing = solara.use_state(False)
    draft, set_draft = solara.use_state(todo.title)

    def toggle(done: bool) -> None:
        report(fetch(TodoResource.partial_update, {"id": todo.id}, {"completed": done}), on_error)

    def rename() -> None:
        set_editing(False)
        report(fetch(TodoResource.partial_update, {"id": todo.id}, {"title": draft}), on_error)

    def start_editing() -> None:
        set_draft(todo.title)
        set_editing(True)

    def delete() -> None:
        report(fetch(TodoResource.delete, {"id": todo.id}), on_error)

    if editing:
        return solara.Row(
            children=[
                solara.InputText("Rename", value=draft, on_value=set_draft, continuous_update=True),
                solara.Button("Save", on_click=rename),
                solara.Button("Cancel", on_click=lambda: set_editing(False), text=True),
            ],
            classes=["todo-item"],
            style=ROW,
        )
    return solara.Row(
        children=[
            # not solara.Checkbox: it also passes the label as the checkbox's content, which Vuetify 3
            # draws a second time, squeezed into the 40 px box of the tick
            solara.v.Checkbox(label=todo.title, v_model=todo.completed, on_v_model=toggle, hide_details=True),
            solara.Button("Rename", on_click=start_editing, text=True),
            solara.Button("Delete", on_click=delete, text=True),
        ],
        classes=["todo-item"],
        style=ROW,
    )


@solara.component
def TodoList(user_id: int, on_error: ErrorSink) -> Any:
    """The todos of one user, polled while shown, with a field to add one."""
    todos: list[Todo] = use_live(todo_list, userId=user_id)
    fetch = use_fetch()
    text, set_text = solara.use_state("")

    def add() -> None:
        title = text.strip()
        if not title:
            return
        set_text("")
        report(fetch(TodoResource.get_list.push, {"userId": user_id}, {"userId": user_id, "title": title}), on_error)

    left = sum(1 for t in todos if not t.completed)
    return solara.Column(
        children=[
            solara.Row(
                children=[
                    solara.InputText("What needs to be done?", value=text, on_value=set_text, continuous_update=True),
                    solara.Button("Add", on_click=add, color="primary"),
                ],
                style=ROW,
            ),
            *[TodoItem(todo, on_error).key(f"todo-{todo.id}") for todo in todos],
            solara.Text(f"{left} item{'s' if left != 1 else ''} left", classes=["todo-count"]),
        ]
    )


@solara.component
def Users(user_id: int, on_pick: Callable[[int], None]) -> Any:
    """A button per user; the chosen one is highlighted."""
    users: list[User] = use_suspense(UserResource.get_list)
    return solara.Row(
        children=[
            solara.Button(u.name, on_click=lambda u=u: on_pick(u.id), outlined=u.id != user_id, color="primary")
            for u in users
        ]
    )


@solara.component
def TodoApp() -> Any:
    """The whole page below the provider: user picker, error banner, the chosen user's list."""
    user_id, set_user_id = solara.use_state(1)
    error, set_error = solara.use_state(None)

    def on_error(failure: BaseException | None) -> None:
        if failure is not None:
            set_error(failure)

    banner = []
    if error is not None:
        banner = [
            solara.Row(
                children=[
                    solara.v.Alert(
                        type="error",
                        children=[f"Change refused: {explain(error)}"],
                        class_="error-banner",
                        style_="flex-grow: 1",
                    ),
                    solara.Button("Dismiss", on_click=lambda: set_error(None), text=True),
                ],
                style=ROW,
            )
        ]
    return solara.Column(
        children=[
            solara.Markdown("# restlayer todos"),
            Suspense(children=[Users(user_id, set_user_id)]),
            *banner,
            Suspense(children=[TodoList(user_id, on_error).key(f"list-{user_id}")], fallback=solara.Text("Loading…")),
        ],
        style=PAGE,
    )


@solara.component
def Page() -> Any:
    """Solara's entry point: one controller per browser page, closed when the page goes."""
    return ControllerProvider(children=[TodoApp()])
