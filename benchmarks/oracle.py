#!/usr/bin/env python3
"""Compare our model of which `self.<attr>` can hold a torch RNN with astroid's, and write benchmarks/ORACLE.md.

Our side is dp_rnn_lint.analysis.evaluator.project_rnn_attributes; the other side is an independent oracle
built on astroid, pylint's inference engine, over a small torch stub (tests/oracle/astroid_oracle.py).
Both answer, for every nn.Module subclass of a project, {(path, class qualname): {attr: RNN kinds}}.

    python benchmarks/oracle.py MIRRORS_DIR            # the real-world corpus -> benchmarks/ORACLE.md
    python benchmarks/oracle.py --fixtures             # fixtures/projects/* -> benchmarks/ORACLE_FIXTURES.md
    python benchmarks/oracle.py --fixtures --no-write  # print the report instead

The unit is one (path, class, attribute) that either side says can hold an RNN, in a class both sides take
for an nn.Module. A unit agrees when both sides say "can be a torch RNN"; differing kind sets are counted
apart, as a softer difference. Where astroid says nothing but could not infer some value it was given (a
parameter, a ModuleList built elsewhere, a base it cannot resolve) it abstains: the unit is listed but left
out of the agreement. A class that only one side takes for a module is a disagreement of its own.

Reasons for disagreements are written by a person in benchmarks/oracle_reasons.json, keyed
"tree:path:class:attr" (attr `*` for a class-level one), and survive regeneration.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.oracle.astroid_oracle import astroid_rnn_attributes, python_files  # noqa: E402

MANIFEST = REPO / "benchmarks" / "realworld" / "manifest.json"
WORK = REPO / "benchmarks" / ".corpora" / "realworld"
FIXTURE_PROJECTS = REPO / "fixtures" / "projects"
REASONS = REPO / "benchmarks" / "oracle_reasons.json"
OUTPUT = {"realworld": REPO / "benchmarks" / "ORACLE.md", "fixtures": REPO / "benchmarks" / "ORACLE_FIXTURES.md"}
OURS = "dp_rnn_lint.analysis.evaluator:project_rnn_attributes"

Key = Tuple[str, str]
Model = Dict[Key, Dict[str, FrozenSet[str]]]
# What a disagreement is: the first two are hard (counted against us, need a reason), the others soft.
ATTRIBUTE, CLASS, KINDS, ABSTAINED = "attribute", "class", "kinds", "astroid abstains"
HARD = (ATTRIBUTE, CLASS)


class Disagreement(NamedTuple):
    path: str
    cls: str
    attr: str  # "*" for a class only one side takes for a module
    ours: Optional[FrozenSet[str]]  # None: the side does not take the class for a module
    theirs: Optional[FrozenSet[str]]
    category: str
    note: str

    def key(self, tree: str) -> str:
        return f"{tree}:{self.path}:{self.cls}:{self.attr}"


class Tally(NamedTuple):
    units: int  # (path, class, attr) with an RNN on either side, in classes both take for modules
    agreed: int  # both sides say it can be an RNN
    abstained: int  # ours says RNN, astroid says nothing but could not infer everything
    disagreements: List[Disagreement]

    @property
    def ratio(self) -> float:
        counted = self.units - self.abstained
        return self.agreed / counted if counted else 1.0


def tally(ours: Model, theirs: Model, unknown: Optional[Dict[Key, FrozenSet[str]]] = None,
          ours_name: str = "ours", theirs_name: str = "astroid") -> Tally:
    """Every unit of the two models and how they compare (see the module's docstring)."""
    unknown = unknown or {}
    units = agreed = abstained = 0
    found: List[Disagreement] = []
    for key in sorted(set(ours) | set(theirs)):
        path, cls = key
        if key not in theirs or key not in ours:
            missing = theirs_name if key not in theirs else ours_name
            mine, other = ours.get(key), theirs.get(key)
            kinds = mine if mine is not None else other
            why = [f"{theirs_name} cannot resolve a base"] if "*" in unknown.get(key, ()) else []
            why += [] if kinds else ["no RNN attribute on the other side"]
            note = f"class not seen as a module by {missing}" + (f" ({'; '.join(why)})" if why else "")
            found.append(Disagreement(path, cls, "*", _union(mine), _union(other), CLASS, note))
            continue
        for attr in sorted(set(ours[key]) | set(theirs[key])):
            mine, other = ours[key].get(attr, frozenset()), theirs[key].get(attr, frozenset())
            units += 1
            if mine and other:
                agreed += 1
                if mine != other:
                    found.append(Disagreement(path, cls, attr, mine, other, KINDS, "different kinds"))
            elif mine and attr in unknown.get(key, ()):
                abstained += 1
                found.append(Disagreement(path, cls, attr, mine, other, ABSTAINED,
                                          f"{theirs_name} could not infer every value assigned"))
            else:
                side = theirs_name if mine else ours_name
                found.append(Disagreement(path, cls, attr, mine, other, ATTRIBUTE, f"no RNN seen by {side}"))
    return Tally(units, agreed, abstained, found)


def compare(ours: Model, theirs: Model, unknown: Optional[Dict[Key, FrozenSet[str]]] = None
            ) -> Tuple[float, List[Disagreement]]:
    """(agreement ratio, every difference): see tally()."""
    result = tally(ours, theirs, unknown)
    return result.ratio, result.disagreements


def _union(attributes: Optional[Dict[str, FrozenSet[str]]]) -> Optional[FrozenSet[str]]:
    """A class-level row shows every kind the side found in the class (None: not a module there)."""
    if attributes is None:
        return None
    return frozenset().union(*attributes.values()) if attributes else frozenset()


def load_ours(spec: str = OURS) -> Callable[[str, Sequence[str]], Model]:
    """Our side, imported only when asked for (so that this module loads before the evaluator exists)."""
    module, _, function = spec.partition(":")
    return getattr(importlib.import_module(module), function)


def load_reasons(path: Path = REASONS) -> Dict[str, str]:
    if not path.exists():
        return {}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


class TreeResult(NamedTuple):
    tree: str
    files: int
    tally: Optional[Tally]
    ours_seconds: float
    astroid_seconds: float
    problems: List[Tuple[str, str]]  # astroid's files it could not finish, and our side's failure
    skipped: str  # why the tree was not compared, or ""


def compare_tree(tree: str, root: Path, ours: Callable[[str, Sequence[str]], Model],
                 time_limit: float = 20.0) -> TreeResult:
    """Both models of one project root, and how they compare."""
    paths = [str(path) for path in python_files(root)]
    problems: List[Tuple[str, str]] = []
    unknown: Dict[Key, FrozenSet[str]] = {}
    started = time.perf_counter()
    theirs = astroid_rnn_attributes(str(root), paths, time_limit=time_limit, problems=problems, unknown=unknown)
    astroid_seconds = time.perf_counter() - started
    started = time.perf_counter()
    try:
        mine = ours(str(root), paths)
    except Exception as error:  # our side's bug is a finding of this run, not a reason to stop it
        return TreeResult(tree, len(paths), None, time.perf_counter() - started, astroid_seconds,
                          [*problems, ("(ours)", f"{type(error).__name__}: {error}")], "our side failed")
    ours_seconds = time.perf_counter() - started
    return TreeResult(tree, len(paths), tally(mine, theirs, unknown), ours_seconds, astroid_seconds, problems, "")


def _kinds(kinds: Optional[FrozenSet[str]]) -> str:
    if kinds is None:
        return "not a module"
    return ", ".join(sorted(kinds)) if kinds else "no RNN"


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def report(results: List[TreeResult], title: str, reasons: Dict[str, str]) -> str:
    import astroid

    lines = [
        f"# The astroid oracle: {title}",
        "",
        "written by benchmarks/oracle.py; do not edit by hand (reasons go in benchmarks/oracle_reasons.json)",
        "",
        f"Generated {datetime.date.today().isoformat()} with astroid {astroid.__version__} over the torch stub in "
        "tests/oracle/torch_stub.py. A unit is a (path, class, attribute) that either side says can hold a torch "
        "RNN, in a class both sides take for an nn.Module; it agrees when both say so. Kind differences count as "
        "agreement and are listed apart; where astroid could not infer a value it abstains, and the unit is "
        "left out of the agreement.",
        "",
        "| tree | files | units | agreement | agreed | disagreed | astroid abstains | kind differences "
        "| classes one side only | astroid s | ours s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    all_units = all_agreed = all_abstained = 0
    for result in results:
        if result.tally is None:
            lines.append(f"| {result.tree} | {result.files} | | skipped: {result.skipped} | | | | | | "
                         f"{result.astroid_seconds:.2f} | {result.ours_seconds:.2f} |")
            continue
        t = result.tally
        count = {category: sum(d.category == category for d in t.disagreements)
                 for category in (ATTRIBUTE, CLASS, KINDS)}
        all_units, all_agreed, all_abstained = all_units + t.units, all_agreed + t.agreed, all_abstained + t.abstained
        lines.append(f"| {result.tree} | {result.files} | {t.units} | {_percent(t.ratio)} | {t.agreed} "
                     f"| {count[ATTRIBUTE]} | {t.abstained} | {count[KINDS]} | {count[CLASS]} "
                     f"| {result.astroid_seconds:.2f} | {result.ours_seconds:.2f} |")
    counted = all_units - all_abstained
    lines += ["", f"Overall: {all_agreed} of {counted} units agree "
                  f"({_percent(all_agreed / counted if counted else 1.0)}); astroid abstains on {all_abstained}.", ""]
    used = set()
    for heading, categories in (("Disagreements", HARD), ("Where astroid abstains", (ABSTAINED,)),
                                ("Kind differences", (KINDS,))):
        rows = [(result.tree, d) for result in results if result.tally
                for d in result.tally.disagreements if d.category in categories]
        lines += [f"## {heading} ({len(rows)})", ""]
        if not rows:
            lines += ["None.", ""]
            continue
        lines += ["| tree | path | class | attr | ours | astroid | what | reason |", "|---|---|---|---|---|---|---|---|"]
        for tree, d in rows:
            key = d.key(tree)
            used.add(key)
            lines.append(f"| {tree} | {d.path} | {d.cls} | {d.attr} | {_kinds(d.ours)} | {_kinds(d.theirs)} "
                         f"| {d.note} | {_cell(reasons.get(key, ''))} |")
        lines.append("")
    problems = [(result.tree, path, message) for result in results for path, message in result.problems]
    lines += [f"## Files astroid could not finish, and failures ({len(problems)})", ""]
    lines += [f"- {tree}: {path}: {_cell(message)}" for tree, path, message in problems] or ["None."]
    trees = {result.tree for result in results}
    stale = sorted(key for key in reasons if key.split(":", 1)[0] in trees and key not in used)
    lines += ["", f"## Reasons no longer used ({len(stale)})", ""]
    lines += [f"- `{key}`" for key in stale] or ["None."]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def fixture_roots() -> List[Path]:
    return sorted(path for path in FIXTURE_PROJECTS.iterdir() if path.is_dir())


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirrors", type=Path, nargs="?", help="the folder of git mirrors (owner+name/repo)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="the real-world corpus's manifest")
    parser.add_argument("--work", type=Path, default=WORK, help="where the trees are materialised (reused)")
    parser.add_argument("--fixtures", action="store_true", help="compare over fixtures/projects/* instead")
    parser.add_argument("--output", type=Path, help="the report to write (ORACLE.md, or ORACLE_FIXTURES.md)")
    parser.add_argument("--no-write", action="store_true", help="print the report instead of writing it")
    parser.add_argument("--ours", default=OURS, help="our side, as module:function (default: %(default)s)")
    parser.add_argument("--time-limit", type=float, default=20.0, help="astroid's seconds per file")
    args = parser.parse_args(argv)
    if not args.fixtures and args.mirrors is None:
        parser.error("give MIRRORS_DIR, or --fixtures")
    ours = load_ours(args.ours)
    results: List[TreeResult] = []
    if args.fixtures:
        title = f"fixtures/projects, {len(fixture_roots())} projects"
        for root in fixture_roots():
            results.append(_log(compare_tree(root.name, root, ours, args.time_limit)))
    else:
        sys.path.insert(0, str(REPO / "benchmarks"))
        from realworld import load_manifest, materialise

        repositories = load_manifest(args.manifest)["repositories"]
        title = f"the real-world corpus, {len(repositories)} trees"
        for repository in repositories:
            try:
                tree = materialise(args.mirrors, repository, args.work)
            except (SystemExit, subprocess.CalledProcessError) as error:  # no mirror, or not at that commit:
                # said in the report, and the other trees still run
                why = str(error) if isinstance(error, SystemExit) else f"{repository['commit'][:12]} not in the mirror"
                results.append(_log(TreeResult(repository["repo"], 0, None, 0.0, 0.0, [], why)))
                continue
            results.append(_log(compare_tree(repository["repo"], tree, ours, args.time_limit)))
    text = report(results, title, load_reasons())
    if args.no_write:
        sys.stdout.write(text)
    else:
        output = args.output or OUTPUT["fixtures" if args.fixtures else "realworld"]
        output.write_text(text, encoding="utf-8")
        print(f"wrote {output}", file=sys.stderr)
    return 0 if any(result.tally is not None for result in results) else 1


def _log(result: TreeResult) -> TreeResult:
    if result.tally is None:
        print(f"{result.tree}: skipped ({result.skipped})", file=sys.stderr, flush=True)
    else:
        print(f"{result.tree}: {result.tally.units} units, agreement {_percent(result.tally.ratio)}, "
              f"astroid {result.astroid_seconds:.2f} s, ours {result.ours_seconds:.2f} s", file=sys.stderr, flush=True)
    return result


if __name__ == "__main__":
    sys.exit(main())
