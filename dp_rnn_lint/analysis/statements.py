"""Where a fix may put a new statement: right before the statement holding a node, when that is safe."""

from __future__ import annotations

from typing import List, Optional, Set

import libcst as cst


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
        if isinstance(node, (cst.IndentedBlock, cst.Module)):
            self._in_block.update(node.body)
        elif isinstance(node, cst.SimpleStatementLine):
            self._not_first.update(node.body[1:])
        elif isinstance(node, cst.SimpleStatementSuite):
            self._in_suite.update(node.body)
        if isinstance(node, cst.BaseStatement):
            self._statements.append(node)
        elif isinstance(node, cst.BaseSmallStatement):
            self._small.append(node)

    def leave(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.BaseStatement) and self._statements and self._statements[-1] is node:
            self._statements.pop()
        elif isinstance(node, cst.BaseSmallStatement) and self._small and self._small[-1] is node:
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
