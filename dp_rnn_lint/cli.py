"""The `dp-rnn-lint` command: options and exit codes only; the engine does the work.

Exit status: 0 when no finding remains, 1 when findings remain or a file could not be linted,
2 when the command line itself is wrong.
"""

from __future__ import annotations

import argparse
from collections import Counter
import dataclasses
import functools
import os
import re
import sys
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Set, TextIO, Tuple

from . import __version__
from .config import (ConfigError, Settings, SettingsResolver, code_list, pattern_list, per_file_ignores, word_list,
                     selected_codes)
from .cache import CACHE_DIR_ENV, DEFAULT_CACHE_DIR, ResultCache, RunCache, default_cache_dir
from .findings import FileResult
from .rules import Selection
from .parse import decode as decode_source, source_encoding
from .files import FileProblem, discover, excluded_path, project_root, read_source, write_atomically
from .reporters import FORMATS, FORMATS_WITH_EDITS, printable, reporter
from .reporters.text import located_problem, report_text
from . import docs, notebooks, rules, stages

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
# Formats read by people, which end with a summary line; the others are read by programs.
HUMAN_FORMATS = ("text", "concise")


def _option(reader):
    """An argparse type from one of config's value readers, so the file and the command line agree."""
    def parse(value: str):
        try:
            return list(reader(value, ""))
        except ConfigError as error:
            raise argparse.ArgumentTypeError(str(error)) from error
    return parse


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return number


class _LintParser(argparse.ArgumentParser):
    """Lists the rules at the end of --help, loading them (and libcst) only when help is asked for."""

    def format_help(self) -> str:
        listed = "\n".join(f"  {rule.code}  {rule.summary}" for rule in rules.ALL_RULES)
        self.epilog = (
            f"rules:\n{listed}\n\nother commands:\n  dp-rnn-lint rule CODE     print a rule's documentation "
            "(`rule --all` lists them)\n  dp-rnn-lint verify FILE   run FILE's model under a DataParallel check "
            "(imports and runs FILE; see `dp-rnn-lint verify --help`)\n  dp-rnn-lint server        a language server "
            "over stdio, for editors (the `server` extra)\n\nexit status: 0 clean, "
            "1 findings remain or a file could not be linted, 2 usage error"
        )
        return super().format_help()


