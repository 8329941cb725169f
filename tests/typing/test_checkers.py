"""The typing tests can fail: both checkers, run as `dev.py test` runs them, reject a wrong type.

`tests/typing/user_*.py` are user programs checked by mypy (pyproject's files) and
pyright (pyproject's [tool.pyright]); they are never imported. This test guards the
configuration itself: a regressed type (a wrong `assert_type`) and an error that
no longer happens (an unused ignore) must each fail both checkers.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

REGRESSED = """
from typing_extensions import assert_type

from restlayer import Entity, RestEndpoint


class Todo(Entity):
    id: int = 0


endpoint = RestEndpoint(path="/todos/:id", schema=Todo)
assert_type(endpoint, RestEndpoint[list[Todo]])
fine: int = 1  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
"""


def _run(*command: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.fixture
def regressed(tmp_path: Path) -> Path:
    program = tmp_path / "regressed.py"
    program.write_text(REGRESSED)
    return program


def test_mypy_rejects_a_regressed_type_and_an_unused_ignore(regressed: Path) -> None:
    result = _run(BIN / "mypy", "--config-file", ROOT / "pyproject.toml", "--no-incremental", regressed)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "[assert-type]" in result.stdout and "[unused-ignore]" in result.stdout


def test_pyright_rejects_a_regressed_type_and_an_unused_ignore(regressed: Path) -> None:
    result = _run(BIN / "pyright", "--project", ROOT / "pyproject.toml", regressed)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "reportAssertTypeFailure" in result.stdout
    assert "reportUnnecessaryTypeIgnoreComment" in result.stdout
