#!/usr/bin/env python3
"""Measure dp-rnn-lint on the project's labelled real-world corpus and write benchmarks/REALWORLD.md.

The corpus is a list of labels (benchmarks/realworld/manifest.json): for a public repository at a fixed
commit, a location (file and line), a rule, whether that rule should flag it there, and why, in our own
words. The repositories' code is never kept in this project: the script materialises their Python
files and notebooks from local git mirrors (as the search tool's `fetch` brings them, one folder per repository named
`owner+name` holding a bare `repo`), lints each whole tree the way a user would (`dp-rnn-lint .` from its
root), and compares the findings with the labels.

    python benchmarks/realworld.py MIRRORS_DIR            # writes benchmarks/REALWORLD.md
    python benchmarks/realworld.py MIRRORS_DIR --no-write # prints the figures only

A finding matches a label when its path, line and code (and a notebook's cell) are the label's. Per rule it reports precision
(labelled findings that are right), recall (flagged labels that are found), how many findings offer a
fix (and why the others do not), every miss and false positive, and every finding at a location no label
covers (the corpus must be extended until there are none: a finding nobody judged is not evidence either
way). It also runs `dp-rnn-lint --fix --unsafe-fixes .` twice on a copy of each tree: every file the fix
changed must compile, and the second run must change nothing.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "benchmarks" / "realworld" / "manifest.json"
RESULTS = REPO / "benchmarks" / "REALWORLD.md"
WORK = REPO / "benchmarks" / ".corpora" / "realworld"
# What the tool scored on repositories the first time it met them, before anyone tuned it there.
FIRST_CONTACT = REPO / "benchmarks" / "realworld" / "first_contact.json"
SCORED_RULES = ("DPR001", "DPR002", "DPR003", "DPR004", "DPR005", "DPR006", "DPR007", "DPR008")
# Files a project's linting reads: Python sources and the files that mark its root.
_MATERIALISED = (".py", ".ipynb", "pyproject.toml", "setup.cfg", "setup.py")
_ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py")


def _why_no_fix(message: str) -> str:
    """The reason a finding's message gives for offering no fix: "(<why>, so no fix is offered)", where
    <why> may hold parentheses of its own."""
    end = message.rfind(", so no fix is offered")
    if end < 0:
        return ""
    depth, start = 0, end
    while start > 0:
        start -= 1
        if message[start] == ")":
            depth += 1
        elif message[start] == "(":
            if depth == 0:
                return message[start + 1:end]
            depth -= 1
    return message[:end]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load_manifest(path: Path) -> dict:
    with open(path, encoding="utf-8") as handle:
        manifest = json.load(handle)
    seen = set()
    for label in manifest["labels"]:
        missing = {"repo", "path", "line", "rule", "expected", "reason"} - set(label)
        if missing:
            raise SystemExit(f"error: {path}: a label lacks {', '.join(sorted(missing))}: {label}")
        if label["expected"] not in ("flagged", "clean"):
            raise SystemExit(f"error: {path}: expected must be flagged or clean: {label}")
        key = label_key(label)
        if key in seen:
            raise SystemExit(f"error: {path}: two labels for {key}")
        seen.add(key)
    return manifest


def materialise(mirrors: Path, repository: dict, work: Path) -> Path:
    """The repository's Python files at its commit, in a folder of their own (reused when complete)."""
    name = repository["repo"].replace("/", "+")
    tree = work / name
    marker = tree / ".materialised"
    if marker.exists() and marker.read_text(encoding="utf-8").strip() == repository["commit"] and any(
            (tree / name).exists() for name in _ROOT_MARKERS):
        return tree
    git_dir = mirrors / name / "repo"
    if not git_dir.is_dir():
        raise SystemExit(f"error: {git_dir}: no mirror of {repository['repo']} (fetch github:{repository['repo']})")
    listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", repository["commit"]],
                             check=True, capture_output=True).stdout.decode("utf-8", "surrogateescape")
    if tree.exists():
        subprocess.run(["rm", "-rf", str(tree)], check=True)
    tree.mkdir(parents=True)
    wanted = []
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        _, kind, sha = meta.split()
        if kind == "blob" and path.endswith(_MATERIALISED):
            wanted.append((sha, path))
    # One cat-file process for every blob: a mirror may lack large blobs, which are skipped.
    batch = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                           input="".join(f"{sha}\n" for sha, _ in wanted).encode(), check=True,
                           capture_output=True).stdout
    offset = 0
    for sha, path in wanted:
        header_end = batch.index(b"\n", offset)
        header = batch[offset:header_end].split()
        offset = header_end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(batch[offset:offset + size])
        offset += size + 1
    if not any((tree / name).exists() for name in _ROOT_MARKERS):
        # A clone has .git at its root; without some marker the tree's project would be the folder above.
        (tree / "setup.cfg").write_text("", encoding="utf-8")
    marker.write_text(repository["commit"] + "\n", encoding="utf-8")
    return tree


