"""Fixtures shared by the schema tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from restlayer.schema import _fast


@pytest.fixture(params=["as run", "executor"])
def each_engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """A test on the engine this run uses, then on the plan executor run from its Python source
    (the compiled engine's logic, checked without a compiler)."""
    before = _fast.engine()
    if request.param == "executor":
        _fast.use_engine("executor")
    yield _fast.engine()
    _fast.use_engine(before)
