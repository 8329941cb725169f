"""Build restlayer's optional compiled part: the modules in COMPILED, compiled to C by mypyc.

`python3 dev.py setup` runs this (with the project's .venv python) where a C compiler and
the Python headers are present; `python build_compiled.py` builds in place, next to the
sources (`src/restlayer/.../_x.cpython-*.so`, ignored by git), so the editable install
imports the compiled modules, and records which sources it compiled (`BUILT_FROM`), so
a build older than its sources is found however it was made; `--clean` removes both. The wheel build hook
(`hatch_build.py`) uses `build()` for binary wheels. Without a compiler nothing is built
and the same modules run as plain Python.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SRC = ROOT / "src"

#: The modules compiled by mypyc, relative to src/ (each also runs as plain Python).
COMPILED = ("restlayer/schema/_exec.py",)
#: The `source_hash()` an in-place build was made from (outside the package, ignored by git).
BUILT_FROM = SRC / ".restlayer-compiled-from"


def toolchain_missing() -> str | None:
    """Why this machine cannot compile (no C compiler, no Python headers), or None when it can."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if not shutil.which(compiler):
        return f"no C compiler ({compiler})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "no Python headers (Python.h)"
    return None


def source_hash() -> str:
    """What a built copy depends on: the compiled sources and this interpreter."""
    digest = hashlib.sha256(sys.version.encode())
    for name in COMPILED:
        digest.update((SRC / name).read_bytes())
    return digest.hexdigest()


def built_files(root: Path = SRC) -> list[Path]:
    """The extension modules a build left under `root` (the modules and mypyc's shared runtime)."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    out: list[Path] = []
    for name in COMPILED:
        folder = (root / name).parent
        stem = Path(name).stem
        out += [p for p in folder.glob(f"{stem}*{suffix}") if p.name.startswith((f"{stem}.", f"{stem}__mypyc."))]
    return out


def built_from() -> str | None:
    """The `source_hash()` the in-place compiled modules were built from (None: none built here)."""
    if not built_files() or not BUILT_FROM.exists():
        return None
    return BUILT_FROM.read_text()


def clean() -> None:
    """Remove the compiled modules, so the plain-Python sources are imported again."""
    BUILT_FROM.unlink(missing_ok=True)
    for path in built_files():
        path.unlink()


def build(out_dir: Path) -> list[Path]:
    """Compile COMPILED into `out_dir` (a package tree: out_dir/restlayer/...); the files made."""
    from mypyc.build import mypycify
    from setuptools import Distribution  # type: ignore[import-untyped]

    with tempfile.TemporaryDirectory(prefix="restlayer-mypyc-") as temp:
        cwd = Path.cwd()
        os.chdir(SRC)  # mypyc names the modules by their path from here: restlayer.schema._exec
        try:
            # Errors in the modules they import are not theirs to report (mypy --strict checks those).
            options = ["--follow-imports=silent", "--ignore-missing-imports", f"--cache-dir={Path(temp) / 'cache'}"]
            extensions = mypycify([*options, *COMPILED], opt_level="3", target_dir=str(Path(temp) / "c"))
            dist = Distribution({"name": "restlayer-compiled", "ext_modules": extensions})
            command = dist.get_command_obj("build_ext")
            command.build_temp = str(Path(temp) / "obj")
            command.build_lib = str(out_dir)
            dist.run_command("build_ext")
        finally:
            os.chdir(cwd)
    return built_files(out_dir)


def main() -> int:
    if "--clean" in sys.argv:
        clean()
        return 0
    missing = toolchain_missing()
    if missing:
        print(f"restlayer: not compiling ({missing}); the plain-Python modules are used")
        return 1
    clean()
    digest = source_hash()  # the sources as this build reads them
    made = build(SRC)
    if not made:
        return 1
    BUILT_FROM.write_text(digest)
    print("restlayer: compiled", ", ".join(p.name for p in made))
    return 0


if __name__ == "__main__":
    sys.exit(main())
