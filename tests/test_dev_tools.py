"""The project's own habits: one version source, strict test settings, the slow README check run last."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

import dev
import restlayer

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_read_from_the_package() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^dynamic = \["version"\]', pyproject, re.M)
    assert not re.search(r"^version = ", pyproject, re.M), "a second, static version in pyproject.toml"
    assert importlib.metadata.version("restlayer") == restlayer.__version__


def test_license_file_is_the_declared_apache_license() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()


def test_pytest_turns_warnings_unknown_markers_and_passing_xfails_into_failures(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.getini("filterwarnings") == ["error"]
    assert pytestconfig.getini("xfail_strict") is True
    assert pytestconfig.option.strict_markers is True


def test_readme_check_is_deselected_by_default(pytestconfig: pytest.Config) -> None:
    assert any(line.startswith("readme:") for line in pytestconfig.getini("markers"))
    assert "not readme" in pytestconfig.getini("addopts")


def test_dev_test_checks_coverage_and_format_and_runs_the_readme_check_last() -> None:
    commands = [[str(part) for part in command] for command in dev.check_commands(["-x"])]
    main = next(c for c in commands if c[1:3] == ["-m", "pytest"])
    assert "--cov" in main and f"--cov-fail-under={dev.COVERAGE_FLOOR}" in main and main[-1] == "-x"
    assert float(dev.COVERAGE_FLOOR) >= 93.7
    assert any(c[1:3] == ["format", "--check"] for c in commands)
    assert commands[-1][1:] == ["-m", "pytest", "-m", "readme"]
    assert sum("pytest" in c for c in commands) == (3 if dev.compiled_built() else 2)


def test_dev_test_runs_the_engine_tests_again_on_the_compiled_engine_when_built() -> None:
    commands = [[str(part) for part in command] for command in dev.check_commands([])]
    main = next(c for c in commands if c[1:3] == ["-m", "pytest"])
    assert "--engine=pure" in main
    compiled = [c for c in commands if "--engine=compiled" in c]
    assert compiled == (
        [[str(dev.BIN / "python"), "-m", "pytest", "--engine=compiled", *dev.COMPILED_TESTS]]
        if dev.compiled_built()
        else []
    )


def test_project_metadata_has_classifiers_and_urls() -> None:
    meta = importlib.metadata.metadata("restlayer")
    classifiers = meta.get_all("Classifier") or []
    assert "License :: OSI Approved :: Apache Software License" in classifiers
    assert "Typing :: Typed" in classifiers
    urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Source", "Changelog"} <= set(urls)


#: Design notes users never see; code, tests and docs must not point at them.
_PRIVATE_SPECS = re.compile(r"\b(?:BEHAVIOR|SEED|API)\.md\b|\b(?:BEHAVIOR|SEED) \d")


def test_no_file_points_at_the_private_design_notes() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("src", "tests", "docs", "examples")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".md"}
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _PRIVATE_SPECS.search(line)
    ]
    assert offenders == []
