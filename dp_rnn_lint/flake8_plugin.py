"""The flake8 contract only: hand the file's text to the engine, yield what it finds.

flake8 applies `# noqa`, `--select` and `--extend-ignore` itself, so every finding is yielded.
Columns are 0-based, as flake8 expects (it adds 1 when printing).
"""

from __future__ import annotations

import ast
import sys
from typing import Iterator, List, Tuple

from . import __version__
from .engine import check_source
from .files import FileProblem


class DataParallelRnnChecker:
    name = "dp-rnn-lint"
    version = __version__

    def __init__(self, tree: ast.Module, filename: str, lines: List[str]) -> None:
        # flake8's own syntax tree spares the screen a second parse (most files end there).
        self.tree = tree
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        source = "".join(self.lines)
        try:
            findings = check_source(source, self.filename, tree=self.tree if isinstance(self.tree, ast.Module) else None)
        except FileProblem as problem:
            # flake8 reports syntax errors itself (E999); anything else is said once, without a traceback.
            if "cannot parse" not in str(problem) and "cannot decode" not in str(problem):
                sys.stderr.write(f"dp-rnn-lint: {self.filename}: {problem}\n")
            return
        for finding in findings:
            yield finding.line, finding.col - 1, f"{finding.code} {finding.message}", type(self)
