"""The todo app (examples.todo_app) in headless chromium against the real example API.

Every wait is one of Playwright's auto-waiting expectations with a bounded timeout.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

playwright_api = pytest.importorskip("playwright.sync_api", reason="install the dev extra: python3 dev.py setup")
expect = playwright_api.expect

WAIT = 15_000  # ms, upper bound of every expectation


def todo(page: Any, title: str) -> Any:
    """The checkbox of the todo titled `title`."""
    return page.get_by_role("checkbox", name=title, exact=True)


def row(page: Any, title: str) -> Any:
    """The whole row (checkbox and buttons) of the todo titled `title`."""
    return page.locator(".todo-item").filter(has=todo(page, title))


def add(page: Any, title: str) -> None:
    page.get_by_label("What needs to be done?").fill(title)
    page.get_by_role("button", name="Add").click()


def test_page_renders_the_first_users_todos(open_page: Any, ui_api: Any) -> None:
    page = open_page()
    first = ui_api.db.find("todos", {"userId": 1})
    expect(todo(page, first[0]["title"])).to_be_visible(timeout=WAIT)
    expect(todo(page, first[-1]["title"])).to_be_visible(timeout=WAIT)
    left = sum(1 for t in first if not t["completed"])
    expect(page.locator(".todo-count")).to_have_text(f"{left} items left", timeout=WAIT)


def test_created_todo_shows_and_is_stored_on_the_server(open_page: Any, ui_api: Any) -> None:
    page = open_page()
    expect(page.locator(".todo-count")).to_be_visible(timeout=WAIT)
    add(page, "buy milk")
    expect(todo(page, "buy milk")).to_be_visible(timeout=WAIT)
    expect(page.get_by_label("What needs to be done?")).to_have_value("")
    # a fresh page (its own controller, nothing cached) reads it back from the server
    fresh = open_page()
    expect(todo(fresh, "buy milk")).to_be_visible(timeout=WAIT)
    assert [t["title"] for t in ui_api.db.find("todos", {"title": "buy milk"})] == ["buy milk"]


def test_second_page_sees_the_first_pages_change_without_reload(open_page: Any, ui_api: Any) -> None:
    first, second = open_page(), open_page()
    for page in (first, second):
        expect(page.locator(".todo-count")).to_be_visible(timeout=WAIT)
    add(first, "seen elsewhere")
    expect(todo(second, "seen elsewhere")).to_be_visible(timeout=WAIT)


def test_change_made_through_the_rest_api_appears_without_reload(open_page: Any, ui_api: Any) -> None:
    page = open_page()
    title = ui_api.db.get("todos", 1)["title"]
    expect(todo(page, title)).to_be_visible(timeout=WAIT)
    reply = httpx.patch(f"{ui_api.url}/todos/1", json={"title": "renamed by another client"})
    assert reply.status_code == 200
    expect(todo(page, "renamed by another client")).to_be_visible(timeout=WAIT)
    expect(todo(page, title)).to_have_count(0)


def test_refused_rename_rolls_back_and_shows_the_error(open_page: Any, ui_api: Any) -> None:
    page = open_page()
    title = ui_api.db.get("todos", 1)["title"]
    row(page, title).get_by_role("button", name="Rename").click()
    page.get_by_label("Rename").fill("REJECT")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".error-banner")).to_contain_text("title REJECT is rejected by the server", timeout=WAIT)
    expect(todo(page, title)).to_be_visible(timeout=WAIT)
    expect(todo(page, "REJECT")).to_have_count(0)
    assert ui_api.db.get("todos", 1)["title"] == title


def test_toggle_and_delete_reach_the_server(open_page: Any, ui_api: Any) -> None:
    page = open_page()
    first = ui_api.db.find("todos", {"userId": 1})
    done, gone = first[0], first[1]
    box = todo(page, done["title"])
    expect(box).to_be_visible(timeout=WAIT)
    row(page, done["title"]).locator("label").click()  # vuetify's label covers the input itself
    expect(box).to_be_checked(checked=not done["completed"], timeout=WAIT)
    row(page, gone["title"]).get_by_role("button", name="Delete").click()
    expect(todo(page, gone["title"])).to_have_count(0, timeout=WAIT)
    # a fresh page reads the server's state: both changes were stored
    fresh = open_page()
    expect(todo(fresh, done["title"])).to_be_checked(checked=not done["completed"], timeout=WAIT)
    expect(todo(fresh, first[2]["title"])).to_be_visible(timeout=WAIT)
    expect(todo(fresh, gone["title"])).to_have_count(0)


def test_each_todo_title_is_drawn_once_right_of_its_checkbox(open_page: Any, ui_api: Any) -> None:
    page = open_page()
    title = ui_api.db.get("todos", 1)["title"]
    expect(todo(page, title)).to_be_visible(timeout=WAIT)
    expect(row(page, title).get_by_text(title, exact=True)).to_have_count(1)
    tick = row(page, title).locator(".v-selection-control__input").bounding_box()
    label = row(page, title).locator("label").bounding_box()
    assert tick is not None and label is not None
    assert label["x"] >= tick["x"] + tick["width"]  # beside the tick, not squeezed into its box
