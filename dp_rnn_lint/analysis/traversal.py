"""Walking libcst trees at the cost of reading attributes.

libcst's own `node.children` and `node.visit(visitor)` rebuild every node they pass (its visitors are
transformers underneath) and call a hook per attribute: a walk costs microseconds a node, more than the
analysis that reads it. The analysis only ever needs the nodes that carry meaning, in source order, so
this module reads them straight from each node's fields, leaving out whitespace, comments, brackets,
commas and operator tokens, and drives visitors with libcst's protocol (`on_visit` returning False
skips the children, `on_leave` always follows; `visit_<Node>`/`leave_<Node>` are dispatched as by
libcst's `CSTVisitor`, through `Visitor`, which looks each up once per node type).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst

# Nodes that never carry meaning for the analysis: layout and punctuation.
_TOKEN_BASES: Tuple[type, ...] = (
    cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline, cst.Comment,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.Comma, cst.Dot, cst.Semicolon, cst.Colon, cst.AssignEqual, cst.Asynchronous,
    cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp,
)

# Where a node's fields are not declared in source order, the order libcst visits them in (which is
# source order); fields not listed carry no meaning there.
_SOURCE_ORDER: Dict[type, Tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.MatchCase: ("pattern", "guard", "body"),
    cst.TypeAlias: ("name", "type_parameters", "value"),
    cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
}

_FIELDS: Dict[type, Tuple[str, ...]] = {}
_IS_TOKEN: Dict[type, bool] = {}
# Per type of field value: whether it is a node that carries meaning. libcst's node classes are ABCs,
# whose isinstance checks cost more than the rest of a walk; a dict lookup per value does not.
_MEANINGFUL: Dict[type, bool] = {}


def _fields(node_type: type) -> Tuple[str, ...]:
    declared = [f.name for f in dataclasses.fields(node_type)]
    names = _FIELDS[node_type] = tuple(name for name in _SOURCE_ORDER.get(node_type, declared) if name in declared)
    return names


def _is_token(node_type: type) -> bool:
    found = _IS_TOKEN.get(node_type)
    if found is None:
        found = _IS_TOKEN[node_type] = issubclass(node_type, _TOKEN_BASES)
    return found


def _meaningful(value_type: type) -> bool:
    found = _MEANINGFUL[value_type] = issubclass(value_type, cst.CSTNode) and not _is_token(value_type)
    return found


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The node's children that carry meaning, in source order."""
    node_type = type(node)
    names = _FIELDS.get(node_type)
    if names is None:
        names = _fields(node_type)
    meaningful = _MEANINGFUL.get
    found: List[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        value_type = type(value)
        if value_type is tuple or value_type is list:
            for item in value:
                keep = meaningful(type(item))
                if keep is None:
                    keep = _meaningful(type(item))
                if keep:
                    found.append(item)
        else:
            keep = meaningful(value_type)
            if keep is None:
                keep = _meaningful(value_type)
            if keep:
                found.append(value)
    return found


class Visitor(cst.CSTVisitor):
    """libcst's CSTVisitor, looking up `visit_<Node>` and `leave_<Node>` once per node type rather than
    formatting the name and asking getattr at every node."""

    _visit_methods: Dict[type, Optional[Callable]] = {}
    _leave_methods: Dict[type, Optional[Callable]] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._visit_methods = {}
        cls._leave_methods = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        node_type = type(node)
        try:
            method = self._visit_methods[node_type]
        except KeyError:
            method = self._visit_methods[node_type] = getattr(type(self), f"visit_{node_type.__name__}", None)
        return method is None or method(self, node) is not False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        node_type = type(original_node)
        try:
            method = self._leave_methods[node_type]
        except KeyError:
            method = self._leave_methods[node_type] = getattr(type(self), f"leave_{node_type.__name__}", None)
        if method is not None:
            method(self, original_node)


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """`node.visit(visitor)` over the nodes that carry meaning."""
    if visitor.on_visit(node):
        for child in children(node):
            walk(child, visitor)
    visitor.on_leave(node)