def build_parser() -> argparse.ArgumentParser:
    parser = _LintParser(
        prog="dp-rnn-lint",
        description="Find (and fix) the recurrent-network traps of torch.nn.DataParallel. "
        "Reads code only: never imports or runs it.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or folders to lint (default: .)")
    parser.add_argument("--fix", action="store_true", help="rewrite files in place with the fixes")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    parser.add_argument("--select", type=_option(selected_codes), action="extend", metavar="CODES",
                        help="comma-separated codes or prefixes to enable (default: DPR)")
    parser.add_argument("--extend-select", type=_option(code_list), action="extend", metavar="CODES",
                        help="comma-separated codes or prefixes to enable on top of --select (DPR100, unused noqa "
                        "comments, is enabled only this way or by name)")
    parser.add_argument("--ignore", type=_option(code_list), action="extend", metavar="CODES",
                        help="comma-separated codes or prefixes to disable")
    parser.add_argument("--per-file-ignores", type=_option(per_file_ignores), action="extend",
                        metavar="PATTERN:CODES", help="disable codes in files matching a pattern "
                        "(repeatable; several space-separated entries allowed)")
    parser.add_argument("--exclude", type=_option(pattern_list), action="extend", metavar="PATTERNS",
                        help="comma-separated file or folder patterns to skip when walking folders, replacing the "
                        "default list (.git, .venv, build, dist, __pycache__, ...)")
    parser.add_argument("--extend-exclude", type=_option(pattern_list), action="extend", metavar="PATTERNS",
                        help="like --exclude, but added to the configured or default list")
    parser.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction, default=None,
                        help="skip files git ignores when walking folders (default: on)")
    parser.add_argument("--force-exclude", action=argparse.BooleanOptionalAction, default=None,
                        help="apply the exclusions to files named on the command line too (as pre-commit names them)")
    parser.add_argument("--scope", choices=("any", "wrapped"), default=None,
                        help="any: check every nn.Module class (default); wrapped: only the classes the project "
                        "index finds DataParallel running (wrapped classes, their submodules and bases)")
    parser.add_argument("--extend-rnn-words", type=_option(word_list), action="extend", metavar="WORDS",
                        help="comma-separated words that, besides rnn, lstm, gru and cell, mark a class chosen by a "
                        "run-time name (getattr(nn, recurrent_kind)) as an RNN; added to the configured list")
    parser.add_argument("--config", metavar="PATH",
                        help="read settings from this TOML file (a pyproject.toml's [tool.dp-rnn-lint] table, or "
                        "top-level keys of any other file) instead of looking for pyproject.toml")
    parser.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text: each finding with its source line (default); concise: one line each; json and "
                        "sarif: with each fix's edits; github: workflow annotations")
    parser.add_argument("--stdin-filename", metavar="NAME",
                        help="with the path -: the name to report for source read from standard input")
    parser.add_argument("--unsafe-fixes", action=argparse.BooleanOptionalAction, default=None,
                        help="with --fix or --diff, apply unsafe fixes too (default: the unsafe-fixes setting, off)")
    parser.add_argument("--preview", action=argparse.BooleanOptionalAction, default=None,
                        help="run the rules still in preview too (default: the preview setting, off)")
    parser.add_argument("--add-noqa", action="store_true",
                        help="append `# noqa: CODE` to every line with a finding (merged into a noqa comment already "
                        "there); nothing else changes")
    parser.add_argument("--show-fixes", action="store_true", help="with --fix, list what was fixed in each file")
    parser.add_argument("--statistics", action="store_true", help="print the number of findings per code instead")
    parser.add_argument("-o", "--output-file", metavar="PATH",
                        help="write the report to PATH instead of standard output")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    parser.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary line")
    parser.add_argument("-j", "--jobs", type=_positive, metavar="N",
                        help="lint in N processes (default: one per core)")
    parser.add_argument("--stats", action="store_true",
                        help="after the run, print to stderr where its time went, stage by stage")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    parser.add_argument("--cache-dir", metavar="PATH",
                        help=f"where the result cache lives (default: ${CACHE_DIR_ENV}, else {DEFAULT_CACHE_DIR})")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _print_diff(result: FileResult, out: TextIO) -> None:
    def decode(data: bytes) -> str:
        try:
            return decode_source(data)
        except FileProblem:
            return data.decode("utf-8", "replace")

    import difflib  # only --diff needs it

    name = printable(result.path)
    if notebooks.is_notebook(result.path):
        # One diff per changed cell, named as its findings are, showing the cells as they are written.
        before = {number: text for number, _, text in notebooks.cell_texts((result.original or b"").decode("utf-8"))}
        pairs = [(f"{name}:cell {number}", notebooks.unmasked(before.get(number, "")), notebooks.unmasked(text))
                 for number, _, text in notebooks.cell_texts((result.fixed or b"").decode("utf-8"))
                 if text != before.get(number)]
    else:
        pairs = [(name, decode(result.original or b""), decode(result.fixed or b""))]
    for shown, old, new in pairs:
        for line in difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), shown, shown):
            out.write(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")


def build_verify_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dp-rnn-lint verify",
        description="Run a model under DataParallel (real GPUs when there are enough, else a CPU emulation; "
        "--device cuda: every replica on one GPU) and report what goes wrong. This IMPORTS AND RUNS the given "
        "file: it is the only dp-rnn-lint command that executes user code. Needs torch "
        "(pip install 'dp-rnn-lint[harness]').",
    )
    parser.add_argument("file", metavar="FILE", nargs="?", help="Python file defining the model and input factories")
    parser.add_argument("--template", action="store_true",
                        help="print a commented FILE to fill in (make_model, make_inputs) and exit: "
                        "dp-rnn-lint verify --template > check_my_model.py")
    parser.add_argument("--skip-package-init", action="store_true",
                        help="import FILE (in a package) without running the __init__.py of its packages: for a "
                        "package whose __init__ imports what the model does not need")
    parser.add_argument("--model-factory", default="make_model", metavar="NAME",
                        help="function returning the nn.Module (default: make_model)")
    parser.add_argument("--inputs-factory", default="make_inputs", metavar="NAME",
                        help="function returning the inputs: a tuple, a dict of keyword inputs, or (tuple, dict) "
                        "(default: make_inputs)")
    parser.add_argument("--replicas", type=int, default=2, metavar="N", help="number of replicas (default: 2)")
    parser.add_argument("--train", action="store_true",
                        help="keep the model in training mode (default: eval mode, which also compares the "
                        "output with the single-device output)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="auto: the real nn.DataParallel with at least --replicas GPUs, else the CPU emulation "
                        "(default); cpu: the CPU emulation; cuda: every replica on the current GPU, built as "
                        "DataParallel builds replicas on a second GPU, with cuDNN's own warnings and torch's own "
                        "gather")
    return parser


