"""Module boundaries: collaborators of the Controller use its public surface only."""

from __future__ import annotations

import ast
from pathlib import Path

import restlayer

SRC = Path(restlayer.__file__).resolve().parent
CONTROLLER_PY = SRC / "core" / "controller.py"


def _private_controller_members() -> set[str]:
    """Every `_name` the Controller class defines or assigns on `self` (dunders excluded)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(CONTROLLER_PY.read_text())):
        if isinstance(node, ast.ClassDef) and node.name == "Controller":
            for inner in ast.walk(node):
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(inner.name)
                elif isinstance(inner, ast.Attribute) and _on_self(inner):
                    names.add(inner.attr)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _on_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


#: Names a Controller goes by in collaborators (`controller`, `ctrl`, `self._controller`).
_CONTROLLER_NAMES = {"controller", "ctrl", "_controller"}


def _names_a_controller(owner: ast.expr) -> bool:
    if isinstance(owner, ast.Name):
        return owner.id in _CONTROLLER_NAMES
    return isinstance(owner, ast.Attribute) and owner.attr in _CONTROLLER_NAMES


def _offences(source: str, private: set[str], *, any_private_on_controller: bool = True) -> list[str]:
    """`x._member` (x not `self`) naming a private Controller member, any `controller._x`,
    and assignments to `x.memo`."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        on_self = _on_self(node)
        private_name = node.attr.startswith("_") and not node.attr.startswith("__")
        if (node.attr in private and not on_self) or (
            any_private_on_controller and private_name and _names_a_controller(node.value)
        ):
            found.append(f"{node.lineno}: .{node.attr}")
        if node.attr == "memo" and isinstance(node.ctx, ast.Store) and not on_self:
            found.append(f"{node.lineno}: replaces .memo")
    return found


def test_private_member_scan_knows_the_controllers_internals() -> None:
    """The scan is only meaningful if it finds the Controller's private members (and not its public API)."""
    private = _private_controller_members()
    assert {"_state", "_read", "_hold", "_commit", "_current"} <= private
    assert not {"resolve", "abort", "poll", "get_committed_state"} & private


def test_scan_flags_private_controller_access() -> None:
    """A planted `controller._state` read and a `.memo` replacement are both reported."""
    source = "def f(controller):\n    controller.memo = None\n    return controller._state\n"
    assert sorted(_offences(source, _private_controller_members())) == ["2: replaces .memo", "3: ._state"]


#: sync.py's `ctrl` is its own blocking facade (defined there), not the async Controller.
_OWN_FACADE = SRC / "sync.py"


def test_scan_flags_a_private_name_the_controller_no_longer_has() -> None:
    """`controller._anything` is reported even when the Controller has no such member (a stale name)."""
    source = "def f(self, controller):\n    controller._abort_fetch(1)\n    self._controller._poll(2)\n"
    assert sorted(_offences(source, set())) == ["2: ._abort_fetch", "3: ._poll"]


def test_no_module_reaches_into_controller_private_members() -> None:
    """Managers, GC, watchers and helpers use the documented Controller API (`resolve`, `abort`, `poll`, ...)."""
    private = _private_controller_members()
    offences = [
        f"{path.relative_to(SRC)}:{offence}"
        for path in sorted(SRC.rglob("*.py"))
        if path != CONTROLLER_PY
        for offence in _offences(path.read_text(), private, any_private_on_controller=path != _OWN_FACADE)
    ]
    assert offences == []
