"""What rules produce and front ends consume: violations, their fixes, and located findings."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, List, Optional, Tuple, Union

if TYPE_CHECKING:  # the edits hold libcst nodes; this module itself does not need libcst
    import libcst as cst

# A statement to insert, as (indent level, text) lines relative to where it goes; the fix applier
# renders them with the file's own indentation and line ending.
StatementLines = Tuple[Tuple[int, str], ...]


@dataclass(frozen=True)
class InsertAtBodyStart:
    """Insert statements as the first of a function's body, after its docstring."""

    function: cst.FunctionDef
    lines: StatementLines


@dataclass(frozen=True)
class InsertBeforeStatement:
    statement: cst.BaseStatement
    lines: StatementLines


@dataclass(frozen=True)
class AppendKeywordArgument:
    call: cst.Call
    keyword: str
    value: str  # source text of the argument's value


@dataclass(frozen=True)
class AppendMethodCall:
    """`lengths` becomes `lengths.cpu()` (parenthesised first when the expression needs it)."""

    expression: cst.BaseExpression
    method: str
    shown: str  # the expression's source text, for the fix's description


@dataclass(frozen=True)
class ReplaceExpression:
    """An expression becomes other code (a name the expression was just stored in)."""

    expression: cst.BaseExpression
    value: str  # source text of what replaces it
    shown: str  # the expression's source text, for the fix's description


Edit = Union[InsertAtBodyStart, InsertBeforeStatement, AppendKeywordArgument, AppendMethodCall, ReplaceExpression]


@dataclass(frozen=True)
class Fix:
    edits: Tuple[Edit, ...]
    # Safe fixes keep behaviour on one device; see each rule's "Fix safety" section.
    safe: bool = True
    # What the fix does, in a line; derived from the edits unless given.
    description: str = ""

    def __post_init__(self) -> None:
        if not self.description and self.edits:
            object.__setattr__(self, "description", _describe(self.edits))

    @property
    def applicability(self) -> str:
        """"safe" or "unsafe", as ruff labels fixes in its JSON."""
        return "safe" if self.safe else "unsafe"

    def detached(self) -> "Fix":
        """The fix without its syntax-tree edits (kept: safety and description), as it crosses a process
        boundary or goes into the cache."""
        return Fix((), self.safe, self.description)


def _describe(edits: Tuple[Edit, ...]) -> str:
    parts = []
    for edit in edits:
        if isinstance(edit, AppendKeywordArgument):
            parts.append(f"pass `{edit.keyword}={edit.value}`")
        elif isinstance(edit, AppendMethodCall):
            parts.append(f"call `.{edit.method}()` on `{edit.shown}`")
        elif isinstance(edit, ReplaceExpression):
            parts.append(f"pass `{edit.value}` for `{edit.shown}`")
        else:
            parts.append("insert `" + "; ".join(text for _, text in edit.lines) + "`")
    description = ", then ".join(dict.fromkeys(parts))
    return description[:1].upper() + description[1:]


@dataclass(frozen=True)
class Violation:
    """A rule's verdict on one node; the engine turns it into a located Finding."""

    code: str
    message: str
    node: cst.CSTNode
    fix: Optional[Fix] = None
    # What the finding is about at that node (`self.lstm`): two RNNs run at one call are two findings,
    # one RNN reported through two classes sharing the method is one.
    subject: str = ""


@dataclass(frozen=True)
class TextEdit:
    """A fix's change as text: replace [start, end) with content. Lines and columns are 1-based,
    columns in characters; the fixes only insert, so start and end are the same position."""

    line: int
    col: int
    end_line: int
    end_col: int
    content: str


@dataclass(frozen=True)
class Finding:
    path: str
    line: int  # 1-based
    col: int  # 1-based, in characters
    code: str
    message: str
    fix: Optional[Fix] = None
    # The fix as text edits on the file as read, for machine-readable output; filled only on request.
    edits: Tuple[TextEdit, ...] = ()
    # Where the flagged code ends (exclusive), 1-based like line and col.
    end_line: Optional[int] = None
    end_col: Optional[int] = None
    # In a notebook, the cell (1-based) that line and end_line count in; None for a Python file.
    cell: Optional[int] = None

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def applicable(self, unsafe_fixes: bool = False) -> bool:
        """Whether `--fix` applies this finding's fix: safe fixes always, unsafe ones only when asked."""
        return self.fix is not None and (self.fix.safe or unsafe_fixes)

    def detached(self) -> "Finding":
        return replace(self, fix=self.fix.detached()) if self.fix is not None else self


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    problem: Optional[str] = None
    original: Optional[bytes] = None
    fixed: Optional[bytes] = None  # the fixed content, when fixing changed something
    fixed_codes: Counter = field(default_factory=Counter)  # how many findings of each code were fixed
    note: Optional[str] = None  # why the file was skipped, when it was
    write_failed: bool = False  # fixes were found but could not be written: `problem` says why

    @property
    def fixed_count(self) -> int:
        return sum(self.fixed_codes.values())
