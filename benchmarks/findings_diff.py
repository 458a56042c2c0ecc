"""Findings before and after a change: a refactor or a speed change must not change a verdict.

    python benchmarks/findings_diff.py --save before.json [TREE ...]     # on the tree before the change
    python benchmarks/findings_diff.py --against before.json [TREE ...]  # after it: the differences, exit 1

Each tree is linted from its own root, as a user runs the tool there, with every rule (`--preview`; with
`--no-preview`, the default rules only: files then reach the analysis by other routes, as most users'
do) in both scopes (`--scope any` and `--scope wrapped`), without a cache. A finding is its tree, path, place,
code and message, so a changed message counts too. Without TREE arguments: the fixture projects, the rule
fixtures and, where they have been materialised (`benchmarks/realworld.py`, `benchmarks/bench.py`), the
real-world corpus trees and the real-models corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO / "benchmarks" / ".corpora"
SCOPES = ("any", "wrapped")


def default_trees() -> List[Path]:
    trees = sorted(path for path in (REPO / "fixtures" / "projects").iterdir() if path.is_dir())
    trees += [path for path in (REPO / "fixtures" / name for name in sorted(os.listdir(REPO / "fixtures")))
              if path.is_dir() and path.name.startswith("DPR")]
    if (CORPORA / "realworld").is_dir():
        trees += sorted(path for path in (CORPORA / "realworld").iterdir() if path.is_dir())
    if (CORPORA / "real-models").is_dir():
        trees.append(CORPORA / "real-models")
    return trees


def findings_of(tree: Path, scope: str, preview: bool = True) -> List[str]:
    """One line per finding (and per file that could not be linted), sorted."""
    done = subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--isolated", "--no-cache",
                           "--preview" if preview else "--no-preview", "--scope", scope, "--format", "json",
                           "--exit-zero", "."], cwd=tree, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        found = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(f"error: dp-rnn-lint failed in {tree} (exit {done.returncode}):\n{done.stderr}")
    lines = []
    for item in found:
        cell = "" if item["cell"] is None else f"cell {item['cell']}:"
        lines.append(f"{item['path']}:{cell}{item['line']}:{item['col']}: {item['code']} {item['message']}")
    lines += [f"problem: {line}" for line in done.stderr.splitlines() if line.strip()]
    return sorted(lines)


def snapshot(trees: Sequence[Path], preview: bool = True) -> Dict[str, List[str]]:
    rules = "" if preview else ", default rules"
    return {f"{tree.relative_to(REPO) if tree.is_relative_to(REPO) else tree} [{scope}{rules}]":
            findings_of(tree, scope, preview) for tree in trees for scope in SCOPES}


def differences(before: Dict[str, List[str]], after: Dict[str, List[str]]) -> List[str]:
    lines = []
    for key in sorted(set(before) | set(after)):
        old, new = set(before.get(key, ())), set(after.get(key, ()))
        lines += [f"- {key}: {line}" for line in sorted(old - new)]
        lines += [f"+ {key}: {line}" for line in sorted(new - old)]
    return lines


def main(argv: Sequence[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--save", type=Path, metavar="FILE", help="write the findings to FILE")
    action.add_argument("--against", type=Path, metavar="FILE", help="compare with the findings saved in FILE")
    parser.add_argument("--preview", action=argparse.BooleanOptionalAction, default=True,
                        help="every rule (default), or with --no-preview the default rules only")
    parser.add_argument("trees", nargs="*", type=Path, help="folders to lint from their roots (default: see above)")
    args = parser.parse_args(argv)
    trees = [tree.resolve() for tree in args.trees] or default_trees()
    current = snapshot(trees, args.preview)
    count = sum(map(len, current.values()))
    if args.save:
        args.save.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{count} findings over {len(trees)} trees, both scopes, saved to {args.save}")
        return 0
    try:
        saved = json.loads(args.against.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"error: {args.against}: cannot read saved findings: {error}")
    changed = differences(saved, current)
    for line in changed:
        print(line)
    print(f"{len(changed)} differences; {count} findings over {len(trees)} trees, both scopes")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
