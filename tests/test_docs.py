"""Every ```python block of docs/**/*.md runs against the example API.

One test per page: the page's blocks run in order in one namespace that starts
with `api_url` (the example server's base URL, seed data restored). Blocks may
use top-level `await`; sync.md runs without an event loop, as its readers would.
A block whose fence says ```python skip is not run (non-runnable fragments only).
Code is compiled with the page's file name and line numbers, so a traceback points
at the line of the Markdown page that failed.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from examples.todo_api import LocalServer

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SYNC_PAGES = {"guides/sync.md"}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its source and the 1-based line its code starts on."""

    page: str
    line: int
    source: str


def _python_blocks(path: Path, root: Path = DOCS) -> list[Block]:
    """The runnable ```python blocks of one page, in order (```python skip left out)."""
    page = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence, indent = match["fence"], match["indent"]
        words = match["info"].split()
        start = i + 1
        i = start
        while i < len(lines) and not (lines[i].strip().startswith(fence) and lines[i].strip().strip(fence[0]) == ""):
            i += 1
        body = [line[len(indent) :] if line.startswith(indent) else line for line in lines[start:i]]
        i += 1
        if words[:1] == ["python"] and "skip" not in words[1:]:
            blocks.append(Block(page, start + 1, textwrap.dedent("\n".join(body))))
    return blocks


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def _compile(block: Block, flags: int) -> Any:
    # Leading newlines make line numbers in tracebacks those of the Markdown page.
    source = "\n" * (block.line - 1) + block.source
    return compile(source, str(DOCS / block.page), "exec", flags=flags, dont_inherit=True)


def _namespace(api: LocalServer, page: str) -> dict[str, Any]:
    return {"__name__": f"docs.{page.removesuffix('.md').replace('/', '.')}", "api_url": api.url}


def test_pages_found() -> None:
    """The docs exist and hold runnable examples (a wrong DOCS path must not pass silently)."""
    pages = {p.relative_to(DOCS).as_posix() for p in _pages()}
    assert {"index.md", "getting-started.md", *SYNC_PAGES} <= pages
    assert sum(len(_python_blocks(p)) for p in _pages()) > 20


def test_block_extraction(tmp_path: Path) -> None:
    """Fence parsing: info words, `skip`, other languages, indented fences."""
    page = tmp_path / "p.md"
    page.write_text(
        "```python\na = 1\n```\n"
        "```python skip\nnot python\n```\n"
        "```bash\nls\n```\n"
        "!!! note\n    ```python\n    b = a + 1\n    ```\n",
        encoding="utf-8",
    )
    blocks = _python_blocks(page, root=tmp_path)
    assert [(b.line, b.source) for b in blocks] == [(2, "a = 1"), (12, "b = a + 1")]


ASYNC_PAGES = [p for p in _pages() if p.relative_to(DOCS).as_posix() not in SYNC_PAGES]


@pytest.mark.parametrize("path", ASYNC_PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
async def test_async_page(path: Path, api: LocalServer) -> None:
    """Run an async page's examples in order, with top-level await, in one event loop."""
    import restlayer

    page = path.relative_to(DOCS).as_posix()
    namespace = _namespace(api, page)
    try:
        for block in _python_blocks(path):
            code = _compile(block, ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(code, namespace)
            if inspect.iscoroutine(result):
                await result
    finally:
        _close_controllers(namespace)
        await restlayer.aclose()


@pytest.mark.parametrize("page", sorted(SYNC_PAGES))
def test_sync_page(page: str, api: LocalServer) -> None:
    """Run a page written for blocking code: no event loop, no top-level await."""
    namespace = _namespace(api, page)
    try:
        for block in _python_blocks(DOCS / page):
            exec(_compile(block, 0), namespace)
    finally:
        _close_controllers(namespace)


def _close_controllers(namespace: dict[str, Any]) -> None:
    """Close controllers a page left open, so no polling outlives its test (close is idempotent)."""
    from restlayer.core import Controller
    from restlayer.sync import Controller as SyncController

    for value in list(namespace.values()):
        if isinstance(value, (Controller, SyncController)):
            value.close()


_DIRECTIVE = re.compile(r"^::: (?P<target>\S+)(?P<options>(?:\n[ \t]+\S.*)*)", re.M)


def _rendered(target: str, options: str) -> list[object]:
    """The objects one `::: target` directive renders.

    Like mkdocstrings, a dotted name that is a module is the module, even where its package
    re-exports a function of the same name (`restlayer.rest.resource`); a module directive
    renders the members its `members:` option lists.
    """
    import importlib

    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError:
        owner, _, name = target.rpartition(".")
        return [getattr(importlib.import_module(owner), name)]
    return [getattr(module, name) for name in re.findall(r"^\s+- (\w+)$", options, re.M)]


def _public_modules() -> list[Any]:
    """restlayer and its public sub-modules (no `_private` part)."""
    import importlib
    import pkgutil

    import restlayer

    names = ["restlayer"] + [
        info.name
        for info in pkgutil.walk_packages(restlayer.__path__, "restlayer.")
        if not any(part.startswith("_") for part in info.name.split("."))
    ]
    return [importlib.import_module(name) for name in names]


def test_every_public_name_is_documented_in_the_reference() -> None:
    """Each name of an `__all__` has a docstring and is rendered by a page of docs/reference/."""
    rendered = {
        id(obj)
        for page in sorted((DOCS / "reference").glob("*.md"))
        for found in _DIRECTIVE.finditer(page.read_text(encoding="utf-8"))
        for obj in _rendered(found["target"], found["options"])
    }
    missing, undocumented = [], []
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if id(value) not in rendered:
                missing.append(f"{module.__name__}.{name}")
            if (inspect.isclass(value) or inspect.isfunction(value)) and not inspect.getdoc(value):
                undocumented.append(f"{module.__name__}.{name}")
    assert missing == [] and undocumented == []