def rule(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="dp-rnn-lint rule", description="Print a rule's documentation.")
    parser.add_argument("code", nargs="?", metavar="CODE",
                        help="a rule code or name (`dp-rnn-lint rule --all` lists them)")
    parser.add_argument("--all", action="store_true", help="list every rule")
    args = parser.parse_args(argv)
    if args.all or not args.code:
        from .noqa import UNUSED_NOQA, UNUSED_NOQA_NAME, UNUSED_NOQA_SUMMARY

        for each in rules.ALL_RULES:
            sys.stdout.write(f"{each.code}  {each.name}  {each.summary}\n")
        sys.stdout.write(f"{UNUSED_NOQA}  {UNUSED_NOQA_NAME}  {UNUSED_NOQA_SUMMARY} (opt-in)\n")
        return EXIT_CLEAN
    from .noqa import UNUSED_NOQA, UNUSED_NOQA_NAME, UNUSED_NOQA_PAGE

    if args.code.upper() == UNUSED_NOQA or args.code.lower() == UNUSED_NOQA_NAME:
        sys.stdout.write(UNUSED_NOQA_PAGE)
        return EXIT_CLEAN
    found = rules.RULES_BY_CODE.get(args.code.upper()) or next(
        (each for each in rules.ALL_RULES if each.name == args.code.lower()), None)
    if found is None:
        sys.stderr.write(f"dp-rnn-lint rule: error: unknown rule {args.code!r} (known: {', '.join(rules.RULE_CODES)}, DPR100)\n")
        return EXIT_USAGE
    sys.stdout.write(docs.rule_page(found))
    return EXIT_CLEAN


def serve(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="dp-rnn-lint server", description="Run the language server over "
                                     "stdio: diagnostics and quick fixes in an editor (pip install 'dp-rnn-lint[server]').")
    parser.parse_args(argv)
    try:
        from .server import main as serve_stdio
    except ImportError as error:
        sys.stderr.write(f"dp-rnn-lint server: error: the server needs pygls ({error}); "
                         "pip install 'dp-rnn-lint[server]'\n")
        return EXIT_USAGE
    return serve_stdio()


def verify(argv: Sequence[str]) -> int:
    parser = build_verify_parser()
    args = parser.parse_args(argv)
    if args.template:
        from .verify_template import TEMPLATE  # printed without torch: the file is filled in first

        sys.stdout.write(TEMPLATE)
        return EXIT_CLEAN
    if args.file is None:
        parser.print_usage(sys.stderr)
        sys.stderr.write("dp-rnn-lint verify: error: give FILE, or --template to write one\n")
        return EXIT_USAGE
    if args.replicas < 2:
        # One replica is the module itself: nothing is split or gathered, so "ok" would prove nothing.
        sys.stderr.write("dp-rnn-lint verify: error: --replicas must be at least 2 (one replica splits nothing)\n")
        return EXIT_USAGE
    try:
        from .harness import DeviceUnavailable, check_data_parallel, resolve_device
        from .harness.loading import LoadProblem, load_model_and_inputs
    except ImportError as error:
        sys.stderr.write(f"dp-rnn-lint verify: error: the harness needs torch ({error}); "
                         "pip install 'dp-rnn-lint[harness]'\n")
        return EXIT_USAGE
    try:
        resolve_device(args.device)  # before the file runs: a missing GPU is the command's problem, not the file's
    except DeviceUnavailable as error:
        sys.stderr.write(f"dp-rnn-lint verify: error: --device {args.device}: {error}\n")
        return EXIT_USAGE
    try:
        model, inputs, kwargs = load_model_and_inputs(args.file, args.model_factory, args.inputs_factory,
                                                      skip_package_init=args.skip_package_init)
    except LoadProblem as problem:
        sys.stderr.write(f"error: {printable(args.file)}: {printable(str(problem))}\n")
        return EXIT_USAGE
    model.train(args.train)
    report = check_data_parallel(model, *inputs, replicas=args.replicas, device=args.device, **kwargs)
    sys.stdout.write(f"{printable(args.file)}: {printable(str(report), keep_newlines=True)}\n")
    return EXIT_CLEAN if report.ok else EXIT_FINDINGS


