"""Project bootstrap: `python3 dev.py demo` runs the demo, `python3 dev.py test` runs every check.

Needs only python3 with pip and venv: the first run creates `.venv/` and installs the
locked dependencies (uv.lock, through uv installed from PyPI); later runs reuse it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import build_compiled

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".restlayer-lock-hash"


def _run(*cmd: str | Path) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's upgrade banner is noise here
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)


def _lock_hash() -> str:
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "uv.lock"):
        path = ROOT / name
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def setup() -> None:
    """Create .venv and install the locked dev dependencies unless already done; see to the system programs."""
    if not (STAMP.exists() and STAMP.read_text() == _lock_hash()):
        _install()
    _system_packages()
    _compile()


def _compile() -> None:
    """Build the optional compiled engine (build_compiled.py) unless it was built from the current sources.

    A stale compiled module would shadow its edited source, so it is removed before any rebuild.
    RESTLAYER_PURE=1 at setup leaves the package pure Python (no build).
    """
    probe = "import build_compiled as b; print(b.source_hash()); print(b.toolchain_missing() or '')"
    out = subprocess.run([str(BIN / "python"), "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    digest, missing = [*out.stdout.splitlines(), ""][:2]
    if os.environ.get("RESTLAYER_PURE", "") not in ("", "0") or missing:
        if build_compiled.built_files():
            _run(BIN / "python", "build_compiled.py", "--clean")
        if missing:
            print(f"+ not compiling the engine ({missing}): the pure-Python modules run", flush=True)
        return
    if build_compiled.built_from() == digest:
        return
    if _run(BIN / "python", "build_compiled.py") != 0:
        _run(BIN / "python", "build_compiled.py", "--clean")
        print("  compiling the engine failed: the pure-Python modules run", flush=True)


def compiled_built() -> bool:
    """Whether a compiled engine sits next to its sources, with the record of what it was built from."""
    return build_compiled.built_from() is not None


#: Programs some tests drive -> their Debian package (redis-server: shared-store tests; chromium: browser
#: tests; cc: the C compiler that builds the optional compiled engine).
SYSTEM_PACKAGES = {"redis-server": "redis-server", "chromium": "chromium", "cc": "build-essential"}


def _system_packages() -> None:
    """As root on Debian/Ubuntu, install the missing SYSTEM_PACKAGES (quietly, once)."""
    if os.name != "posix" or os.geteuid() != 0:
        return
    missing = sorted({package for program, package in SYSTEM_PACKAGES.items() if not shutil.which(program)})
    tried = VENV / ".system-packages-tried"
    marker = " ".join(missing)
    if not missing or (tried.exists() and tried.read_text() == marker):
        return
    if not Path("/etc/debian_version").exists() or not shutil.which("apt-get"):
        return
    print(f"+ apt-get install -y {marker}  (Redis and browser tests, compiled engine)", flush=True)
    code = _quiet("apt-get", "install", "-y", "-qq", *missing)
    if code != 0:  # a fresh machine may have no package lists yet
        _quiet("apt-get", "update", "-qq")
        code = _quiet("apt-get", "install", "-y", "-qq", *missing)
    if code != 0:
        print(f"  could not install {marker}: their tests skip (and fail under CI=true)", flush=True)
    tried.write_text(marker)


def _quiet(*cmd: str) -> int:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.call(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def _install() -> None:
    """Create .venv and install the locked dev dependencies."""
    if not (BIN / "python").exists():
        venv.create(VENV, with_pip=True)
    steps = [
        (BIN / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "uv"),
        (BIN / "uv", "sync", "--frozen", "--extra", "dev", "--python", BIN / "python"),
    ]
    for step in steps:
        if _run(*step) != 0:
            sys.exit("setup failed")
    STAMP.write_text(_lock_hash())


#: Branch coverage (percent) the suite must keep; raise it as tests are added, never lower it.
COVERAGE_FLOOR = "94.0"

#: The tests run a second time on the compiled engine (the main run, with coverage, on the pure-Python one).
COMPILED_TESTS = ("tests/schema", "tests/core", "tests/test_engine_choice.py")

#: What `ruff check` and `ruff format --check` guard: every Python file of the project.
LINTED = ("src", "tests", "bench", "examples", "dev.py", "build_compiled.py", "hatch_build.py")


def check_commands(pytest_args: list[str]) -> list[tuple[str | Path, ...]]:
    """The commands `test` runs, in order; `pytest_args` go to the main pytest run."""
    checks: list[tuple[str | Path, ...]] = [
        (BIN / "ruff", "check", *LINTED),
        (BIN / "ruff", "format", "--check", "--quiet", *LINTED),
        (BIN / "mypy",),
        (BIN / "pyright",),  # tests/typing as a user's strict pyright sees it (mypy checks it too)
        (
            BIN / "python",
            "-m",
            "pytest",
            "--cov",
            "--cov-report=term",
            f"--cov-fail-under={COVERAGE_FLOOR}",
            "--engine=pure",
            *pytest_args,
        ),
    ]
    if compiled_built():  # the engine's tests once more, on the compiled modules
        checks.append((BIN / "python", "-m", "pytest", "--engine=compiled", *COMPILED_TESTS))
    if (ROOT / "mkdocs.yml").exists():
        checks.append((BIN / "mkdocs", "build", "--strict", "--quiet", "--site-dir", VENV / "site"))
    # builds a fresh .venv from the registry in a copy of the tree: slow, so once and last
    checks.append((BIN / "python", "-m", "pytest", "-m", "readme"))
    return checks


def test() -> int:
    """Lint, type-check, run the suite with branch coverage, build the docs, then the slow README check last.

    Extra arguments go to the main pytest run, e.g. `python3 dev.py test -x`.
    """
    for check in check_commands(sys.argv[2:]):
        code = _run(*check)
        if code != 0:  # pytest exits 5 when it collected nothing: that is a failure too
            return code
    return 0


def demo() -> int:
    """Start the embedded example API and run the narrated demo against it."""
    return _run(BIN / "python", "-m", "examples.demo", *sys.argv[2:])


def main() -> int:
    commands = {"test": test, "demo": demo, "setup": lambda: 0}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(f"usage: python3 dev.py {{{'|'.join(commands)}}} [args...]")
        return 2
    setup()
    return commands[sys.argv[1]]()


if __name__ == "__main__":
    sys.exit(main())
