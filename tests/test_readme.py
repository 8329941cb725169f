"""A new user's path: a fresh copy of the repository, only the README's first command.

The command is read from the README itself (its first bash block), so the test
breaks when the README and the project drift apart. It builds a new `.venv`
from the lock file, which takes a while on a cold cache, so it carries the
`readme` marker: a plain `pytest` deselects it and `python3 dev.py test` runs
it once, last (`pytest -m readme` runs it alone).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_demo import DEMO_CLAIMS

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[list[str]]:
    """The commands of the README's first bash block, comments stripped."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "README has no bash block"
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line) for line in lines if line]


def tracked_copy(dest: Path) -> None:
    """Copy what git tracks (plus new files not ignored): what a fresh clone would hold."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def test_readme_commands_are_the_project_entry_points() -> None:
    commands = readme_commands()
    assert commands[:2] == [["python3", "dev.py", "demo"], ["python3", "dev.py", "test"]]
    assert "python3 dev.py test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.readme
@pytest.mark.skipif(shutil.which("python3") is None or shutil.which("git") is None, reason="needs python3 and git")
def test_first_command_in_a_fresh_copy(tmp_path: Path) -> None:
    tracked_copy(tmp_path)
    assert not (tmp_path / ".venv").exists()
    demo = readme_commands()[0]
    done = subprocess.run(demo, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / ".venv" / "bin" / "python").exists()
    assert "FAIL" not in done.stdout
    assert done.stdout.count("OK  ") == len(DEMO_CLAIMS)
    assert "Server stopped." in done.stdout
