"""Which schema engine runs: the compiled executor (built by `dev.py setup`) or the pure-Python one.

`python3 dev.py test` runs the suite on the pure engine, then the engine tests again on the
compiled one; these tests make sure each run is on the engine it claims, so a CI run can not
silently test pure Python only when the compiled engine was expected.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import pytest

import build_compiled
import dev
from restlayer.schema import Entity, _exec, _fast, normalize


class Item(Entity):
    id: str = ""
    key = "EngineItem"


def test_the_engine_asked_for_is_the_one_running(pytestconfig: pytest.Config) -> None:
    asked = pytestconfig.getoption("--engine")
    expected = asked or ("compiled" if _exec.compiled() else "pure")
    assert _fast.engine() == expected
    if expected == "compiled":
        assert _exec.compiled()
        assert isinstance(_fast.normalizer(Item).__self__, _exec.NPlan)  # type: ignore[union-attr]
        assert isinstance(_fast.denormalizer(Item).__self__, _exec.DPlan)  # type: ignore[union-attr]
    else:
        assert not hasattr(_fast.normalizer(Item), "__self__")  # a generated function


@pytest.mark.skipif(not os.environ.get("CI"), reason="a local checkout may not have run dev.py setup")
def test_ci_builds_the_compiled_engine_where_a_compiler_is_present() -> None:
    if build_compiled.toolchain_missing() is None:
        assert _exec.compiled() and dev.compiled_built()


def test_a_built_engine_is_compiled_from_the_current_sources() -> None:
    """A compiled module older than its source would shadow the edit: dev.py setup rebuilds it."""
    if not dev.compiled_built():
        assert not _exec.compiled() or not os.environ.get("CI")
        return
    assert build_compiled.built_from() == build_compiled.source_hash()
    assert _exec.compiled()


def test_restlayer_pure_keeps_the_pure_engine_even_when_compiled() -> None:
    code = "from restlayer.schema import _fast; print(_fast.engine())"
    env = {**os.environ, "RESTLAYER_PURE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pure"


def test_asking_for_an_engine_that_is_not_there_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown engine"):
        _fast.use_engine("fast")
    if not _exec.compiled():
        with pytest.raises(RuntimeError, match="not built"):
            _fast.use_engine("compiled")


def test_the_executor_also_runs_from_its_python_source() -> None:
    """What the engine tests' "executor" pass runs: the same plan classes, interpreted."""
    before = _fast.engine()
    _fast.use_engine("executor")
    try:
        plan = _fast.normalizer(Item).__self__  # type: ignore[union-attr]
        assert _fast.engine() == "executor"
        assert inspect.isfunction(type(plan).norm)  # a Python function, not compiled code
        assert normalize([Item], [{"id": "1"}]).result == ["1"]
    finally:
        _fast.use_engine(before)
    assert _fast.engine() == before
