"""Root fixtures shared by the whole test suite.

Sections: (0) hypothesis settings, (1) the example API server. Append new sections below with their own
header comment; keep fixtures small and documented.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from examples.todo_api import LocalServer
from tests._routes import ROUTES as TEST_ROUTES

# ---------------------------------------------------------------------------
# 0. Hypothesis: no per-example deadline (these machines are noisy); under CI
#    the examples are derandomized so a run is reproducible.
# ---------------------------------------------------------------------------
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# ---------------------------------------------------------------------------
# 1. Example API server (examples.todo_api) on 127.0.0.1
#
#    `api_server`: one LocalServer for the whole session, with tests/_routes.py
#    mounted under /_test/. `api`: the same server, with seed data restored and
#    the recorded requests cleared before each test. Use `api.url`,
#    `api.requests`, `api.db`.
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def api_server() -> Iterator[LocalServer]:
    """The example API (plus test-only routes) running for the whole session."""
    with LocalServer(routes=TEST_ROUTES) as server:
        yield server


@pytest.fixture
def api(api_server: LocalServer) -> Iterator[LocalServer]:
    """The session server, reset: seed data restored, recorded requests cleared."""
    api_server.reset()
    yield api_server


# ---------------------------------------------------------------------------
# 6. Schema engine: `--engine=pure|compiled` runs the suite on that engine
#    (dev.py test runs both); without it, whatever the package runs (compiled
#    when built). `--engine=compiled` fails at once when it is not built.
# ---------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--engine", choices=("pure", "compiled"), default=None, help="schema engine to test")


def pytest_configure(config: pytest.Config) -> None:
    from restlayer.schema import _fast

    engine = config.getoption("--engine")
    if engine is not None:
        _fast.use_engine(engine)
