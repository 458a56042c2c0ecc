"""The `dp-rnn-lint` command: options and exit codes only; the engine does the work.

Exit status: 0 when no finding remains, 1 when findings remain or a file could not be linted,
2 when the command line itself is wrong.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import List, Optional, Sequence, TextIO

from . import __version__
from .engine import FileResult, Selection, lint_path
from .files import discover
from .reporters import REPORTERS
from .rules import ALL_RULES

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def _code_list(value: str) -> List[str]:
    codes = [code.strip().upper() for code in value.split(",") if code.strip()]
    known = [rule.code for rule in ALL_RULES]
    for code in codes:
        if code != "ALL" and not any(k.startswith(code) for k in known):
            raise argparse.ArgumentTypeError(f"unknown rule code or prefix {code!r} (known: {', '.join(known)})")
    return codes


def _pattern_list(value: str) -> List[str]:
    return [pattern.strip() for pattern in value.split(",") if pattern.strip()]


def build_parser() -> argparse.ArgumentParser:
    rules = "\n".join(f"  {rule.code}  {rule.summary}" for rule in ALL_RULES)
    parser = argparse.ArgumentParser(
        prog="dp-rnn-lint",
        description="Find (and fix) the recurrent-network traps of torch.nn.DataParallel. "
        "Reads code only: never imports or runs it.",
        epilog=f"rules:\n{rules}\n\nexit status: 0 clean, 1 findings remain or a file could not be "
        "linted, 2 usage error",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or folders to lint (default: .)")
    parser.add_argument("--fix", action="store_true", help="rewrite files in place with the fixes")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    parser.add_argument("--select", type=_code_list, action="extend", metavar="CODES",
                        help="comma-separated codes or prefixes to enable (default: DPR)")
    parser.add_argument("--ignore", type=_code_list, action="extend", default=[], metavar="CODES",
                        help="comma-separated codes or prefixes to disable")
    parser.add_argument("--exclude", type=_pattern_list, action="extend", default=[], metavar="PATTERNS",
                        help="comma-separated file or folder name patterns to skip when walking folders")
    parser.add_argument("--format", choices=sorted(REPORTERS), default="text", help="output format (default: text)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _describe_problem(result: FileResult) -> str:
    problem = result.problem or ""
    separator = ":" if problem[:1].isdigit() else ": "
    return f"error: {result.path}{separator}{problem}"


def _print_diff(result: FileResult, out: TextIO) -> None:
    def decode(data: bytes) -> List[str]:
        return data.decode("utf-8", "replace").splitlines(keepends=True)

    diff = difflib.unified_diff(decode(result.original or b""), decode(result.fixed or b""), result.path, result.path)
    for line in diff:
        out.write(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    out, err = sys.stdout, sys.stderr
    selection = Selection(select=tuple(args.select or ("DPR",)), ignore=tuple(args.ignore))
    fix = args.fix or args.diff
    write = args.fix and not args.diff

    results: List[FileResult] = []
    for path, problem in discover(args.paths, exclude=args.exclude):
        if problem is not None:
            results.append(FileResult(path, problem=problem))
        else:
            results.append(lint_path(path, selection, fix=fix, write=write))

    problems = [r for r in results if r.problem is not None]
    for result in problems:
        err.write(_describe_problem(result) + "\n")

    if args.diff:
        changed = [r for r in results if r.fixed is not None]
        for result in changed:
            _print_diff(result, out)
        would_fix = sum(r.fixed_count for r in changed)
        err.write(f"Would fix {would_fix} error{'s' if would_fix != 1 else ''}.\n" if would_fix else "No fixes available.\n")
        return EXIT_FINDINGS if changed or problems else EXIT_CLEAN

    REPORTERS[args.format](results, out)
    remaining = sum(len(r.findings) for r in results)
    if args.format == "text":
        out.write(_summary(results, remaining, args.fix) + "\n")
    return EXIT_FINDINGS if remaining or problems else EXIT_CLEAN


def _summary(results: Sequence[FileResult], remaining: int, fixed_run: bool) -> str:
    fixed = sum(r.fixed_count for r in results)
    fixable = sum(1 for r in results for f in r.findings if f.fixable)
    unreadable = sum(1 for r in results if r.problem is not None)
    tail = f" {unreadable} file{'s' if unreadable != 1 else ''} could not be linted." if unreadable else ""
    if fixed_run and fixed:
        return f"Found {fixed + remaining} error{'s' if fixed + remaining != 1 else ''} ({fixed} fixed, {remaining} remaining).{tail}"
    if remaining == 0:
        return ("All checks passed!" if not unreadable else "No findings.") + tail
    hint = f" ({fixable} fixable with `dp-rnn-lint --fix`)" if fixable else ""
    return f"Found {remaining} error{'s' if remaining != 1 else ''}{hint}.{tail}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
