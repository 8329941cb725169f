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


def _offences(source: str, private: set[str]) -> list[str]:
    """`x._member` (x not `self`) naming a private Controller member, and assignments to `x.memo`."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        on_self = _on_self(node)
        if node.attr in private and not on_self:
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


def test_no_module_reaches_into_controller_private_members() -> None:
    """Managers, GC, watchers and helpers use the documented Controller API (`resolve`, `abort`, `poll`, ...)."""
    private = _private_controller_members()
    offences = [
        f"{path.relative_to(SRC)}:{offence}"
        for path in sorted(SRC.rglob("*.py"))
        if path != CONTROLLER_PY
        for offence in _offences(path.read_text(), private)
    ]
    assert offences == []
