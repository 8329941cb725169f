"""Wheel build hook: `RESTLAYER_COMPILE=1` builds a binary wheel carrying the compiled engine.

Without it (the default, and always for editable installs) the wheel is pure Python
(`py3-none-any`) and works everywhere; the compiled modules are an optional speed-up
built by mypyc (see build_compiled.py and docs/guides/compiled.md for cibuildwheel).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _wanted() -> bool:
    return os.environ.get("RESTLAYER_COMPILE", "") not in ("", "0")


class CompiledEngineHook(BuildHookInterface):  # type: ignore[type-arg]
    """Adds the mypyc-built modules to a non-editable wheel when RESTLAYER_COMPILE=1."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        # the runtime dependencies too: mypyc reads their types where the compiled modules use them
        return ["mypy[mypyc]>=1.11", "httpx>=0.27", "immutables>=0.20"] if _wanted() else []

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable" or not _wanted():
            return
        sys.path.insert(0, self.root)
        import build_compiled

        missing = build_compiled.toolchain_missing()
        if missing:
            raise RuntimeError(f"RESTLAYER_COMPILE=1 but {missing}")
        self._out = tempfile.TemporaryDirectory(prefix="restlayer-wheel-")
        out = Path(self._out.name)
        for path in build_compiled.build(out):
            build_data["force_include"][str(path)] = str(path.relative_to(out))
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        out = getattr(self, "_out", None)
        if out is not None:
            out.cleanup()
