"""Files Python's parser accepts are parsed by libcst with its per-node checks off (parse.py's
parse_unchecked): the tree must be the one a checked parse builds, and the checks must be back on
for every node built afterwards, whatever happened during the parse."""

from __future__ import annotations

import threading
from pathlib import Path

import libcst as cst
import pytest

from dp_rnn_lint import engine, parse

from .conftest import FIXTURES


def _checks_are_on() -> bool:
    try:
        cst.Name("not an identifier")
    except cst.CSTValidationError:
        return True
    return False


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_unchecked_parse_builds_the_checked_tree(path: Path) -> None:
    source = path.read_bytes()
    unchecked = parse.parse_unchecked(source)
    assert unchecked.deep_equals(cst.parse_module(source))
    assert unchecked.bytes == source
    assert _checks_are_on()


def test_checks_are_off_only_during_the_parse(monkeypatch) -> None:
    seen = []
    real_parse = cst.parse_module

    def recording_parse(source):
        seen.append(_checks_are_on())
        return real_parse(source)

    monkeypatch.setattr(cst, "parse_module", recording_parse)
    engine.lint_source("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                       "        self.rnn = torch.nn.LSTM(1, 1)\n        return self.rnn(x)\n", "m.py")
    assert seen == [False]
    assert _checks_are_on()


def test_checks_come_back_after_a_failed_parse() -> None:
    with pytest.raises(cst.ParserSyntaxError):
        parse.parse_unchecked("def (:\n")
    assert _checks_are_on()


def test_checks_come_back_after_parses_on_many_threads() -> None:
    source = sorted((FIXTURES / "DPR001").rglob("*.py"))[0].read_text(encoding="utf-8")
    errors = []

    def parse_often() -> None:
        try:
            for _ in range(20):
                parse.parse_unchecked(source)
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=parse_often) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _checks_are_on()
