"""The README's first command: the narrated demo runs against the embedded API and every step holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What each narrated step of the demo proves, in order (the README test counts them too).
DEMO_CLAIMS = [
    "second read sent no request and returned the very same list object",
    "one PATCH request, both views updated from the store",
    "added to user 1's list, not to user 2's",
    "gone from the list and from the entity table",
    "optimistic value shown, then rolled back",
    "saw both remote edits through polling",
    "saw the remote edit by push",
    "REST view of the entity shows the GraphQL data",
]


def test_demo_runs_every_step() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "examples.demo"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "FAIL" not in out
    for claim in DEMO_CLAIMS:
        assert f"OK   {claim}" in out, claim
    assert out.count("OK  ") == len(DEMO_CLAIMS)
    assert "server requests for two reads: 1" in out
    assert "before the server answered: 'REJECT'" in out
    assert out.rstrip().endswith("Server stopped.")


def test_hybrid_example_runs_every_step() -> None:
    """`python -m examples.hybrid` (REST and GraphQL members over one entity) holds every claim it prints."""
    done = subprocess.run(
        [sys.executable, "-m", "examples.hybrid"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "FAIL" not in out and out.count("OK  ") == 5
