"""The fast walk over libcst trees must see the nodes libcst's own walk sees, in the same order, less
the layout and punctuation tokens, or the analysis (which pairs calls with Python's tree in source
order, and orders bindings by when they are visited) would change its answers."""

from __future__ import annotations

from pathlib import Path
from typing import List

import libcst as cst
import pytest

from dp_rnn_lint.analysis.traversal import Visitor, _is_token, children, walk

from .conftest import FIXTURES

# Every kind of statement and expression whose fields libcst does not declare in source order, and
# the rest of the grammar around them.
EVERY_FORM = '''\
import a.b as c, d
from .. import e as f
from g import *
@decorator(1)
@other
async def function[T](p: int = 1, /, q: "str" = 2, *args: T, r, s=3, **kwargs) -> T:
    global counter
    nonlocal_value = [i async for i in source if i] if args else {k: v for k, v in kwargs.items() if k}
    async with open(p) as (first, second), lock:
        await step(first, key=second, *args, **kwargs)
    async for item in stream:
        yield item
    try:
        pass
    except* ValueError as group:
        raise Other() from group
    try:
        x = y = 1
    except (KeyError, IndexError) as error:
        del x, table[error]
    else:
        x += 1
    finally:
        assert x, "message"
    match subject:
        case [1, *rest] if rest:
            return rest
        case {"key": value, **others}:
            pass
        case Point(x=0, y=yy) | Other() as alias:
            pass
    lam = lambda u=1, *v, w, **z: (u, v, w, z)
    annotated: list[int] = [*args, (walrus := 5)]
    sliced = table[1:2:3, ::-1, ...]
    text = f"{x!r:>{width}} and {y}"
    return not x or y and -x < y <= z is not w in q
type Alias[U] = list[U]
class Model[T](Base, metaclass=Meta, **options):
    attribute: int = 0
    def forward(self, x, *, h=None):
        while x:
            x = x.t() @ self.w if h else x
        else:
            pass
        with (open("a") as handle):
            print(*x, sep="", **{"end": ""})
        return x
'''


def _libcst_children(node: cst.CSTNode) -> List[cst.CSTNode]:
    return [child for child in node.children if not _is_token(type(child))]


def _mismatches(source: str) -> List[str]:
    module = cst.parse_module(source)
    found = []
    stack = [module]
    while stack:
        node = stack.pop()
        expected, got = _libcst_children(node), children(node)
        if [id(n) for n in expected] != [id(n) for n in got]:
            found.append(f"{type(node).__name__}: libcst {[type(n).__name__ for n in expected]}, "
                         f"ours {[type(n).__name__ for n in got]}")
        stack.extend(node.children)
    return found


def test_every_form_is_walked_in_source_order() -> None:
    assert _mismatches(EVERY_FORM) == []


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixtures_are_walked_in_source_order(path: Path) -> None:
    assert _mismatches(path.read_text(encoding="utf-8")) == []


def test_tokens_are_left_out() -> None:
    call = cst.parse_expression("f( a , b = 1 )")
    assert [type(n).__name__ for n in children(call)] == ["Name", "Arg", "Arg"]


class _Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.events: List[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.events.append(f"visit {node.name.value}")
        return node.name.value != "skipped"

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.events.append(f"leave {original_node.name.value}")

    def visit_Call(self, node: cst.Call) -> None:
        self.events.append(f"call {cst.Module([]).code_for_node(node.func)}")


def test_walk_follows_libcst_visitor_protocol() -> None:
    module = cst.parse_module("def outer():\n    a()\n    def skipped():\n        b()\n    c()\n")
    ours, theirs = _Recorder(), _Recorder()
    walk(module, ours)
    module.visit(theirs)
    assert ours.events == theirs.events == [
        "visit outer", "call a", "visit skipped", "leave skipped", "call c", "leave outer"]


class _CachedRecorder(Visitor, _Recorder):
    """The recorder with the dispatch looked up once per node type."""


class _CachedRecorderThatSkipsCalls(_CachedRecorder):
    def visit_Call(self, node: cst.Call) -> bool:
        self.events.append("call skipped")
        return False


def test_cached_dispatch_follows_libcst_visitor_protocol() -> None:
    module = cst.parse_module("def outer():\n    a()\n    def skipped():\n        b()\n    c()\n")
    plain, cached = _Recorder(), _CachedRecorder()
    walk(module, plain)
    walk(module, cached)
    assert cached.events == plain.events
    # A subclass overriding a hook gets its own lookups, not those its parent already made.
    overriding = _CachedRecorderThatSkipsCalls()
    walk(module, overriding)
    assert overriding.events == [
        "visit outer", "call skipped", "visit skipped", "leave skipped", "call skipped", "leave outer"]
    again = _CachedRecorder()
    walk(module, again)
    assert again.events == plain.events
