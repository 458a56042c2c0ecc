"""The fast walk over Python's trees must reach every node `ast.walk` reaches but the expression
contexts, or the screen could rule out a file with a finding and the index miss a wrap."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from dp_rnn_lint.analysis.ast_walk import child_nodes, walk

from .conftest import FIXTURES

PACKAGE = Path(__file__).resolve().parent.parent / "dp_rnn_lint"

# The grammar this Python parses, every field that may hold a node used at least once.
EVERY_FORM = '''\
import a.b as c, d
from .. import e as f
from g import *
@decorator(1)
@other
async def function(p: int = 1, /, q: "str" = 2, *args: T, r, s=3, **kwargs) -> T:  # type: ignore
    global counter
    nonlocal_value = [i async for i in source if i] if args else {k: v for k, v in kwargs.items() if k}
    generator = (x for x in range(3)), {1, 2}, {*args}
    async with open(p) as (first, second), lock:
        await step(first, key=second, *args, **kwargs)
    async for item in stream:
        yield item
        yield from other
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
        case Point(1, x=0, y=yy) | Other() as alias:
            pass
        case -1 | 1.5 | None | "text":
            pass
    lam = lambda u=1, *v, w, **z: (u, v, w, z)
    annotated: list[int] = [*args, (walrus := 5)]
    sliced = table[1:2:3, ::-1, ...]
    text = f"{x!r:>{width}} and {y}"
    return not x or y and -x < y <= z is not w in q
class Model(Base, metaclass=Meta, **options):
    attribute: int = 0
    def forward(self, x, *, h=None):
        nonlocal_name = 1
        while x:
            x = x.t() @ self.w if h else x
        else:
            pass
        with (open("a") as handle):
            print(*x, sep="", **{"end": ""})
        for i, (j, k) in pairs:
            continue
        return x
'''


def _reference(tree: ast.AST):
    return [node for node in ast.walk(tree) if not isinstance(node, ast.expr_context)]


def _sources():
    yield "every form", EVERY_FORM
    for path in sorted(FIXTURES.rglob("*.py")) + sorted(PACKAGE.rglob("*.py")):
        yield str(path), path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name, source", list(_sources()), ids=lambda value: Path(str(value)).name[:40])
def test_walk_reaches_every_node_but_contexts(name, source):
    tree = ast.parse(source)
    expected = _reference(tree)
    got = walk(tree)
    assert len(got) == len(expected)
    assert {id(node) for node in got} == {id(node) for node in expected}


def test_child_nodes_are_ast_children_in_field_order():
    tree = ast.parse(EVERY_FORM)
    for node in ast.walk(tree):
        expected = [child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.expr_context)]
        assert child_nodes(node) == expected, type(node).__name__


def test_every_form_holds_the_node_types_it_claims():
    # The sample is only a test of the skipped fields if it uses the nodes that have them.
    kinds = {type(node).__name__ for node in walk(ast.parse(EVERY_FORM))}
    assert {"alias", "ImportFrom", "ExceptHandler", "MatchAs", "MatchStar", "MatchClass", "MatchMapping", "keyword",
            "FormattedValue", "comprehension", "AnnAssign", "arg", "Global", "Attribute", "Constant"} <= kinds


def test_nodes_built_by_hand_without_optional_fields_are_walked():
    # The screen builds `ast.Name(id=...)` without a context for what `from m import x` binds.
    tree = ast.Tuple(elts=[ast.Name(id="LSTM"), ast.Attribute(value=ast.Name(id="nn"), attr="GRU")])
    assert sorted(type(node).__name__ for node in walk(tree)) == ["Attribute", "Name", "Name", "Tuple"]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="`type X = ...` needs Python 3.12")
def test_type_alias_name_is_a_node_there():
    tree = ast.parse("type Cell[T] = nn.LSTM | T\n")
    assert {id(node) for node in walk(tree)} == {id(node) for node in _reference(tree)}
