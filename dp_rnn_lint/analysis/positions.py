"""Where calls sit in the source, read from Python's own syntax tree.

libcst's PositionProvider regenerates the whole file's code to count positions, which costs more than
the rest of the analysis. Every finding is a call, and Python's parser has already placed every call:
the calls libcst visits in source order are paired with `ast`'s calls sorted by position, and the
pairing is trusted only when both trees hold the same calls with the same callee names. Otherwise the
caller falls back to libcst's positions.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, Optional, Sequence, Tuple

import libcst as cst

from .ast_walk import walk
from .screen import callee_name

Span = Tuple[int, int, int, int]  # line, column, end line, end column: 1-based, columns in characters

# Python counts lines as libcst does: \r\n, \r and \n each end one.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def paired_calls(calls: Sequence[cst.Call], tree: ast.AST) -> Optional[Dict[cst.Call, ast.Call]]:
    """Each libcst call (in source order) with the same call in `tree`; None when the trees disagree."""
    ast_calls = _sorted_calls(tree)
    if len(ast_calls) != len(calls):
        return None
    if any(_callee(call.func) != callee_name(node.func) for call, node in zip(calls, ast_calls)):
        return None
    return dict(zip(calls, ast_calls))


def _sorted_calls(tree: ast.AST) -> list:
    return sorted(
        (node for node in walk(tree) if isinstance(node, ast.Call)),
        # Source order; of calls starting together (`f(x)(y)`), the outer one first, as libcst visits.
        key=lambda node: (node.lineno, node.col_offset, -(node.end_lineno or 0), -(node.end_col_offset or 0)),
    )


def call_spans(calls: Sequence[cst.Call], tree: ast.AST, text: str) -> Optional[Dict[cst.Call, Span]]:
    """Each libcst call's span, from `tree` (Python's tree of `text`); None when the trees disagree."""
    pairs = paired_calls(calls, tree)
    if pairs is None:
        return None
    lines = _LINE_BREAK.split(text)

    def column(line: int, byte_offset: int) -> int:
        # ast columns count UTF-8 bytes; ours count characters.
        return len(lines[line - 1].encode("utf-8", "surrogatepass")[:byte_offset].decode("utf-8", "ignore")) + 1

    try:
        return {
            call: (node.lineno, column(node.lineno, node.col_offset),
                   node.end_lineno, column(node.end_lineno, node.end_col_offset))
            for call, node in pairs.items()
        }
    except (IndexError, TypeError):
        return None


def _callee(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""