UNREADABLE: Dict[str, int] = {}  # tree -> files the linter could not read or parse there
UNPARSABLE: Dict[str, set] = {}  # tree -> the paths among those that Python 3 cannot parse
_CANNOT_PARSE = re.compile(r"^error: (.+?):\d+:\d+: cannot parse")


def lint(tree: Path) -> Tuple[List[dict], float]:
    """The findings of `dp-rnn-lint .` run from the tree's root, and the run's wall time."""
    started = time.perf_counter()
    # With the rules in preview too: they are measured here, to learn when they can leave it.
    done = subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--isolated", "--no-cache", "--preview", "--format", "json",
                           "--exit-zero", "."], cwd=tree, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    elapsed = time.perf_counter() - started
    try:
        findings = json.loads(done.stdout)
    except ValueError:
        findings = None
    # Exit 1 with a findings list: some files could not be read or parsed (Python 2 sources, say), which
    # the linter reports one line each on stderr; the rest of the tree is still scored.
    if findings is None or done.returncode not in (0, 1):
        raise SystemExit(f"error: dp-rnn-lint failed in {tree} (exit {done.returncode}):\n{done.stderr}")
    UNREADABLE[str(tree)] = sum(1 for line in done.stderr.splitlines() if line.strip())
    UNPARSABLE[str(tree)] = {match.group(1).replace(os.sep, "/").removeprefix("./")
                             for match in map(_CANNOT_PARSE.match, done.stderr.splitlines()) if match}
    for finding in findings:
        finding["path"] = finding["path"].replace(os.sep, "/")
    return findings, elapsed


def _python_files(tree: Path) -> Dict[str, bytes]:
    """The tree's Python files and notebooks, by path."""
    return {path.relative_to(tree).as_posix(): path.read_bytes()
            for path in sorted([*tree.rglob("*.py"), *tree.rglob("*.ipynb")])}


