"""Apply every fix of a file in one transformer pass, touching nothing but the inserted code.

Edits are keyed by the identity of nodes in the tree the rules looked at, and only insert: a
statement at the top of a body or before a statement, a keyword argument at the end of a call, or a
method call after an expression.
libcst regenerates everything else byte for byte (comments, blank lines, quotes, line endings).
"""

from __future__ import annotations

import dataclasses
import difflib
import os.path
import warnings
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from .analysis.modules import is_atomic
from .analysis.traversal import children

from .findings import (AppendKeywordArgument, AppendMethodCall, Edit, Fix, InsertAtBodyStart, InsertBeforeStatement,
                       ReplaceExpression, StatementLines, TextEdit)


class FixError(Exception):
    """A fix produced code that does not compile; the file is left alone."""


def apply_edits(module: cst.Module, edits: Iterable[Edit]) -> cst.Module:
    transformer = _EditApplier(module, edits)
    return module.visit(transformer)


def spliced_text(module: cst.Module, edits: Sequence[Edit], text: str) -> Optional[Tuple[str, cst.Module]]:
    """`text` (the module's source) with the edits applied, regenerating only the top-level statements
    they touch: each one's code, as libcst writes it back, must appear exactly once in `text`, which
    proves the layout is kept byte for byte there, and everything else is left as it was. Returned with
    the edited module, whose statements are those of the new text. None where that cannot be shown (the
    caller then regenerates the whole module)."""
    targets = {id(_edit_target(edit)) for edit in edits}
    before_top_level = {id(edit.statement) for edit in edits if isinstance(edit, InsertBeforeStatement)}
    applier = _EditApplier(module, edits)
    left = set(targets)
    body = list(module.body)
    for position, statement in enumerate(module.body):
        if not left:
            break  # statements after the last target are never walked
        on_path = _paths_to(statement, left)
        if not on_path:
            continue
        if id(statement) in before_top_level:
            return None  # an insertion between top-level statements is the module's to make
        left -= on_path
        body[position] = _rebuilt(statement, on_path, applier)
        old, new = module.code_for_node(statement), module.code_for_node(body[position])
        if text.count(old) != 1:
            return None
        text = text.replace(old, new)
    return (text, module.with_changes(body=body)) if not left else None


def _edit_target(edit: Edit) -> cst.CSTNode:
    if isinstance(edit, InsertAtBodyStart):
        return edit.function
    if isinstance(edit, InsertBeforeStatement):
        return edit.statement
    if isinstance(edit, AppendKeywordArgument):
        return edit.call
    return edit.expression


def _paths_to(root: cst.CSTNode, targets: Set[int]) -> Set[int]:
    """The ids of the nodes from `root` down to each target below it (targets included): the nodes the
    edits rebuild. Empty when no target is below `root`."""
    parents: Dict[int, Optional[cst.CSTNode]] = {id(root): None}
    found = []
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in targets:
            found.append(node)
        for child in children(node):
            parents[id(child)] = node
            stack.append(child)
    on_path: Set[int] = set()
    for node in found:
        while node is not None and id(node) not in on_path:
            on_path.add(id(node))
            node = parents[id(node)]
    return on_path


def _rebuilt(node: cst.CSTNode, on_path: Set[int], applier: "_EditApplier") -> cst.CSTNode:
    """What `node.visit(applier)` returns, rebuilding only the nodes on the paths to the edits: the
    applier changes nothing else, and libcst's visit would rebuild every node of a class to say so."""
    if id(node) not in on_path:
        return node
    changes = {}
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        if isinstance(value, cst.CSTNode):
            if id(value) in on_path:
                changes[field.name] = _rebuilt(value, on_path, applier)
        elif isinstance(value, (tuple, list)) and any(id(item) in on_path for item in value):
            changes[field.name] = type(value)(_rebuilt(item, on_path, applier) if id(item) in on_path else item
                                              for item in value)
    return applier.on_leave(node, node.with_changes(**changes) if changes else node)