# Syntax trees are many small objects that live until the file is done: collecting cycles every 700
# allocations (Python's default) spends a quarter of the parse time scanning them. Collected far less
# often, memory still stays flat (each file's trees are freed as it ends).
_GC_THRESHOLD = 50_000


def main(argv: Optional[Sequence[str]] = None) -> int:
    import gc

    previous = gc.get_threshold()
    gc.set_threshold(_GC_THRESHOLD, *previous[1:])
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`dp-rnn-lint . | head`): stop quietly, as other command-line tools do.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_FINDINGS
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    finally:
        gc.set_threshold(*previous)  # main() is also called in-process (tests, scripts)


def _main(argv: Optional[Sequence[str]] = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # A file name the terminal's encoding cannot show is escaped, not a crash after fixes were written.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "verify":
        return verify(argv[1:])
    if argv and argv[0] == "server":
        return serve(argv[1:])
    if argv and argv[0] == "rule":
        return rule(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    out, err = sys.stdout, sys.stderr
    if args.config and args.isolated:
        parser.error("--config and --isolated cannot be used together")
    if args.add_noqa and (args.fix or args.diff):
        parser.error("--add-noqa cannot be used with --fix or --diff")
    if args.add_noqa and "-" in args.paths:
        parser.error("--add-noqa writes files; it cannot be used with - (standard input)")
    for warning in _options_without_effect(args):
        err.write(f"warning: {warning}\n")
    try:
        # Every path's settings are read before any file is linted (or fixed): a bad file stops the run early.
        resolver = SettingsResolver(_overrides(args), config=Path(args.config) if args.config else None,
                                    isolated=args.isolated)
        stdin_name = args.stdin_filename or "-"
        settings_per_path = [(path, resolver.for_path(stdin_name if path == "-" else path)) for path in args.paths]
    except ConfigError as error:
        err.write(f"error: {printable(str(error))}\n")
        return EXIT_USAGE
    if args.output_file:
        try:
            # Opened before any file is linted or fixed: a path that cannot be written stops the run first.
            out = open(args.output_file, "w", encoding="utf-8")
        except OSError as error:
            err.write(f"error: {printable(args.output_file)}: cannot write the output file: {error.strerror or error}\n")
            return EXIT_USAGE
    if args.stats:
        stages.enable()
    try:
        with stages.stage("other"):
            return _run(args, parser, settings_per_path, stdin_name, out, err)
    finally:
        if out is not sys.stdout:
            out.close()
        if args.stats:
            from .runner import default_jobs

            err.write(stages.table(stages.wall_seconds(), args.jobs or default_jobs()))


def _run(args, parser, settings_per_path, stdin_name: str, out: TextIO, err: TextIO) -> int:
    # The engine, the analysis and the worker pool load once a file needs linting: a run answered whole by
    # the run cache (a repeated run over an unchanged tree) never needs them, and importing them costs
    # about a third of such a run.
    fix = args.fix or args.diff
    write = args.fix and not args.diff
    describe_fixes = args.format in FORMATS_WITH_EDITS and not args.statistics

    results: List[FileResult] = []
    index = None
    run_cache: Optional[RunCache] = None
    from_run_cache = False
    if "-" in args.paths:
        # For editors: `dp-rnn-lint - --stdin-filename model.py`.
        if args.paths != ["-"]:
            parser.error("- (standard input) cannot be combined with other paths")
        stdin_raw = stdin_source = sys.stdin.buffer.read()
        [(_, settings)] = settings_per_path
        notebook_problem = stdin_notebook = None
        if notebooks.is_notebook(stdin_name):
            try:
                stdin_notebook = notebooks.parse_notebook(stdin_raw)
                stdin_source = notebooks.python_view(stdin_notebook)
            except notebooks.NotebookProblem as problem:
                notebook_problem = str(problem)
        if settings.force_exclude and excluded_path(stdin_name, settings.exclusions, settings.root):
            results.append(FileResult(stdin_name, original=stdin_source))  # excluded: passed through untouched
        elif notebook_problem is not None:
            results.append(FileResult(stdin_name, problem=notebook_problem))
        else:
            selection = settings.selection_for(stdin_name)
            context = None
            from .analysis.project import build_index
            from .engine import lint_source

            if _needs_index([(selection, settings)]):
                index = build_index([stdin_name], sources={stdin_name: stdin_source})
                context = index.context_for(stdin_name, settings.scope)
            results.append(lint_source(stdin_source, stdin_name, selection, fix=fix, describe_fixes=describe_fixes,
                                       context=context, check_syntax=True, unsafe_fixes=settings.unsafe_fixes))
    else:
        found = []
        walked: Dict[Tuple[str, int], List[str]] = {}  # (folder named, its settings) -> the files found there
        named: Set[str] = set()  # files named themselves: their syntax is always checked (a walk screens words)
        for given, settings in settings_per_path:
            with stages.stage("walking and reading"):
                files = [(path, problem) for path, problem in _files(given, settings)]
            if os.path.isdir(given) and not files:
                err.write(f"warning: no Python files found under {printable(given)}\n")
            if os.path.isdir(given):
                if not settings.force_exclude:  # the project's walk never force-excludes
                    walked[os.path.abspath(given), id(settings)] = [path for path, problem in files if problem is None]
            else:
                named.update(path for path, _ in files)
            found += [(path, problem, settings.selection_for(path), settings) for path, problem in files]
        cache_dir = None if args.no_cache else (Path(args.cache_dir) if args.cache_dir else default_cache_dir(args.paths[0]))

        @functools.cache
        def the_project() -> Tuple[List[str], str]:
            """The project's files and the folder its index cache is named by, walked once: the run cache's key
            and the index both read them. The project of the linted files is indexed, not just the files
            named: a class in one file may derive from a base, or be wrapped, in another (pre-commit names
            only the changed files)."""
            return project_files([(path, settings) for path, problem, _, settings in found if problem is None], walked)

        def built_index(pool=None):
            from .analysis.project import build_index, index_cache_file
            from .runner import default_jobs

            nonlocal index
            files, anchor = the_project()
            index = build_index(files, cache_file=index_cache_file(cache_dir, anchor), jobs=args.jobs or default_jobs(),
                                pool=pool)
            return index

        if (cache_dir is not None and walked and not (fix or args.add_noqa or describe_fixes)
                and all(settings.scope != "wrapped" for _, settings in settings_per_path)):
            # A folder linted again: with no file changed (by size and modification time) and the same
            # settings, the last run's results are this one's, and no file is read. Wrapped scope also
            # reports the project's unresolved wraps, and fixes need each file's syntax tree: not these.
            run_cache = RunCache(cache_dir, repr(sorted(os.path.abspath(path) for path in args.paths)),
                                 [(path, problem, selection, settings.scope, path in named)
                                  for path, problem, selection, settings in found], the_project()[0])
            cached = run_cache.get()
            if cached is not None:
                results, from_run_cache = cached, True
        lazy = _needs_index([(selection, settings) for _, _, selection, settings in found])
        if not from_run_cache and lazy and any(settings.scope == "wrapped" for _, settings in settings_per_path):
            # Wrapped scope lists the wraps it could not resolve, so its index is built whatever the files.
            built_index()
            lazy = False
        # Otherwise the index is built only once a file needs the analysis (most trees have none).
        if not from_run_cache:
            from .analysis.project import FileContext
            from .runner import Options, Task, default_jobs, lint_files

            tasks = [Task(path, selection, problem,
                          index.context_for(path, settings.scope) if index else (None if lazy else FileContext()),
                          scope=settings.scope, named=path in named, unsafe_fixes=settings.unsafe_fixes)
                     for path, problem, selection, settings in found]
            cache = None if cache_dir is None else ResultCache(cache_dir)
            results = lint_files(tasks, Options(fix=fix, write=write, describe_fixes=describe_fixes),
                                 jobs=args.jobs or default_jobs(),
                                 cache=cache, index=built_index if lazy else None)
        if index is not None:
            index.save()  # the files summarised for their classes' bases, for the next run
    if "-" in args.paths:
        [(_, stdin_settings)] = settings_per_path
        linted = {stdin_name: (stdin_settings.selection_for(stdin_name), stdin_settings)}
    else:
        linted = {path: (selection, settings) for path, _, selection, settings in found}
    if not from_run_cache:
        _add_unused_noqa(results, linted, index)
        if run_cache is not None:
            run_cache.put(results)
    if args.add_noqa:
        return _add_noqa(results, err)
    results = [_in_cells(result) for result in results]
    unresolved = _unresolved_in_wrapped_scope(index, settings_per_path)
    unsafe_allowed = {path: settings.unsafe_fixes for path, (_, settings) in linted.items()}
    hidden = _hidden_fixes(results, unsafe_allowed)

    problems = [r for r in results if r.problem is not None]
    for result in problems:
        err.write(f"error: {located_problem(result.path, result.problem)}\n")
    for result in results:
        if result.note:
            err.write(f"note: {printable(result.path)}: {result.note}\n")

    if args.diff:
        changed = [r for r in results if r.fixed is not None]
        for result in changed:
            _print_diff(result, out)
        would_fix = sum(r.fixed_count for r in changed)
        err.write((f"Would fix {would_fix} error{'s' if would_fix != 1 else ''}" if would_fix else "No fixes available")
                  + (f" ({_hidden_hint(hidden)})" if hidden else "") + ".\n")
        return EXIT_FINDINGS if changed or problems else EXIT_CLEAN

    if "-" in args.paths and args.fix:
        # The fixed source replaces the editor's buffer; what could not be fixed goes where it shows messages.
        [result] = results
        fixed = result.fixed
        if fixed is not None and stdin_notebook is not None:
            try:
                fixed = notebooks.with_fixed_view(stdin_notebook, stdin_source, fixed)
            except notebooks.NotebookProblem as problem:
                fixed, result.problem = None, str(problem)
                err.write(f"error: {located_problem(result.path, result.problem)}\n")
        sys.stdout.buffer.write(fixed if fixed is not None else stdin_raw)
        sys.stdout.flush()
        report_text(results, err)
        _print_unresolved(unresolved, err)
        return _exit_status(args, results)

    return _report(args, results, out, unresolved, unsafe_allowed, hidden)


def _in_cells(result: FileResult) -> FileResult:
    """A notebook's result with its findings' and problem's positions counted in their cells, as they are
    shown; the lint itself ran on the notebook's Python view."""
    if not notebooks.is_notebook(result.path):
        return result
    view = result.fixed if result.fixed is not None else result.original
    if view is None and result.problem and result.problem[:1].isdigit():
        try:
            view = read_source(result.path)  # a syntax error's result keeps no content: its position needs it
        except FileProblem:
            return result
    if view is None:
        return result
    starts = notebooks.cell_starts(view.decode("utf-8", "replace"))
    problem = result.problem
    position = re.match(r"(\d+):(\d+): ", problem or "")
    if position:
        cell, line = notebooks.in_cell(int(position.group(1)), starts)
        if cell is not None:
            problem = f"cell {cell}:{line}:{position.group(2)}: {problem[position.end():]}"
    return dataclasses.replace(result, findings=notebooks.located_in_cells(result.findings, starts), problem=problem)


def _options_without_effect(args: argparse.Namespace) -> List[str]:
    """Options this command line makes no use of: said once each, so that nobody relies on them."""
    checks = (
        (args.show_fixes and not args.fix, "--show-fixes does nothing without --fix"),
        (args.show_fixes and args.diff, "--show-fixes does nothing with --diff (the diff shows the fixes)"),
        (args.statistics and args.diff, "--statistics does nothing with --diff"),
        (args.stdin_filename is not None and "-" not in args.paths,
         "--stdin-filename does nothing unless the path is - (standard input)"),
        (args.cache_dir is not None and args.no_cache, "--cache-dir does nothing with --no-cache"),
        (args.unsafe_fixes is not None and args.add_noqa, "--unsafe-fixes does nothing with --add-noqa"),
    )
    return [message for applies, message in checks if applies]


def _add_unused_noqa(results: Sequence[FileResult], linted: Mapping[str, Tuple[Selection, Settings]], index) -> None:
    """DPR100, where selected: the file's `noqa` comments against its findings before any noqa applied,
    which only files with such a comment are analysed again for (few are)."""
    from .engine import check_source
    from .noqa import unused_directives

    for result in results:
        selection, settings = linted.get(result.path, (None, None))
        if result.problem is not None or selection is None or not selection.reports_unused_noqa:
            continue
        data = result.fixed if result.fixed is not None else result.original
        if data is None:
            try:
                data = read_source(result.path)
            except FileProblem:
                continue
        if b"noqa" not in data.lower():
            continue
        try:
            text = decode_source(data)
            raw = check_source(data, result.path, selection,
                               context=index.context_for(result.path, settings.scope) if index is not None else None)
        except FileProblem:
            continue
        unused = unused_directives(raw, text, result.path, selection.codes())
        if unused:
            result.findings = sorted(result.findings + unused, key=lambda f: (f.line, f.col, f.code))
            if result.original is None:
                result.original = data


def _add_noqa(results: Sequence[FileResult], err: TextIO) -> int:
    """--add-noqa: each file with findings gets `# noqa: CODE` comments, written as a fix is written."""
    from .noqa import UNUSED_NOQA, with_noqa_added

    added, failed = 0, False
    for result in results:
        if result.problem is not None:
            err.write(f"error: {located_problem(result.path, result.problem)}\n")
            failed = True
            continue
        findings = [f for f in result.findings if f.code != UNUSED_NOQA]
        if not findings or result.original is None:
            continue
        try:
            encoding = source_encoding(result.original)
            text, count = with_noqa_added(decode_source(result.original), findings)
            if count:
                write_atomically(result.path, text.encode(encoding), result.original)
        except FileProblem as problem:
            err.write(f"error: {located_problem(result.path, str(problem))}\n")
            failed = True
            continue
        added += count
    err.write(f"Added {added} noqa directive{'s' if added != 1 else ''}.\n")
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def _overrides(args: argparse.Namespace) -> dict:
    """The command line's settings (None where not given), named as Settings names them."""
    return {
        "select": args.select, "extend_select": args.extend_select, "ignore": args.ignore,
        "per_file_ignores": args.per_file_ignores,
        "exclude": args.exclude, "extend_exclude": args.extend_exclude, "respect_gitignore": args.respect_gitignore,
        "force_exclude": args.force_exclude, "scope": args.scope, "unsafe_fixes": args.unsafe_fixes,
        "preview": args.preview, "extend_rnn_words": args.extend_rnn_words,
    }


def _needs_index(selections) -> bool:
    """Whether a selected rule asks the project index (every rule so far: which classes are modules, as
    bases live in other files), or the scope is the wrapped set; it is built only once a file needs the
    analysis."""
    return any(settings.scope == "wrapped" or rules.needs_index(selection.codes()) for selection, settings in selections)


def project_files(linted: Sequence[Tuple[str, Settings]],
                  walked: Optional[Mapping[Tuple[str, int], List[str]]] = None) -> Tuple[List[str], str]:
    """The files the project index reads for a run (the linted files, and every Python file of the
    projects that hold them, walked with each project's exclusions), and the folder its cache is named by.
    `walked`: the files already found under folders named on the command line, by (absolute folder,
    id of its settings): a project root named there (`dp-rnn-lint .`) is not walked twice."""
    files = {path: None for path, _ in linted}
    roots: Dict[Path, Settings] = {}
    asked: Set[Tuple[str, int]] = set()  # (folder, id of its settings): a folder's files share their root
    for path, settings in linted:
        folder = os.path.dirname(path)
        if (folder, id(settings)) in asked:
            continue
        asked.add((folder, id(settings)))
        root = project_root(path)
        if root is not None and root not in roots:
            roots[root] = settings
    for root, settings in roots.items():
        known = (walked or {}).get((str(root), id(settings)))
        if known is not None:
            files.update(dict.fromkeys(known))
            continue
        for path, problem in discover([str(root)], exclude=settings.exclusions, root=settings.root,
                                      respect_gitignore=settings.respect_gitignore):
            if problem is None:
                files.setdefault(path, None)
    anchor = str(next(iter(roots))) if len(roots) == 1 else os.getcwd()
    return list(files), anchor


def _unresolved_in_wrapped_scope(index, settings_per_path) -> list:
    if index is None or not any(settings.scope == "wrapped" for _, settings in settings_per_path):
        return []
    return index.unresolved


def _print_unresolved(unresolved, out: TextIO) -> None:
    """Why wrapped scope checked every class: the wraps whose target the index could not tell."""
    if not unresolved:
        return
    count = len(unresolved)
    out.write(f"Scope wrapped: every module class was checked, because {count} DataParallel "
              f"wrap{'s' if count != 1 else ''} could not be resolved:\n")
    for item in unresolved:
        site = item.site
        where = f"cell {site.cell[0]}:{site.cell[1]}" if site.cell else str(site.line)
        out.write(f"  {printable(site.path)}:{where}:{site.col}: {printable(site.text)} ({printable(item.reason)})\n")


def _files(given: str, settings: Settings):
    return discover([given], exclude=settings.exclusions, root=settings.root,
                    respect_gitignore=settings.respect_gitignore, force_exclude=settings.force_exclude)


def _hidden_fixes(results: Sequence[FileResult], unsafe_allowed: Mapping[str, bool]) -> int:
    """How many findings have a fix that this run does not apply because it is unsafe."""
    return sum(1 for r in results for f in r.findings if f.fixable and not f.applicable(unsafe_allowed.get(r.path, False)))


def _hidden_hint(hidden: int) -> str:
    return f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option"


def _report(args: argparse.Namespace, results: List[FileResult], out: TextIO, unresolved: list,
            unsafe_allowed: Mapping[str, bool], hidden: int) -> int:
    remaining = sum(len(r.findings) for r in results)
    if args.show_fixes and args.fix:
        # Programs read stdout for the other formats, so the list goes to stderr there.
        _print_fixes(results, out if args.format in HUMAN_FORMATS else sys.stderr)
    if args.statistics:
        _print_statistics(results, out, unsafe_allowed)
    else:
        reporter(args.format)(results, out)
    if args.format in HUMAN_FORMATS and not args.quiet:
        out.write(_summary(results, remaining, args.fix, unsafe_allowed, hidden) + "\n")
        _print_unresolved(unresolved, out)
    elif args.format not in HUMAN_FORMATS:
        _print_unresolved(unresolved, sys.stderr)  # stdout is for programs
    return _exit_status(args, results)


def _exit_status(args: argparse.Namespace, results: Sequence[FileResult]) -> int:
    if any(r.problem is not None for r in results):
        return EXIT_FINDINGS
    remaining = sum(len(r.findings) for r in results)
    return EXIT_CLEAN if args.exit_zero or not remaining else EXIT_FINDINGS


def _print_fixes(results: Sequence[FileResult], out: TextIO) -> None:
    fixed = [r for r in results if r.fixed_count]
    total = sum(r.fixed_count for r in fixed)
    if not total:
        out.write("No errors were fixed.\n")
        return
    out.write(f"Fixed {total} error{'s' if total != 1 else ''}:\n")
    for result in fixed:
        out.write(f"- {printable(result.path)}:\n")
        for code, count in sorted(result.fixed_codes.items()):
            out.write(f"    {count} \u00d7 {code} ({_code_name(code)})\n")
    out.write("\n")


def _print_statistics(results: Sequence[FileResult], out: TextIO, unsafe_allowed: Mapping[str, bool]) -> None:
    counts = Counter(f.code for r in results for f in r.findings)
    fixable = Counter(f.code for r in results for f in r.findings if f.applicable(unsafe_allowed.get(r.path, False)))
    for code in sorted(counts):
        mark = "*" if fixable[code] else " "
        out.write(f"{counts[code]:>5}  {code}  {mark} {_code_summary(code)}\n")


def _code_name(code: str) -> str:
    from .noqa import UNUSED_NOQA, UNUSED_NOQA_NAME

    return UNUSED_NOQA_NAME if code == UNUSED_NOQA else rules.RULES_BY_CODE[code].name


def _code_summary(code: str) -> str:
    from .noqa import UNUSED_NOQA, UNUSED_NOQA_SUMMARY

    return UNUSED_NOQA_SUMMARY if code == UNUSED_NOQA else rules.RULES_BY_CODE[code].summary


def _summary(results: Sequence[FileResult], remaining: int, fixed_run: bool, unsafe_allowed: Mapping[str, bool],
             hidden: int) -> str:
    fixed = sum(r.fixed_count for r in results)
    fixable = sum(1 for r in results for f in r.findings if f.applicable(unsafe_allowed.get(r.path, False)))
    unreadable = sum(1 for r in results if r.problem is not None)
    checked = len(results) - unreadable
    tail = f" Checked {checked} file{'s' if checked != 1 else ''}."
    tail += f" {unreadable} file{'s' if unreadable != 1 else ''} could not be linted." if unreadable else ""
    # As ruff says it: unsafe fixes are "hidden" until --unsafe-fixes (or unsafe-fixes = true) enables them.
    hidden_line = f"\n{_hidden_hint(hidden)}." if hidden else ""  # it starts with the count
    if fixed_run and fixed:
        total = fixed + remaining
        return f"Found {total} error{'s' if total != 1 else ''} ({fixed} fixed, {remaining} remaining).{tail}{hidden_line}"
    if remaining == 0:
        return ("All checks passed!" if not unreadable else "No findings.") + tail
    hint = f" ({fixable} fixable with `dp-rnn-lint --fix`)" if fixable else ""
    return f"Found {remaining} error{'s' if remaining != 1 else ''}{hint}.{tail}{hidden_line}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
