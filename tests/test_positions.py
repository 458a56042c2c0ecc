"""Findings are placed from Python's own tree: every call's span must be the one libcst's positions give,
and where the two trees cannot be paired the engine must notice (and fall back)."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from dp_rnn_lint.analysis.names import NameResolver
from dp_rnn_lint.analysis.positions import call_spans
from dp_rnn_lint.engine import decode

from .conftest import FIXTURES


def libcst_spans(module: cst.Module, calls):
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {call: (positions[call].start.line, positions[call].start.column + 1,
                   positions[call].end.line, positions[call].end.column + 1) for call in calls}


def spans_of(source: bytes):
    module = cst.parse_module(source)
    calls = NameResolver(module).calls
    return call_spans(calls, ast.parse(source), decode(source)), libcst_spans(module, calls)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("DPR*/*.py")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_call_in_every_fixture_is_placed_where_libcst_places_it(path):
    ours, theirs = spans_of(path.read_bytes())
    assert ours is not None, "the trees could not be paired"
    assert ours == theirs


@pytest.mark.parametrize("source", [
    "x = f(g(1))(h(2)).k(3)\n",
    "\ufeffs = '\u00e9\u00e9\u540d'; y = self.lstm(s)\n",
    "if x:\r\n\tz = self.rnn(\r\n\t\tx,\r\n\t)\r\n",
    "@decorate(1)\nclass A(Base(2), metaclass=meta(3)):\n    def m(self, a=default(4)):\n        return [c(i) for i in it(5)]\n",
    "value = f'{call(1)} and {other(2)!r}'\n",
    "lam = lambda a=d(1): e(a)\nmatch p:\n    case Point(x=0):\n        q(1)\n",
])
def test_tricky_layouts_are_placed_where_libcst_places_them(source):
    ours, theirs = spans_of(textwrap.dedent(source).encode())
    assert ours is not None
    assert ours == theirs


def test_trees_that_disagree_are_not_paired():
    module = cst.parse_module("a(1)\nb(2)\n")
    calls = NameResolver(module).calls
    assert call_spans(calls, ast.parse("a(1)\n"), "a(1)\n") is None
    assert call_spans(calls, ast.parse("a(1)\nc(2)\n"), "a(1)\nc(2)\n") is None