def text_edits(module: cst.Module, fix: Fix) -> Tuple[TextEdit, ...]:
    """One fix, applied alone, as text edits on the module's code (for JSON and SARIF output)."""
    before = _lines(module.code)
    after = _lines(apply_edits(module, fix.edits).code)
    edits = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, first, last, new_first, new_last in matcher.get_opcodes():
        if tag == "equal":
            continue
        old, new = "".join(before[first:last]), "".join(after[new_first:new_last])
        # Narrow a changed run of lines to the characters that differ (an argument added to a call).
        prefix = len(_common_prefix(old, new))
        suffix = len(_common_prefix(old[prefix:][::-1], new[prefix:][::-1]))
        start = _position(first, old[:prefix])
        end = _position(first, old[: len(old) - suffix])
        edits.append(TextEdit(start[0], start[1], end[0], end[1], new[prefix: len(new) - suffix]))
    return tuple(edits)


def _common_prefix(first: str, second: str) -> str:
    return os.path.commonprefix([first, second])


def _lines(text: str) -> List[str]:
    """Lines with their endings, split at "\\n" only, as line numbers count them (splitlines splits more)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def _position(first_line: int, text: str) -> Tuple[int, int]:
    """The 1-based (line, column) reached after `text`, which starts at the start of 0-based line first_line."""
    line = first_line + text.count("\n")
    column = len(text) - (text.rfind("\n") + 1)
    return line + 1, column + 1


def render_statements(module: cst.Module, lines: StatementLines) -> List[cst.BaseStatement]:
    newline = module.default_newline
    indent = module.default_indent
    text = "".join(f"{indent * level}{line}{newline}" for level, line in lines)
    parsed = cst.parse_module(text, config=module.config_for_parsing)
    return list(parsed.body)


class _EditApplier(cst.CSTTransformer):
    def __init__(self, module: cst.Module, edits: Iterable[Edit]) -> None:
        self.module = module
        self.body_start: Dict[cst.CSTNode, List[StatementLines]] = {}
        self.before: Dict[cst.CSTNode, List[StatementLines]] = {}
        self.arguments: Dict[cst.CSTNode, List[Tuple[str, str]]] = {}
        self.method_calls: Dict[cst.CSTNode, List[str]] = {}
        self.replacements: Dict[cst.CSTNode, str] = {}
        for edit in edits:
            if isinstance(edit, InsertAtBodyStart):
                _add_unique(self.body_start.setdefault(edit.function, []), edit.lines)
            elif isinstance(edit, InsertBeforeStatement):
                _add_unique(self.before.setdefault(edit.statement, []), edit.lines)
            elif isinstance(edit, AppendKeywordArgument):
                _add_unique(self.arguments.setdefault(edit.call, []), (edit.keyword, edit.value))
            elif isinstance(edit, AppendMethodCall):
                _add_unique(self.method_calls.setdefault(edit.expression, []), edit.method)
            elif isinstance(edit, ReplaceExpression):
                self.replacements[edit.expression] = edit.value

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        updated = super().on_leave(original_node, updated_node)
        if original_node in self.replacements:
            updated = cst.parse_expression(self.replacements[original_node])
        for method in self.method_calls.get(original_node, ()):
            updated = _append_method_call(updated, method)
        return updated

    # -- statements ---------------------------------------------------------------------------------
    def _with_insertions(self, original: Sequence[cst.CSTNode], updated: Sequence[cst.CSTNode]) -> List[cst.CSTNode]:
        body: List[cst.CSTNode] = []
        for before, after in zip(original, updated):
            pending = self.before.get(before)
            if pending:
                new = [statement for lines in pending for statement in render_statements(self.module, lines)]
                # The inserted statement takes over the comments and blank lines that introduced `after`.
                if hasattr(after, "leading_lines") and after.leading_lines:
                    new[0] = new[0].with_changes(leading_lines=after.leading_lines)
                    after = after.with_changes(leading_lines=())
                body.extend(new)
            body.append(after)
        return body

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        if any(statement in self.before for statement in original_node.body):
            return updated_node.with_changes(body=self._with_insertions(original_node.body, updated_node.body))
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if any(statement in self.before for statement in original_node.body):
            return updated_node.with_changes(body=self._with_insertions(original_node.body, updated_node.body))
        return updated_node

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        pending = self.body_start.get(original_node)
        if not pending:
            return updated_node
        new = [statement for lines in pending for statement in render_statements(self.module, lines)]
        body = updated_node.body
        if isinstance(body, cst.SimpleStatementSuite):
            # `def forward(self, x): return ...` becomes an indented block; the comment stays on its line.
            rest = cst.SimpleStatementLine(body=body.body, trailing_whitespace=body.trailing_whitespace)
            block = cst.IndentedBlock(body=[*new, rest])
            return updated_node.with_changes(body=block)
        statements = list(body.body)
        position = 1 if statements and _is_docstring(statements[0]) else 0
        statements[position:position] = new
        return updated_node.with_changes(body=body.with_changes(body=statements))

    # -- arguments ----------------------------------------------------------------------------------
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        pending = self.arguments.get(original_node)
        if not pending:
            return updated_node
        call = updated_node
        for keyword, value in pending:
            call = _append_keyword(call, keyword, value)
        return call


def _append_method_call(expression: cst.BaseExpression, method: str) -> cst.Call:
    """`expr.method()`; an expression that is not a name, attribute, call or subscript is parenthesised."""
    if not is_atomic(expression):
        expression = expression.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=expression, attr=cst.Name(method)))


def _add_unique(items: List, item) -> None:
    if item not in items:
        items.append(item)


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _append_keyword(call: cst.Call, keyword: str, value: str) -> cst.Call:
    """Add `keyword=value` as the last argument, in the layout the call already uses; when the call
    already passes that keyword (`total_length=None`), replace its value instead."""
    new_value = cst.parse_expression(value)
    args = list(call.args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            args[index] = arg.with_changes(value=new_value)
            return call.with_changes(args=args)
    if not args:
        return call.with_changes(args=[cst.Arg(keyword=cst.Name(keyword), value=new_value, equal=_tight_equal())])
    last = args[-1]
    new_arg = cst.Arg(keyword=cst.Name(keyword), value=new_value, equal=_tight_equal())
    if isinstance(last.comma, cst.Comma):
        # Trailing comma: the new argument goes after it, in the same layout; a comment after the
        # old last argument stays on that argument's line.
        closing = last.comma.whitespace_after  # what stood between the trailing comma and `)`
        between = _separator(call, args)
        if isinstance(closing, cst.ParenthesizedWhitespace) and isinstance(between, cst.ParenthesizedWhitespace):
            args[-1] = last.with_changes(comma=last.comma.with_changes(
                whitespace_after=closing.with_changes(indent=between.indent, last_line=between.last_line)
            ))
            new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=cst.ParenthesizedWhitespace(
                first_line=cst.TrailingWhitespace(), empty_lines=[], indent=closing.indent, last_line=closing.last_line,
            )))
        else:
            args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=cst.SimpleWhitespace(" ")))
            new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=closing))
    else:
        new_arg = new_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        args[-1] = last.with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
    args.append(new_arg)
    return call.with_changes(args=args)


def _separator(call: cst.Call, args: List[cst.Arg]) -> Union[cst.BaseParenthesizableWhitespace, cst.SimpleWhitespace]:
    """The whitespace that separates this call's arguments (the indentation of an exploded call)."""
    for arg in args[:-1]:
        if isinstance(arg.comma, cst.Comma):
            return arg.comma.whitespace_after
    return call.whitespace_before_args


def _tight_equal() -> cst.AssignEqual:
    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def check_compiles(code: bytes, filename: str) -> None:
    import ast

    # A notebook's cells run under IPython, which allows `await` at the top level.
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if filename.endswith(".ipynb") else 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, filename, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        raise FixError(f"the fixed code does not compile ({error}); the file was left unchanged") from error
