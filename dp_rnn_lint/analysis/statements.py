"""Where a fix may put a new statement: right before the statement holding a node, when that is safe."""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst


# What a node type is to the tracker. Blocks and suites are not statements; a simple statement line and
# every compound statement are. libcst's classes are ABCs, whose isinstance checks cost more than the
# rest of the tracking, so each type is classified once.
_BLOCK, _LINE, _SUITE, _STATEMENT, _SMALL, _OTHER = "block", "line", "suite", "statement", "small", "other"
_ROLES: Dict[type, str] = {}


def _role(node_type: type) -> str:
    role = _ROLES.get(node_type)
    if role is None:
        if issubclass(node_type, (cst.IndentedBlock, cst.Module)):
            role = _BLOCK
        elif issubclass(node_type, cst.SimpleStatementLine):
            role = _LINE
        elif issubclass(node_type, cst.SimpleStatementSuite):
            role = _SUITE
        elif issubclass(node_type, cst.BaseStatement):
            role = _STATEMENT
        elif issubclass(node_type, cst.BaseSmallStatement):
            role = _SMALL
        else:
            role = _OTHER
        _ROLES[node_type] = role
    return role


class StatementTracker:
    """Follows a visitor's descent and answers "before which statement could code run just before this?".

    Code can go before a statement that sits directly in a block (not an `elif`), and that holds the
    node in its first simple statement: before `x = x.t(); x = pack(x)` or `if c: y = self.rnn(x)`
    the inserted line would run before something that the node depends on.
    """

    def __init__(self) -> None:
        self._statements: List[cst.BaseStatement] = []
        self._small: List[cst.BaseSmallStatement] = []
        self._in_block: Set[cst.CSTNode] = set()
        self._not_first: Set[cst.CSTNode] = set()
        self._in_suite: Set[cst.CSTNode] = set()

    def enter(self, node: cst.CSTNode) -> None:
        role = _ROLES.get(type(node)) or _role(type(node))
        if role is _BLOCK:
            self._in_block.update(node.body)
        elif role is _LINE:
            self._not_first.update(node.body[1:])
        elif role is _SUITE:
            self._in_suite.update(node.body)
        if role is _LINE or role is _STATEMENT:
            self._statements.append(node)
        elif role is _SMALL:
            self._small.append(node)

    def leave(self, node: cst.CSTNode) -> None:
        role = _ROLES.get(type(node)) or _role(type(node))
        if role is _LINE or role is _STATEMENT:
            if self._statements and self._statements[-1] is node:
                self._statements.pop()
        elif role is _SMALL and self._small and self._small[-1] is node:
            self._small.pop()

    @property
    def statements(self) -> tuple:
        """The statements around the current node, outermost first."""
        return tuple(self._statements)

    def insertion_point(self) -> Optional[cst.BaseStatement]:
        if not self._statements:
            return None
        statement = self._statements[-1]
        if statement not in self._in_block:
            return None
        if self._small and (self._small[-1] in self._not_first or self._small[-1] in self._in_suite):
            return None
        return statement
