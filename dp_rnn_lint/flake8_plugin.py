"""The flake8 contract only: hand the file's text to the engine, yield what it finds.

flake8 applies `# noqa`, `# flake8: noqa`, `--select` and `--extend-ignore` itself, so every finding is yielded
but those a file-level `# dp-rnn-lint: noqa` silences.
Columns are 0-based, as flake8 expects (it adds 1 when printing). The project index covers the file's
project (the nearest folder upward holding pyproject.toml, setup.cfg or .git), built once per process.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from . import __version__
from .analysis.project import FileContext, ProjectIndex, build_index, index_cache_file
from .cache import default_cache_dir
from .config import ConfigError, word_list
from .engine import Selection, check_source
from .files import DEFAULT_EXCLUDES, FileProblem, discover, project_root
from .noqa import without_file_suppressed

# One index per project root (and exclusions) and process: flake8 calls the plugin once per file.
_PROJECT_INDEXES: Dict[Tuple[str, Tuple[str, ...]], ProjectIndex] = {}


def context_in_project(path: str, scope: str, cache_dir: Optional[Path], exclude: Sequence[str] = ()) -> FileContext:
    """What the index of `path`'s whole project says about it (built once per process and root).
    `exclude`: patterns of files the project's walk skips, besides the usual folders and git's ignores."""
    root = project_root(path)
    if root is None:
        return build_index([path]).context_for(path, scope)
    key = (str(root), tuple(exclude))
    if key not in _PROJECT_INDEXES:
        walk = discover([str(root)], exclude=DEFAULT_EXCLUDES + tuple(exclude), respect_gitignore=True)
        files = [found for found, problem in walk if problem is None]
        index = _PROJECT_INDEXES[key] = build_index(files, cache_file=index_cache_file(cache_dir, str(root)))
        # What the files' contexts summarised since, saved once this process is done. flake8 checks files in
        # worker processes, which leave without running atexit handlers; multiprocessing runs its own
        # finalizers there (and, at interpreter exit, in a process that checks the files itself).
        from multiprocessing.util import Finalize

        Finalize(index, index.save, exitpriority=1)
    return _PROJECT_INDEXES[key].context_for(path, scope)


class DataParallelRnnChecker:
    name = "dp-rnn-lint"
    version = __version__
    scope = "any"
    preview = False
    rnn_words: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()  # flake8's own exclusions also keep files out of the project index

    @classmethod
    def add_options(cls, manager) -> None:
        manager.add_option(
            "--dp-rnn-scope", choices=("any", "wrapped"), default="any", parse_from_config=True,
            help="dp-rnn-lint: check every nn.Module class (any, the default) or only the classes DataParallel "
            "runs in this project (wrapped)",
        )

        manager.add_option(
            "--dp-rnn-preview", action="store_true", default=False, parse_from_config=True,
            help="dp-rnn-lint: run the rules still in preview too",
        )
        manager.add_option(
            "--dp-rnn-extend-rnn-words", default="", parse_from_config=True, comma_separated_list=True,
            help="dp-rnn-lint: words that, besides rnn, lstm, gru and cell, mark a class chosen by a run-time "
            "name as an RNN",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        cls.scope = options.dp_rnn_scope
        cls.preview = bool(getattr(options, "dp_rnn_preview", False))
        try:
            cls.rnn_words = word_list(list(getattr(options, "dp_rnn_extend_rnn_words", None) or []), "--dp-rnn-extend-rnn-words")
        except ConfigError as error:
            raise SystemExit(f"dp-rnn-lint: {error}") from None
        cls.exclude = tuple(getattr(options, "exclude", None) or ()) + tuple(getattr(options, "extend_exclude", None) or ())

    def __init__(self, tree: ast.Module, filename: str, lines: List[str]) -> None:
        # flake8's own syntax tree spares the screen a second parse (most files end there).
        self.tree = tree
        self.filename = filename
        self.lines = lines

    def _project_context(self):
        return context_in_project(self.filename, self.scope, default_cache_dir(self.filename), self.exclude)

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        source = "".join(self.lines)
        try:
            # Asked for only when the cheap stages cannot rule the file out: most flake8 runs then never
            # build the project index at all. Standard input is its own project.
            context = None if self.filename in ("-", "stdin") else self._project_context
            findings = check_source(source, self.filename, Selection(preview=self.preview, rnn_words=self.rnn_words),
                                    tree=self.tree if isinstance(self.tree, ast.Module) else None, context=context)
        except FileProblem as problem:
            # flake8 reports syntax errors itself (E999); anything else is said once, without a traceback.
            if "cannot parse" not in str(problem) and "cannot decode" not in str(problem):
                sys.stderr.write(f"dp-rnn-lint: {self.filename}: {problem}\n")
            return
        # flake8 itself knows `# flake8: noqa`; ours (`# dp-rnn-lint: noqa`, with or without codes) is applied
        # here, so that the plugin and the command line silence the same files.
        for finding in without_file_suppressed(findings, source):
            yield finding.line, finding.col - 1, f"{finding.code} {finding.message}", type(self)
