"""Walking Python's own syntax trees (`ast`) at the cost of reading attributes.

`ast.walk` runs two generators per node and yields every expression context (`Load`, `Store`, `Del`),
about a third of the nodes of a typical tree, which nothing here reads. These walks read each node
type's fields once, skip the fields that only ever hold identifiers, numbers or a context, and leave
the contexts out. The screen, the project index and the positions walk Python's trees through here.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Tuple

# Fields that hold an identifier, a number, a flag or an expression context, never a node to read.
_LEAF_FIELDS = frozenset({"ctx", "id", "attr", "arg", "asname", "module", "level", "type_comment", "kind",
                          "kwd_attrs", "rest", "conversion", "is_async", "simple", "tag", "name"})
# `name` is an identifier everywhere except in Python 3.12's `type X = ...`, where it is a Name node.
_NODE_NAMED = tuple(kind for kind in (getattr(ast, "TypeAlias", None),) if kind is not None)

_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _child_fields(node_type: type) -> Tuple[str, ...]:
    fields = tuple(name for name in node_type._fields
                   if name not in _LEAF_FIELDS or (name == "name" and issubclass(node_type, _NODE_NAMED)))
    _CHILD_FIELDS[node_type] = fields
    return fields


def child_nodes(node: ast.AST) -> List[ast.AST]:
    """The node's children, in field order, expression contexts left out."""
    found: List[ast.AST] = []
    fields = _CHILD_FIELDS.get(type(node))
    if fields is None:
        fields = _child_fields(type(node))
    for name in fields:
        value = getattr(node, name, None)  # nodes built by hand may lack optional fields
        if type(value) is list:
            found.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def walk(root: ast.AST) -> List[ast.AST]:
    """`root` and every node below it, expression contexts left out; depth first, in no promised order
    (callers that need source order sort by position)."""
    found: List[ast.AST] = []
    stack = [root]
    push, pop, fields_of = stack.append, stack.pop, _CHILD_FIELDS.get
    AST = ast.AST
    while stack:
        node = pop()
        found.append(node)
        node_type = type(node)
        fields = fields_of(node_type)
        if fields is None:  # not `or`: most nodes (names, constants) have no child fields at all
            fields = _child_fields(node_type)
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, AST):
                        push(item)
            elif isinstance(value, AST):
                push(value)
    return found
