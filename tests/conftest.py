"""Shared helpers: the fixture files and the expectations written inside them."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

_MARKER = re.compile(r"#\s*expect:\s*(?P<codes>DPR\d{3}(?:\s+unfixable)?(?:\s*,\s*DPR\d{3}(?:\s+unfixable)?)*)")


@pytest.fixture(autouse=True)
def plain_output_and_private_cache(monkeypatch, tmp_path_factory):
    """Commands run by tests print without colour whatever the outer environment asks for, and each
    test has a result cache of its own, outside the folders it inspects."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("DP_RNN_LINT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def fixture_files() -> List[Path]:
    """Every input fixture (buggy, clean and noqa files), not the golden `.fixed.py` files."""
    return sorted(p for p in FIXTURES.glob("DPR*/*.py") if not p.name.endswith(".fixed.py"))


def golden_path(path: Path) -> Path:
    return path.with_name(path.name[: -len(".py")] + ".fixed.py")


def expected_findings(path: Path, fixed: bool = False) -> Set[Tuple[int, str, bool]]:
    """(line, code, fixable) for every `# expect:` marker; in a fixed file only unfixable ones."""
    expected = set()
    text = path.read_bytes().decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), start=1):
        match = _MARKER.search(line)
        if not match:
            continue
        for item in match.group("codes").split(","):
            parts = item.split()
            fixable = "unfixable" not in parts
            if fixed and fixable:
                continue
            expected.add((number, parts[0], fixable))
    return expected


def fixture_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.fixture
def python() -> str:
    return sys.executable


def pytest_terminal_summary(terminalreporter):
    """Say how many inputs the property tests generated, and how many failed."""
    try:
        from .test_properties import COUNTS
    except (Exception, pytest.skip.Exception):  # without hypothesmith the module skips itself as it is imported
        return
    if COUNTS:
        terminalreporter.section("property tests")
        for name, (seen, failed) in sorted(COUNTS.items()):
            terminalreporter.write_line(f"{name}: {seen} generated, {failed} failed")