def _compiles(path: str, data: bytes) -> bool:
    """A Python file compiles; a notebook is valid JSON whose code cells compile (IPython lines masked)."""
    flags = 0
    try:
        if path.endswith(".ipynb"):
            if str(REPO) not in sys.path:
                sys.path.insert(0, str(REPO))
            from dp_rnn_lint.notebooks import NotebookProblem, view_of
            try:
                data = view_of(data)
            except NotebookProblem:
                return False
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT  # as IPython runs cells, and as the linter checks its fixes
        compile(data, path, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def label_key(label: dict) -> tuple:
    """Where a label (or a finding) is: a notebook's locations name the cell its line counts in."""
    return label["repo"], label["path"], label.get("cell"), label["line"], label.get("rule") or label["code"]


def location(item: dict) -> str:
    cell = f"cell {item['cell']}:" if item.get("cell") is not None else ""
    return f"{item['path']}:{cell}{item['line']}"


def check_fixes(tree: Path) -> dict:
    """`dp-rnn-lint --fix --unsafe-fixes .` on a copy of the tree, twice: which files the first run changed,
    which of those do not compile, which the second run changed again, and the findings left per rule afterwards."""
    copy = tree.with_name(tree.name + ".fixed")
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(tree, copy)
    argv = [sys.executable, "-m", "dp_rnn_lint", "--isolated", "--no-cache", "--preview", "--exit-zero", "--fix",
            "--unsafe-fixes", "."]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = _python_files(copy)
    _fix(argv, copy, env)
    after = _python_files(copy)
    changed = sorted(path for path, data in after.items() if data != before.get(path))
    not_compiling = [path for path in changed if not _compiles(path, after[path])]
    _fix(argv, copy, env)
    again = _python_files(copy)
    changed_again = sorted(path for path, data in again.items() if data != after.get(path))
    left, _ = lint(copy)
    shutil.rmtree(copy)
    return {"changed": changed, "not_compiling": not_compiling, "changed_again": changed_again,
            "left": Counter(finding["code"] for finding in left)}


def preview_codes() -> Tuple[str, ...]:
    """The rules that run only with --preview (precision on reviewed findings below 0.9): scored all the same."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from dp_rnn_lint.rules import NEEDS_BY_CODE

    return tuple(code for code, needs in NEEDS_BY_CODE.items() if needs.preview)


def _fix(argv: List[str], tree: Path, env: Dict[str, str]) -> None:
    """One `--fix` run; exit 1 only says that some files could not be parsed (they are left as they are)."""
    done = subprocess.run(argv, cwd=tree, capture_output=True, env=env)
    if done.returncode not in (0, 1):
        raise SystemExit(f"error: dp-rnn-lint --fix failed in {tree} (exit {done.returncode}):\n{done.stderr.decode()}")


def score(manifest: dict, findings_by_repo: Dict[str, List[dict]]) -> dict:
    labels_by_key = {label_key(label): label for label in manifest["labels"]}
    found_keys = {}
    for repo, findings in findings_by_repo.items():
        for finding in findings:
            found_keys[label_key({**finding, "repo": repo})] = finding
    per_rule = {rule: {"tp": [], "fp": [], "fn": [], "tn": [], "unlabelled": [], "fixable": 0, "unfixed": []}
                for rule in SCORED_RULES}
    for key, label in labels_by_key.items():
        rule = label["rule"]
        if rule not in per_rule:
            continue
        found = key in found_keys
        outcome = {("flagged", True): "tp", ("flagged", False): "fn",
                   ("clean", True): "fp", ("clean", False): "tn"}[label["expected"], found]
        per_rule[rule][outcome].append(label)
        if outcome == "tp" and found_keys[key].get("fixable"):
            per_rule[rule]["fixable"] += 1
        elif outcome == "tp":
            # The finding's own words say why no fix is offered: "(<why>, so no fix is offered)".
            message = found_keys[key]["message"]
            why = _why_no_fix(message)
            per_rule[rule]["unfixed"].append({**label, "why": why or "no fix"})
    for key, finding in found_keys.items():
        if key[4] in per_rule and key not in labels_by_key:
            per_rule[key[4]]["unlabelled"].append({"repo": key[0], "path": key[1], "cell": key[2], "line": key[3],
                                                   "rule": key[4], "message": finding["message"]})
    return per_rule


def _counts(per_rule: dict) -> Dict[str, Dict[str, int]]:
    return {rule: {k: len(counts[k]) for k in ("tp", "fp", "fn", "tn")} for rule, counts in per_rule.items()}


def _only(manifest: dict, repos: Sequence[str]) -> dict:
    return {"repositories": [r for r in manifest["repositories"] if r["repo"] in repos],
            "labels": [label for label in manifest["labels"] if label["repo"] in repos]}


def load_first_contact(path: Path = FIRST_CONTACT) -> dict:
    if not path.exists():
        return {"format": 1, "records": []}
    return json.loads(path.read_text(encoding="utf-8"))


def first_contact_record(manifest: dict, findings_by_repo: Dict[str, List[dict]], repos: Sequence[str]) -> dict:
    """The figures of the tool of this checkout on repositories it has never been tuned on."""
    chosen = _only(manifest, repos)
    per_rule = score(chosen, {repo: findings_by_repo[repo] for repo in repos})
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "dp_rnn_lint"], capture_output=True,
                           text=True).stdout.strip()
    return {"date": datetime.date.today().isoformat(), "tool_commit": commit + ("+changes" if dirty else ""),
            "repos": list(repos), "labels": len(chosen["labels"]), "per_rule": _counts(per_rule),
            "missed": [f"{rule} {label['repo']} {location(label)}" for rule, counts in per_rule.items()
                       for label in counts["fn"]],
            "false_positives": [f"{rule} {label['repo']} {location(label)}" for rule, counts in per_rule.items()
                                for label in counts["fp"]]}


def first_contact_section(manifest: dict, findings_by_repo: Dict[str, List[dict]], first_contact: dict) -> List[str]:
    """Each first-contact record beside what the tool of this checkout scores on the same repositories."""
    records = first_contact.get("records", [])
    if not records:
        return []
    lines = ["", "## First contact", "",
             "Repositories labelled before the tool was tuned on them "
             "([realworld/first_contact.json](realworld/first_contact.json) keeps the figures the tool had then; "
             "they are never rewritten). \"now\" is this run on the same labels."]
    for record in records:
        repos = [repo for repo in record["repos"] if repo in findings_by_repo]
        now = _counts(score(_only(manifest, repos), {repo: findings_by_repo[repo] for repo in repos}))
        lines += ["", f"**{record['date']}**, tool at {record['tool_commit']}: {record['labels']} labels over "
                  f"{', '.join(record['repos'])}", "",
                  "| rule | flagged | clean | first contact: right / FP / missed | precision | recall "
                  "| now: right / FP / missed | precision | recall |", "|---|---|---|---|---|---|---|---|---|"]
        for rule in SCORED_RULES:
            then, current = record["per_rule"][rule], now[rule]
            if not any(then.values()):
                continue
            lines.append(f"| {rule} | {then['tp'] + then['fn']} | {then['fp'] + then['tn']} "
                         f"| {then['tp']} / {then['fp']} / {then['fn']} | {ratio(then['tp'], then['tp'] + then['fp'])} "
                         f"| {ratio(then['tp'], then['tp'] + then['fn'])} "
                         f"| {current['tp']} / {current['fp']} / {current['fn']} "
                         f"| {ratio(current['tp'], current['tp'] + current['fp'])} "
                         f"| {ratio(current['tp'], current['tp'] + current['fn'])} |")
        changed = [f"{rule} {then['tp'] + then['fn']} flagged / {then['fp'] + then['tn']} clean then, "
                   f"{now[rule]['tp'] + now[rule]['fn']} / {now[rule]['fp'] + now[rule]['tn']} now"
                   for rule in SCORED_RULES for then in [record["per_rule"][rule]]
                   if (then["tp"] + then["fn"], then["fp"] + then["tn"])
                   != (now[rule]["tp"] + now[rule]["fn"], now[rule]["fp"] + now[rule]["tn"])]
        if changed:
            lines += ["", "Labels changed since (their reasons say why): " + "; ".join(changed) + "."]
        if record["missed"] or record["false_positives"]:
            wrong = [f"missed {item}" for item in record["missed"]]
            wrong += [f"false positive {item}" for item in record["false_positives"]]
            lines += ["", "Wrong at first contact: " + "; ".join(wrong) + "."]
    return lines


def ratio(part: int, whole: int) -> str:
    return f"{part / whole:.2f}" if whole else "n/a"


def report(manifest: dict, per_rule: dict, timings: Dict[str, float], mirrors_note: str,
           fixes: Dict[str, dict], findings_by_repo: Dict[str, List[dict]], unreadable: Dict[str, int],
           first_contact: dict, unparsable: Dict[str, set] = None) -> str:
    unparsable = unparsable or {}
    labels = manifest["labels"]
    repos = sorted({label["repo"] for label in labels})
    lines = ["# The real-world corpus: results", "",
             "Written by `python benchmarks/realworld.py MIRRORS_DIR`; do not edit by hand. The labels are in",
             "[realworld/manifest.json](realworld/manifest.json); [realworld/README.md](realworld/README.md) says how",
             "they were made and what a location means for each rule.", "",
             f"- run: {datetime.date.today().isoformat()}, {mirrors_note}",
             f"- labels: {len(labels)} over {len(repos)} repositories "
             f"({sum(1 for l in labels if l['expected'] == 'flagged')} flagged, "
             f"{sum(1 for l in labels if l['expected'] == 'clean')} clean)", "",
             "| rule | labels | flagged | clean | found right | false positives | missed | precision | recall | fix offered |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    preview = preview_codes()
    for rule, counts in per_rule.items():
        tp, fp, fn, tn = (len(counts[k]) for k in ("tp", "fp", "fn", "tn"))
        name = f"{rule} (preview)" if rule in preview else rule
        lines.append(f"| {name} | {tp + fp + fn + tn} | {tp + fn} | {fp + tn} | {tp} | {fp} | {fn} | "
                     f"{ratio(tp, tp + fp)} | {ratio(tp, tp + fn)} | {counts['fixable']} of {tp} |")
    lines += first_contact_section(manifest, findings_by_repo, first_contact)
    lines += ["", "## Per repository", "",
              "| repository | commit | labels | lint time (s) | files not parsed | files `--fix` changed "
              "| of them not compiling | changed by a second `--fix` | findings left after `--fix` (of all findings) |",
              "|---|---|---|---|---|---|---|---|---|"]
    counts_by_repo = Counter(label["repo"] for label in labels)
    for repository in manifest["repositories"]:
        repo = repository["repo"]
        fixed = fixes[repo]
        left = ", ".join(f"{code} {count}" for code, count in sorted(fixed["left"].items())) or "none"
        lines.append(f"| {repo} | {repository['commit'][:12]} | {counts_by_repo[repo]} | {timings.get(repo, 0):.2f} "
                     f"| {unreadable.get(repo, 0)} | {len(fixed['changed'])} | {len(fixed['not_compiling'])} "
                     f"| {len(fixed['changed_again'])} "
                     f"| {left} (of {len(findings_by_repo[repo])}) |")
    problems = [(repo, kind, path) for repo, fixed in fixes.items()
                for kind in ("not_compiling", "changed_again") for path in fixed[kind]]
    lines += ["", "## Fixes", ""]
    # A fix that applies must take its finding away: what is left is what was offered no fix.
    for repo, fixed in fixes.items():
        offered_none = Counter(finding["code"] for finding in findings_by_repo[repo] if not finding.get("fixable"))
        if fixed["left"] != offered_none:
            problems.append((repo, "left", f"{dict(fixed['left'])} left, {dict(offered_none)} offered no fix"))
    if not problems:
        lines.append(f"`dp-rnn-lint --fix --unsafe-fixes .` changed {sum(len(f['changed']) for f in fixes.values())} "
                     "files over the "
                     "trees; every changed file compiles, a second `--fix` changes nothing, and the findings left "
                     "after it are exactly those offered no fix.")
    what = {"not_compiling": "does not compile after `--fix`", "changed_again": "changed again by a second `--fix`",
            "left": "findings left after `--fix` are not those offered no fix"}
    for repo, kind, path in problems:
        lines.append(f"- {repo} `{path}`: {what[kind]}")
    unfixed = [(rule, label) for rule, counts in per_rule.items() for label in counts["unfixed"]]
    lines += ["", "### Flagged locations found without a fix", ""]
    if not unfixed:
        lines.append("None.")
    for rule, label in unfixed:
        lines.append(f"- {rule} {label['repo']} `{location(label)}`: {label['why']}")
    for title, key in (("Missed (flagged labels without a finding)", "fn"),
                       ("False positives (clean labels with a finding)", "fp")):
        lines += ["", f"## {title}", ""]
        listed = [(rule, label) for rule, counts in per_rule.items() for label in counts[key]]
        if not listed:
            lines.append("None.")
        for rule, label in listed:
            # A finding there needs a parse: say so where the file is one Python 3 cannot parse.
            note = " (not linted: Python 3 cannot parse the file)" if label["path"] in unparsable.get(label["repo"], ()) else ""
            lines.append(f"- {rule} {label['repo']} `{location(label)}`{note}: {label['reason']}")
    lines += ["", "## Findings at unlabelled locations", ""]
    unlabelled = [item for counts in per_rule.values() for item in counts["unlabelled"]]
    if not unlabelled:
        lines.append("None: every finding of the scored rules is at a labelled location.")
    for item in unlabelled:
        lines.append(f"- {item['rule']} {item['repo']} `{location(item)}`")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirrors", type=Path, help="folder of mirrors, one `owner+name/repo` git directory each")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--work", type=Path, default=WORK, help="where the trees are materialised (reused)")
    parser.add_argument("--no-write", action="store_true", help="print the report instead of writing it")
    parser.add_argument("--record-first-contact", action="store_true",
                        help="score only the repositories marked `first_contact` that have no record yet, with the "
                             "tool of this checkout, and add their figures to realworld/first_contact.json")
    args = parser.parse_args(argv)
    manifest = load_manifest(args.manifest)
    first_contact = load_first_contact()
    if args.record_first_contact:
        recorded = {repo for record in first_contact["records"] for repo in record["repos"]}
        repos = [r["repo"] for r in manifest["repositories"] if r.get("first_contact") and r["repo"] not in recorded]
        if not repos:
            raise SystemExit("error: no repository is marked first_contact without a record")
        findings = {}
        for repository in manifest["repositories"]:
            if repository["repo"] in repos:
                findings[repository["repo"]], _ = lint(materialise(args.mirrors, repository, args.work))
        record = first_contact_record(manifest, findings, repos)
        first_contact["records"].append(record)
        if not args.no_write:
            FIRST_CONTACT.write_text(json.dumps(first_contact, indent=1) + "\n", encoding="utf-8")
        log(json.dumps(record, indent=1))
        return 0
    findings_by_repo: Dict[str, List[dict]] = {}
    timings: Dict[str, float] = {}
    fixes: Dict[str, dict] = {}
    unreadable: Dict[str, int] = {}
    unparsable: Dict[str, set] = {}
    for repository in manifest["repositories"]:
        tree = materialise(args.mirrors, repository, args.work)
        findings_by_repo[repository["repo"]], timings[repository["repo"]] = lint(tree)
        unreadable[repository["repo"]] = UNREADABLE.get(str(tree), 0)
        unparsable[repository["repo"]] = UNPARSABLE.get(str(tree), set())
        fixes[repository["repo"]] = check_fixes(tree)
        log(f"{repository['repo']}: {len(findings_by_repo[repository['repo']])} findings "
            f"in {timings[repository['repo']]:.2f} s; --fix changed {len(fixes[repository['repo']]['changed'])} files")
    per_rule = score(manifest, findings_by_repo)
    text = report(manifest, per_rule, timings, f"dp-rnn-lint from this checkout, {len(manifest['repositories'])} trees",
                  fixes, findings_by_repo, unreadable, first_contact, unparsable)
    if args.no_write:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        log(f"wrote {args.output}")
    for rule, counts in per_rule.items():
        tp, fp, fn = (len(counts[k]) for k in ("tp", "fp", "fn"))
        log(f"{rule}: precision {ratio(tp, tp + fp)}, recall {ratio(tp, tp + fn)} "
            f"({tp} right, {fp} false positives, {fn} missed, {len(counts['unlabelled'])} unlabelled findings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
