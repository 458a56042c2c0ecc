#!/usr/bin/env python3
"""Time dp-rnn-lint beside flake8, ruff and torchfix on several corpora, and write benchmarks/RESULTS.md.

Corpora (built under benchmarks/.corpora/ on first use, reused while their recipe is unchanged):
  torch-subset   the .py files of the installed torch package's nn/, optim/, utils/, ao/ and export/
  candidates     model files generated from the buggy fixtures: every file holds RNNs, a pack/pad
                 pipeline and a DataParallel wrap, so no file can be skipped
  scale-N        the torch subset copied over and over, N files (2,000 and 20,000)
  real-models    2,500 files of real model code: the .py files of the real-world repositories
                 (benchmarks/realworld/manifest.json), materialised from git mirrors (--mirrors) by
                 benchmarks/realworld.py and copied until there are 2,500, under one pyproject.toml;
                 also the project of the one-file run with a warm cache (as pre-commit runs it)

Tools run one after another within a round, in turn, for several rounds; each run's wall time and peak
memory are recorded, and the tables give medians, min-max and ratios to dp-rnn-lint. flake8 without our
plugin and torchfix (which pins an older libcst) run from virtual environments of their own, made on
first use under benchmarks/.venvs/.

    python benchmarks/bench.py            # the full benchmark (tens of minutes: torchfix is slow)
    python benchmarks/bench.py --quick    # tiny corpora, one run: checks that the script works
    python benchmarks/bench.py --mirrors DIR   # with the real-models parts (DIR: owner+name/repo mirrors)
"""

from __future__ import annotations

import argparse
import ast
import compileall
import datetime
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import random
import re
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
TORCH_SUBSET_DIRS = ("nn", "optim", "utils", "ao", "export")
# Bump when the way corpora are built changes, so corpora built the old way are rebuilt.
CORPUS_RECIPE = 2
# Every corpus is a project of its own: dp-rnn-lint indexes the project root of the files it lints (the
# nearest folder upward with pyproject.toml, setup.cfg, setup.py or .git), which would otherwise be this
# checkout, every corpus under benchmarks/.corpora together.
CORPUS_PYPROJECT = b"""# A benchmark corpus, a project of its own (see benchmarks/README.md).
[project]
name = "benchmark-corpus"
version = "0"
"""

# Sizes: (full, --quick).
TORCH_SUBSET_QUICK_FILES = 20
CANDIDATE_FILES = (2000, 6)
TORCHFIX_SLICE_FILES = (200, 3)
SCALE_FILES = ((2000, 20000), (20, 200))
CANDIDATES_PER_FOLDER = 100
REAL_MODEL_FILES = (2500, 60)
ONE_FILE_RUNS = (10, 1)
MIRRORS_ENV = "DP_RNN_LINT_MIRRORS"
# What makes a folder a project root for dp-rnn-lint (dp_rnn_lint.files.PROJECT_MARKERS).
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")

TOOL_KEYS = ("flake8-dpr", "flake8", "ruff", "torchfix")
SECTION_KEYS = ("torch-subset", "candidates", "cache", "fix", "scale", "real-models", "one-file")

# The targets of issue #6; each names how its figure is judged.
TARGET_RUFF_RATIO = 1.0
TARGET_TORCHFIX_SPEEDUP = 50.0
TARGET_PLUGIN_OVERHEAD = 1.05
TARGET_TORCHFIX_PER_FILE_SPEEDUP = 10.0
TARGET_SCALE_RATE_RATIO = 0.8
TARGET_SCALE_PEAK_MB = 300.0
TARGET_CACHE_RATIO = 0.2
TARGET_FIX_RATIO = 2.0
# The targets of issue #16.
TARGET_RUFF_RATIO_16 = 0.5
TARGET_REAL_RUFF_RATIO = 0.5
TARGET_ONE_FILE_EXTRA_S = 0.3
# The targets of issue #36 (the torch subset's ≤ 1.0× ruff and the plugin's ≤ 1.05× are the rows above).
TARGET_REAL_RUFF_RATIO_36 = 1.5
TARGET_REAL_WARM_OF_RUFF = 0.1


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------
# Measuring one run


@dataclass
class Sample:
    seconds: float
    peak_kib: int
    returncode: int


class ToolFailed(Exception):
    """A tool exited with a status that means it did not do its work (not 0 or 1)."""


def measure(argv: Sequence[str], cwd: Path, env: Dict[str, str]) -> Sample:
    """Run argv once: wall time around the whole process, peak RSS of its largest process (wait4)."""
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        # Reaped here, so Popen must not wait for it again.
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1):
            stderr.seek(0)
            tail = stderr.read().decode("utf-8", "replace").strip().splitlines()[-3:]
            raise ToolFailed(f"exit status {process.returncode}: {' / '.join(tail) or 'no message'}")
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    peak_kib = usage.ru_maxrss // 1024 if sys.platform == "darwin" else usage.ru_maxrss
    return Sample(seconds, peak_kib, process.returncode)


# A row of `dp-rnn-lint --stats`: stage, files (or -), times entered, seconds, share.
_STATS_ROW = re.compile(r"^(?P<stage>\S.*?)\s+(?P<files>\d+|-)\s+(?P<entered>\d+|-)\s+(?P<seconds>[\d.]+)\s+\d+%$")


@dataclass
class StageCounts:
    """What `--stats` says of one corpus: per stage, the files that reached it and its seconds (the
    median over runs), in the tool's order."""

    stages: List[str] = field(default_factory=list)
    files: Dict[str, str] = field(default_factory=dict)
    seconds: Dict[str, List[float]] = field(default_factory=dict)
    wall: List[float] = field(default_factory=list)
    problem: str = ""


def stage_counts(argv: Sequence[str], cwd: Path, env: Dict[str, str], runs: int) -> StageCounts:
    """Run `argv --stats` (a cold run) `runs` times and read its per-stage table."""
    counts = StageCounts()
    for _ in range(runs):
        process = subprocess.run(list(argv[:-1]) + ["--stats", argv[-1]], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines = process.stderr.splitlines()
        header = next((i for i, line in enumerate(lines) if line.startswith("stage ")), None)
        if process.returncode not in (0, 1) or header is None:
            counts.problem = f"--stats gave no table (exit status {process.returncode})"
            return counts
        for line in lines[header + 1:]:
            match = _STATS_ROW.match(line)
            if match and match["stage"] != "all stages":
                name = match["stage"]
                if name not in counts.seconds:
                    counts.stages.append(name)
                counts.files[name] = match["files"]
                counts.seconds.setdefault(name, []).append(float(match["seconds"]))
            wall = re.match(r"wall time ([\d.]+) s", line)
            if wall:
                counts.wall.append(float(wall.group(1)))
    return counts


@dataclass
class Series:
    """One row of a table: a tool (or a variant of a run) on one corpus, and its samples."""

    key: str
    label: str
    command: str
    files: int
    samples: List[Sample] = field(default_factory=list)
    problem: str = ""

    @property
    def ran(self) -> bool:
        return bool(self.samples) and not self.problem

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def low(self) -> float:
        return min(s.seconds for s in self.samples)

    @property
    def high(self) -> float:
        return max(s.seconds for s in self.samples)

    @property
    def peak_mb(self) -> float:
        return max(s.peak_kib for s in self.samples) / 1024

    @property
    def files_per_second(self) -> float:
        return self.files / self.median


@dataclass
class Step:
    """What one round does for one row: an optional untimed preparation, then one timed run."""

    series: Series
    argv: List[str]
    cwd: Path
    env: Dict[str, str]
    runs: int
    prepare: Optional[Callable[[], None]] = None
    # Runs a second step right after this one in the same round (the cache's warm run after its cold one).
    then: Optional["Step"] = None


def run_rounds(section: str, steps: List[Step], rounds: int) -> None:
    """Round after round, each step once in turn, starting one step later each round."""
    steps = [step for step in steps if not step.series.problem]
    for number in range(rounds):
        shift = number % len(steps) if steps else 0
        for step in steps[shift:] + steps[:shift]:
            if len(step.series.samples) >= step.runs or step.series.problem:
                continue
            for current in (step, step.then):
                if current is None or current.series.problem:
                    continue
                if current.prepare:
                    current.prepare()
                try:
                    sample = measure(current.argv, current.cwd, current.env)
                except ToolFailed as failure:
                    current.series.problem = f"failed ({failure})"
                    log(f"[{section}] {current.series.label}: {current.series.problem}")
                    continue
                current.series.samples.append(sample)
                log(f"[{section}] round {number + 1}/{rounds} {current.series.label}: "
                    f"{sample.seconds:.2f} s, {sample.peak_kib / 1024:.0f} MB")


# ---------------------------------------------------------------------------------------------------
# Corpora


def torch_package_dir() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("error: torch is not installed here; run from the project's virtual environment "
                         "(pip install -e '.[test,bench]')")
    return Path(list(spec.submodule_search_locations)[0])


def torch_subset_sources(quick: bool) -> List[Tuple[Path, str]]:
    """(source file, path relative to the corpus) for the torch subset, in a stable order."""
    base = torch_package_dir()
    files = []
    for folder in TORCH_SUBSET_DIRS:
        for path in sorted((base / folder).rglob("*.py")):
            if "__pycache__" not in path.parts and path.is_file():
                files.append((path, path.relative_to(base).as_posix()))
    if quick:
        step = len(files) / TORCH_SUBSET_QUICK_FILES
        files = [files[int(k * step)] for k in range(TORCH_SUBSET_QUICK_FILES)]
    return files


def corpus_ready(root: Path, recipe: dict) -> bool:
    manifest = root.with_name(root.name + ".manifest.json")
    try:
        return root.is_dir() and json.loads(manifest.read_text()) == recipe
    except (OSError, ValueError):
        return False


def build_corpus(root: Path, recipe: dict, files: Callable[[], Iterable[Tuple[str, bytes]]]) -> None:
    """Write (relative path, content) files under root, and a pyproject.toml at the root unless they hold
    one (the corpus is a project of its own), unless the same recipe already built it."""
    if corpus_ready(root, recipe):
        return
    log(f"building corpus {root.name} ...")
    manifest = root.with_name(root.name + ".manifest.json")
    manifest.unlink(missing_ok=True)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for relative, content in files():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    if not (root / "pyproject.toml").exists():
        (root / "pyproject.toml").write_bytes(CORPUS_PYPROJECT)
    manifest.write_text(json.dumps(recipe))


def copied(sources: List[Tuple[Path, str]], count: int) -> Callable[[], Iterator[Tuple[str, bytes]]]:
    """count files: the sources copied over and over, copy k in folder copy_k/."""
    def files() -> Iterator[Tuple[str, bytes]]:
        contents = [(relative, path.read_bytes()) for path, relative in sources]
        for index in range(count):
            relative, content = contents[index % len(contents)]
            yield f"copy_{index // len(contents):03d}/{relative}", content
    return files


def python_files(root: Path) -> List[Path]:
    return sorted(root.rglob("*.py"))


def megabytes(files: List[Path]) -> float:
    return sum(p.stat().st_size for p in files) / 1e6


# ---------------------------------------------------------------------------------------------------
# The all-candidates corpus: fixtures renamed and mixed with unrelated code

_MARKER = re.compile(r"\s*#\s*expect:\s*(DPR\d{3}.*)$")


@dataclass
class Fixture:
    name: str
    source: str
    top_level_names: List[str]
    expected_findings: int
    model_factory: str


def buggy_fixtures(rule: str) -> List[Fixture]:
    """The fixtures of a rule that have findings: not the golden .fixed.py, clean_ or noqa_ files."""
    fixtures = []
    for path in sorted((FIXTURES / rule).glob("*.py")):
        if path.name.endswith(".fixed.py") or path.name.startswith(("clean_", "noqa_")):
            continue
        with tokenize.open(path) as handle:  # honours a coding cookie or BOM; newlines become \n
            text = handle.read()
        expected = 0
        lines = []
        for line in text.splitlines():
            marker = _MARKER.search(line)
            if marker:
                expected += len(marker.group(1).split(","))
                line = line[: marker.start()]
            if not line.startswith("from __future__ import"):
                lines.append(line)
        source = "\n".join(lines) + "\n"
        tree = ast.parse(source)
        names = []
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names.append(node.name)
            elif isinstance(node, ast.Assign):
                names += [target.id for target in node.targets if isinstance(target, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.append(node.target.id)
        names = [name for name in names if not name.startswith("__")]
        classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
        factory = "make_model()" if "make_model" in names else f"{classes[-1]}()"
        fixtures.append(Fixture(path.name, source, names, expected, factory))
    return fixtures


def renamed(source: str, names: List[str], suffix: str) -> str:
    """Every use of the fixture's top-level names gets the suffix; attributes (nn.LSTM) are left alone."""
    if not names:
        return source
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")\b")
    return pattern.sub(lambda match: match.group(1) + suffix, source)


_HEADER = '''\
"""Training entry point for experiment $n: two sequence models and their utilities.

Generated for dp-rnn-lint's benchmark from its fixtures (renamed, with unrelated code mixed in).
"""
import json
import math
import os
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional

import torch
'''

_UNRELATED = [
    '''
# Training defaults, tuned on the development set (run $n).
BATCH_SIZE_$n = $batch
LEARNING_RATE_$n = $rate
CHECKPOINT_DIR_$n = os.path.join("checkpoints", "run_$n")
''',
    '''
@dataclass
class TrainingConfig$n:
    """Settings read from the command line or from a JSON file."""

    epochs: int = $epochs
    clip_norm: float = $clip
    tags: List[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, path: str) -> "TrainingConfig$n":
        with open(path, encoding="utf-8") as handle:
            return cls(**json.load(handle))
''',
    '''
def batches_$n(items: List[int], size: int) -> Iterator[List[int]]:
    # The last batch may be short; the collate function pads it.
    for start in range(0, len(items), size):
        yield items[start:start + size]
''',
    '''
class Vocabulary$n:
    """Maps tokens to ids; id 0 is padding and id 1 stands for unknown tokens."""

    def __init__(self, tokens: Optional[List[str]] = None):
        self.index: Dict[str, int] = {"<pad>": 0, "<unk>": 1}
        for token in tokens or []:
            self.add(token)

    def add(self, token: str) -> int:
        return self.index.setdefault(token, len(self.index))

    def encode(self, text: str) -> List[int]:
        return [self.index.get(token, 1) for token in text.split()]
''',
    '''
def learning_rate_at_$n(step: int, warmup: int = $warmup, base: float = $rate) -> float:
    """Linear warm-up, then inverse square-root decay."""
    if step < warmup:
        return base * (step + 1) / warmup
    return base * math.sqrt(warmup / (step + 1))
''',
    '''
def count_parameters_$n(model) -> int:
    # Only trainable parameters count towards the model size we report.
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
''',
    '''
def smoothed_$n(values: List[float], window: int = $window) -> List[float]:
    smoothed, total = [], 0.0
    for position, value in enumerate(values):
        total += value
        if position >= window:
            total -= values[position - window]
        smoothed.append(total / min(position + 1, window))
    return smoothed
''',
    '''
def save_checkpoint_$n(model, optimizer, step: int, directory: str = "checkpoints") -> str:
    """Write model and optimizer state; returns the file written."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "step_%08d.pt" % step)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path)
    return path
''',
]

_SECTION_COMMENT = '''
# ---------------------------------------------------------------------------------------------------
# $title
# ---------------------------------------------------------------------------------------------------
'''

_MAIN = '''

def main():
    # DataParallel replicates each model on every visible GPU for every forward pass.
    first = torch.nn.DataParallel($first)
    second = torch.nn.DataParallel($second)
    return first, second


if __name__ == "__main__":
    main()
'''


def generate_candidate(index: int, dpr001: List[Fixture], dpr002: List[Fixture]) -> Tuple[str, int]:
    """A model file holding one DPR001 and one DPR002 fixture, renamed; and the findings it should have."""
    rng = random.Random(index)
    n = f"{index:05d}"
    values = {"n": n, "batch": rng.choice([16, 32, 64, 128]), "rate": rng.choice(["1e-3", "3e-4", "5e-4"]),
              "epochs": rng.randint(5, 60), "clip": rng.choice(["0.25", "1.0", "5.0"]),
              "warmup": rng.choice([1000, 4000, 8000]), "window": rng.randint(10, 100)}
    pieces = [(dpr001[index % len(dpr001)], "a"), (dpr002[(index // len(dpr001)) % len(dpr002)], "b")]
    rng.shuffle(pieces)
    extras = rng.sample(_UNRELATED, 5)
    titles = ["Data", "Models", "Utilities", "Training", "Evaluation", "Checkpoints"]

    def filled(template: str) -> str:
        return string.Template(template).substitute(values).strip("\n")

    blocks = [filled(_HEADER)] + [filled(extra) for extra in extras[:2]]
    factories = []
    for (fixture, letter), extra in zip(pieces, extras[2:]):
        suffix = f"_{n}{letter}"
        title = f"{rng.choice(titles)} ({fixture.name})"
        blocks.append(string.Template(_SECTION_COMMENT).substitute(title=title).strip("\n") + "\n\n"
                      + renamed(fixture.source, fixture.top_level_names, suffix).strip("\n"))
        blocks.append(filled(extra))
        factories.append(renamed(fixture.model_factory, fixture.top_level_names, suffix))
    blocks.append(filled(extras[4]))
    blocks.append(string.Template(_MAIN).substitute(first=factories[0], second=factories[1]).strip("\n"))
    source = "\n\n\n".join(blocks) + "\n"
    ast.parse(source)  # a generated file must be valid Python
    return source, sum(fixture.expected_findings for fixture, _ in pieces)


def candidate_files(count: int) -> Tuple[Callable[[], Iterator[Tuple[str, bytes]]], str]:
    """The generator of the all-candidates corpus, and a digest of what it is made from."""
    dpr001, dpr002 = buggy_fixtures("DPR001"), buggy_fixtures("DPR002")
    digest = hashlib.sha256()
    for fixture in dpr001 + dpr002:
        digest.update(fixture.source.encode())

    def files() -> Iterator[Tuple[str, bytes]]:
        for index in range(count):
            source, _ = generate_candidate(index, dpr001, dpr002)
            yield candidate_path(index), source.encode()
    return files, digest.hexdigest()[:16]


def candidate_path(index: int) -> str:
    return f"models_{index // CANDIDATES_PER_FOLDER:02d}/model_{index:05d}.py"


def expected_candidate_findings(count: int) -> int:
    dpr001, dpr002 = buggy_fixtures("DPR001"), buggy_fixtures("DPR002")
    return sum(generate_candidate(index, dpr001, dpr002)[1] for index in range(count))


# ---------------------------------------------------------------------------------------------------
# The real-models corpus: the real-world repositories' Python files, materialised by realworld.py


def realworld_module():
    """benchmarks/realworld.py, imported (its materialise() and manifest are reused, not copied)."""
    if "realworld" in sys.modules:
        return sys.modules["realworld"]
    spec = importlib.util.spec_from_file_location("realworld", REPO / "benchmarks" / "realworld.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["realworld"] = module
    spec.loader.exec_module(module)
    return module


def real_world_trees(mirrors: Path, work: Path) -> Tuple[List[Tuple[str, Path]], List[Tuple[str, str]], str]:
    """([(owner+name, materialised tree)], [(repo, commit)], '') or ([], [], why not): each repository of
    the real-world manifest at its commit, from the mirrors, by realworld.materialise (reused when done)."""
    realworld = realworld_module()
    try:
        manifest = realworld.load_manifest(realworld.MANIFEST)
    except (OSError, ValueError, SystemExit) as problem:
        return [], [], f"the real-world manifest could not be read ({problem})"
    # The repositories the corpus began with: later first-contact ones would change what "real models" times.
    repositories = [repository for repository in manifest["repositories"] if not repository.get("first_contact")]
    pinned = [(repository["repo"], repository["commit"]) for repository in repositories]
    trees = []
    for repository in repositories:
        try:
            tree = realworld.materialise(mirrors, repository, work)
        except SystemExit as problem:  # realworld.py's way of saying a mirror is missing
            return [], [], str(problem).replace(str(mirrors), "<mirrors>").removeprefix("error: ")
        except (OSError, subprocess.CalledProcessError) as problem:
            return [], [], f"{repository['repo']} could not be materialised from its mirror ({problem.__class__.__name__})"
        trees.append((repository["repo"].replace("/", "+"), tree))
    return trees, pinned, ""


def real_model_sources(trees: List[Tuple[str, Path]]) -> List[Tuple[Path, str]]:
    """(file, owner+name/path) for every .py file of the trees, repository after repository, in a stable
    order; setup.py files are left out, since each would make its folder a project root of its own."""
    files = []
    for name, tree in trees:
        for path in sorted(tree.rglob("*.py")):
            relative = path.relative_to(tree)
            if path.is_file() and path.name not in PROJECT_MARKERS and "__pycache__" not in relative.parts:
                files.append((path, f"{name}/{relative.as_posix()}"))
    return files


def real_model_files(sources: List[Tuple[Path, str]], count: int) -> Callable[[], Iterator[Tuple[str, bytes]]]:
    """The corpus: the sources copied over and over into copy_000/, copy_001/, ... (each copy keeps the
    repositories' layout, so packages and relative imports work inside it) until there are `count`
    files, and one pyproject.toml at the root, so that the whole corpus is one project."""
    def files() -> Iterator[Tuple[str, bytes]]:
        yield "pyproject.toml", CORPUS_PYPROJECT
        yield from copied(sources, count)()
    return files


def _imported_from_project(tree: ast.Module) -> Set[str]:
    """Names a module binds with `from X import name` where X is relative or not torch's."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or not (node.module or "").startswith("torch")):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def pick_one_model_file(root: Path) -> Tuple[Optional[Path], str]:
    """A model file of the corpus for the one-file run, and what it is: best, one that builds an nn.LSTM
    in a class whose base is imported from another file of the project, at a path no other copy holds
    (a copied package's modules have two homes, which the index cannot tell apart); else one that
    builds an nn.LSTM; else any file that mentions nn.Module."""
    files = python_files(root)
    tails: Dict[str, int] = {}
    for path in files:
        tail = path.relative_to(root).as_posix().split("/", 1)[-1]
        tails[tail] = tails.get(tail, 0) + 1
    best: Dict[int, Path] = {}
    for path in files:
        try:
            source = path.read_bytes()
            tree = ast.parse(source) if b"LSTM" in source or b"nn.Module" in source else None
        except (OSError, SyntaxError, ValueError):
            continue
        if tree is None:
            continue
        lstm = b"nn.LSTM(" in source
        imported = _imported_from_project(tree)
        cross_file = any(isinstance(node, ast.ClassDef) and any(
            isinstance(base, ast.Name) and base.id in imported for base in node.bases) for node in ast.walk(tree))
        unique = tails[path.relative_to(root).as_posix().split("/", 1)[-1]] == 1
        rank = 0 if lstm and cross_file and unique else 1 if lstm and cross_file else 2 if lstm else 3
        best.setdefault(rank, path)
        if rank == 0:
            break
    what = {0: "builds an nn.LSTM in a class whose base is imported from another file of the project",
            1: "builds an nn.LSTM in a class whose base is imported from another file (in a copied package)",
            2: "builds an nn.LSTM", 3: "mentions nn.Module"}
    for rank in sorted(best):
        return best[rank], what[rank]
    return None, "no model file in the corpus"


def marker_above(folder: Path) -> Optional[Path]:
    """The first project marker in the folder or above it, if any."""
    for candidate in (folder, *folder.parents):
        for marker in PROJECT_MARKERS:
            if (candidate / marker).exists():
                return candidate / marker
    return None


def folder_outside_any_project() -> Tuple[Optional[Path], str]:
    """A new, empty folder with no project marker in it or above it, or None and why not."""
    candidates = [Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/dev/shm")]
    seen = []
    for base in candidates:
        base = base.resolve()
        if base in seen or not base.is_dir() or not os.access(base, os.W_OK):
            continue
        seen.append(base)
        if marker_above(base) is None:
            return Path(tempfile.mkdtemp(prefix="dp-rnn-lint-one-file-", dir=base)), ""
    return None, ("every temporary folder here lies inside a project (a pyproject.toml, setup.cfg, setup.py "
                  "or .git above it), so there is no place outside any project to run in")


# ---------------------------------------------------------------------------------------------------
# Tools


@dataclass
class Tool:
    key: str
    label: str
    argv: List[str]
    version: str = ""
    problem: str = ""  # why it is not run; empty when it runs


def venv_bin(venv: Path, name: str) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / name


def our_bin(name: str) -> Optional[str]:
    """A command installed beside the running interpreter (the project's virtual environment), or on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    return shutil.which(name)


def version_of(argv: List[str]) -> str:
    """What `argv --version` prints, on one line (argparse wraps it to the terminal's width)."""
    try:
        result = subprocess.run(argv + ["--version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return " ".join((result.stdout or result.stderr).split()) if result.returncode == 0 else "?"


def help_text(argv: List[str]) -> str:
    try:
        return subprocess.run(argv + ["--help"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def make_venv(venv: Path, requirements: List[str]) -> str:
    """Create a virtual environment with the requirements; '' on success, else why not."""
    log(f"creating {venv.name} virtual environment under the benchmark's venv folder: pip install "
        f"{' '.join(requirements)} (once; reused afterwards)")
    if venv.exists():
        shutil.rmtree(venv)
    # The venv module builds on the base interpreter even when run from inside a virtual environment.
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(venv_bin(venv, "python")), "-m", "pip", "install", "--quiet", *requirements]]
    for argv in steps:
        result = subprocess.run(argv, capture_output=True, text=True)
        if result.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            lines = [line for line in (result.stderr + result.stdout).splitlines() if line.strip()]
            return f"its virtual environment could not be made: {lines[-1] if lines else 'no message'}"
    return ""


def flake8_plugin_versions(version_line: str) -> Dict[str, str]:
    """{'flake8': '7.5.0', 'pyflakes': '3.2.0', ...} from `flake8 --version`'s first line."""
    found = {"flake8": version_line.split()[0]}
    inside = version_line[version_line.find("(") + 1: version_line.rfind(")")]
    for name, version in re.findall(r"([\w.-]+): ([\w.+-]+)", inside):
        found[name] = version
    return found


def byte_compile_ours() -> None:
    """Compile the dp_rnn_lint package the timed command imports, as pip does for every package it
    installs (all the other tools here) and Python does on a first import: where PYTHONDONTWRITEBYTECODE
    is set, an editable install would otherwise compile its source again at every start."""
    spec = importlib.util.find_spec("dp_rnn_lint")
    if spec is not None and spec.submodule_search_locations:
        compileall.compile_dir(list(spec.submodule_search_locations)[0], quiet=1)


def find_tools(args: argparse.Namespace, cores: int) -> Tuple[Tool, Dict[str, Tool], Dict[str, bool]]:
    """Ours, the others by key, and which of our options this dp-rnn-lint has (cache, jobs)."""
    ours_bin = our_bin("dp-rnn-lint")
    ours_argv = [ours_bin] if ours_bin else [sys.executable, "-m", "dp_rnn_lint"]
    ours_help = help_text(ours_argv)
    if not ours_help:
        raise SystemExit("error: dp-rnn-lint does not run here; run from the project's virtual environment")
    has = {"cache": "--no-cache" in ours_help, "jobs": "--jobs" in ours_help, "stats": "--stats" in ours_help}
    ours = Tool("dp-rnn-lint", "dp-rnn-lint",
                ours_argv + ["--isolated", "--no-respect-gitignore", "--format", "concise"]
                + (["--jobs", str(cores)] if has["jobs"] else []),
                version_of(ours_argv))
    others: Dict[str, Tool] = {}

    flake8_bin = our_bin("flake8")
    flake8_version = version_of([flake8_bin]) if flake8_bin else ""
    plugin = Tool("flake8-dpr", "flake8 --select=DPR", [flake8_bin or "flake8", "--isolated", "--select=DPR"],
                  "flake8 " + flake8_version)
    if not flake8_bin:
        plugin.problem = "flake8 is not installed beside this Python"
    elif "dp-rnn-lint" not in flake8_version:
        plugin.problem = "this flake8 does not load the dp-rnn-lint plugin"
    others[plugin.key] = plugin

    # flake8 loads every installed plugin, so flake8 without ours needs an environment without ours.
    venv = args.venv_dir / "flake8"
    pins = {name: version for name, version in flake8_plugin_versions(flake8_version).items()
            if name != "dp-rnn-lint"} if flake8_version else {}
    bare = Tool("flake8", "flake8 without dp-rnn-lint", [str(venv_bin(venv, "flake8")), "--isolated", "--select=DPR"])
    if flake8_version:
        bare.problem = ensure_venv(venv, "flake8", [f"{name}=={version}" for name, version in sorted(pins.items())],
                                   lambda: same_flake8(venv, pins), args)
    else:
        bare.problem = "no flake8 beside this Python to match"
    if not bare.problem:
        bare.version = "flake8 " + version_of([str(venv_bin(venv, "flake8"))])
    others[bare.key] = bare

    ruff_bin = our_bin("ruff")
    ruff = Tool("ruff", "ruff check --select ALL",
                [ruff_bin or "ruff", "check", "--select", "ALL", "--no-cache", "--isolated", "--no-respect-gitignore",
                 "--output-format", "concise"])
    ruff.problem = "" if ruff_bin else "not installed (pip install -e '.[bench]')"
    ruff.version = version_of([ruff_bin]) if ruff_bin else ""
    others[ruff.key] = ruff

    venv = args.venv_dir / "torchfix"
    torchfix = Tool("torchfix", "torchfix --select ALL", [str(venv_bin(venv, "torchfix")), "--select", "ALL"])
    torchfix.problem = ensure_venv(venv, "torchfix", ["torchfix"], lambda: venv_bin(venv, "torchfix").exists(), args)
    if not torchfix.problem:
        torchfix.version = "torchfix " + version_of([str(venv_bin(venv, "torchfix"))])
    others[torchfix.key] = torchfix

    for key in args.skip:
        if key in others:
            others[key].problem = "skipped with --skip"
    return ours, others, has


def same_flake8(venv: Path, pins: Dict[str, str]) -> bool:
    line = version_of([str(venv_bin(venv, "flake8"))])
    return line != "?" and flake8_plugin_versions(line) == pins


def ensure_venv(venv: Path, key: str, requirements: List[str], usable: Callable[[], bool],
                args: argparse.Namespace) -> str:
    """'' when the tool's environment is there (made now if allowed), else why it is not run."""
    if key in args.skip:
        return "skipped with --skip"
    if venv.exists() and usable():
        return ""
    if args.quick:
        return "no virtual environment for it yet, and --quick makes none"
    return make_venv(venv, requirements)


# ---------------------------------------------------------------------------------------------------
# The benchmark


@dataclass
class Corpus:
    name: str
    root: Path
    files: int
    megabytes: float
    description: str


def shown(argv: List[str], path: str) -> str:
    """The command as a reader would type it: program name only, the corpus as <path>."""
    return " ".join([Path(argv[0]).name] + argv[1:] + [path])


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="tiny corpora and one run each, making no virtual environment (a smoke test)")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "RESULTS.md",
                        help="where to write the results (default: benchmarks/RESULTS.md)")
    parser.add_argument("--corpus-dir", type=Path, default=REPO / "benchmarks" / ".corpora",
                        help="where corpora are built and kept (default: benchmarks/.corpora)")
    parser.add_argument("--venv-dir", type=Path, default=REPO / "benchmarks" / ".venvs",
                        help="where the other tools' virtual environments are kept (default: benchmarks/.venvs)")
    parser.add_argument("--runs", type=int, default=None,
                        help="runs of each tool on each corpus (default: 5 on the torch subset, 10 for each one-file row, "
                             "3 on the others; 1 with --quick)")
    parser.add_argument("--torchfix-runs", type=int, default=None,
                        help="runs of torchfix, which is slow (default: 2; 1 with --quick)")
    parser.add_argument("--torchfix-slice", type=int, default=None,
                        help="files of the all-candidates corpus that torchfix is timed on (default: 200)")
    parser.add_argument("--mirrors", type=Path, default=os.environ.get(MIRRORS_ENV) or None, metavar="DIR",
                        help="folder of git mirrors of the real-world repositories (owner+name/repo, as "
                             "benchmarks/realworld.py reads them), for the real-models corpus and the one-file "
                             f"run in it (default: ${MIRRORS_ENV}; without them both parts are not run)")
    parser.add_argument("--skip", action="append", default=[], metavar="NAME",
                        help=f"leave out a tool ({', '.join(TOOL_KEYS)}) or a part ({', '.join(SECTION_KEYS)}); "
                             "repeatable, or comma-separated")
    args = parser.parse_args(argv)
    args.skip = {name.strip() for item in args.skip for name in item.split(",") if name.strip()}
    unknown = args.skip - set(TOOL_KEYS) - set(SECTION_KEYS)
    if unknown:
        parser.error(f"unknown --skip name(s): {', '.join(sorted(unknown))}")
    quick = args.quick
    small_runs = args.runs or (1 if quick else 5)
    big_runs = args.runs or (1 if quick else 3)
    torchfix_runs = args.torchfix_runs or (1 if quick else 2)
    candidates_n = CANDIDATE_FILES[quick]
    slice_n = min(args.torchfix_slice or TORCHFIX_SLICE_FILES[quick], candidates_n)
    scale_small, scale_large = SCALE_FILES[quick]
    cores = os.cpu_count() or 1

    corpus_dir = args.corpus_dir.resolve()
    corpus_dir.mkdir(parents=True, exist_ok=True)
    args.venv_dir = args.venv_dir.resolve()
    started = time.time()

    byte_compile_ours()
    ours, others, has = find_tools(args, cores)
    for tool in others.values():
        if tool.problem:
            log(f"{tool.label}: {tool.problem}")

    # Every dp-rnn-lint run gets its own cache folder; timings other than the cache's bypass it.
    cache_root = corpus_dir / ".dp-rnn-lint-cache"
    shutil.rmtree(cache_root, ignore_errors=True)
    env = {key: value for key, value in os.environ.items() if key != "FORCE_COLOR"}
    env.update(NO_COLOR="1", DP_RNN_LINT_CACHE_DIR=str(cache_root / "default"))
    no_cache = ["--no-cache"] if has["cache"] else []
    lint = ours.argv + no_cache

    # Corpora
    torch_version = importlib.metadata.version("torch")
    torch_sources = torch_subset_sources(quick)
    mode = "quick" if quick else "full"
    corpora: Dict[str, Corpus] = {}

    def add_corpus(name: str, recipe: dict, files: Callable[[], Iterable[Tuple[str, bytes]]], description: str) -> None:
        root = corpus_dir / name
        build_corpus(root, dict(recipe, recipe=CORPUS_RECIPE, mode=mode), files)
        found = python_files(root)
        corpora[name] = Corpus(name, root, len(found), megabytes(found), description)

    add_corpus("torch-subset", {"torch": torch_version, "files": len(torch_sources)},
               lambda: [(relative, path.read_bytes()) for path, relative in torch_sources],
               f"the .py files under torch {torch_version}'s {', '.join(d + '/' for d in TORCH_SUBSET_DIRS)}"
               + (" (a few, spread over them: --quick)" if quick else ""))
    if "candidates" not in args.skip:
        generate, fixture_digest = candidate_files(candidates_n)
        add_corpus("candidates", {"fixtures": fixture_digest, "files": candidates_n}, generate,
                   "model files generated from the buggy fixtures: one DPR001 and one DPR002 fixture per file, "
                   "renamed, with comments and unrelated code, and a DataParallel wrap of both models")
        add_corpus("candidates-slice", {"fixtures": fixture_digest, "files": slice_n},
                   lambda: [(candidate_path(i), (corpus_dir / "candidates" / candidate_path(i)).read_bytes())
                            for i in range(slice_n)],
                   f"the first {slice_n} files of the all-candidates corpus, for torchfix")
    if "scale" not in args.skip:
        for count in (scale_small, scale_large):
            add_corpus(f"scale-{count}", {"torch": torch_version, "files": count}, copied(torch_sources, count),
                       f"the torch subset copied over and over: {count:,} files")

    # The real-models corpus, from the mirrors; without them its parts are reported as not run.
    real_n = REAL_MODEL_FILES[quick]
    facts: Dict[str, str] = {}
    real_problem = ""
    if "real-models" in args.skip and "one-file" in args.skip:
        real_problem = "skipped with --skip"
    elif args.mirrors is None:
        real_problem = f"no mirrors of the real-world repositories (--mirrors DIR or ${MIRRORS_ENV})"
    elif not args.mirrors.is_dir():
        real_problem = "the --mirrors folder does not exist"
    else:
        trees, pinned, real_problem = real_world_trees(args.mirrors.resolve(), corpus_dir / "realworld")
        sources = real_model_sources(trees) if trees else []
        if trees and not sources:
            real_problem = "the real-world repositories hold no .py files"
        if not real_problem:
            add_corpus("real-models", {"repositories": pinned, "sources": len(sources), "files": real_n},
                       real_model_files(sources, real_n),
                       f"the {len(sources):,} .py files (setup.py left out) of the {len(trees)} real-world "
                       "repositories at their commits (benchmarks/realworld/manifest.json), copied into numbered "
                       f"copies with their layout until there are {real_n:,}; one project: a pyproject.toml at "
                       "the root")
            facts["real-models-sources"] = f"{len(sources):,} files from {len(trees)} repositories"
    if real_problem:
        log(f"real models: not run: {real_problem}")
        facts["real-models-problem"] = real_problem

    tables: Dict[str, List[Series]] = {}
    stage_tables: Dict[str, StageCounts] = {}  # corpus -> what `--stats` says of it

    def row(tool: Tool, argv: List[str], corpus: str, runs: int, key: str = "", label: str = "", prepare=None) -> Step:
        series = Series(key or tool.key, label or tool.label, shown(argv, f"<{corpus}>"), corpora[corpus].files,
                        problem=f"not run: {tool.problem}" if tool.problem else "")
        return Step(series, argv + [corpus], corpus_dir, env, runs, prepare)

    def warm_up(steps: List[Step]) -> None:
        """One untimed run of each command on one file, so no first run pays for cold caches alone."""
        if quick:
            return
        for step in steps:
            if step.series.problem:
                continue
            one = next(iter(python_files(step.cwd / step.argv[-1])), None)
            if one is not None:
                try:
                    measure(step.argv[:-1] + [str(one.relative_to(step.cwd))], step.cwd, step.env)
                except ToolFailed:
                    pass

    # 1. The torch subset
    if "torch-subset" not in args.skip:
        steps = [row(ours, lint, "torch-subset", small_runs)]
        steps += [row(tool, tool.argv, "torch-subset", torchfix_runs if key == "torchfix" else small_runs)
                  for key, tool in others.items()]
        warm_up(steps)
        run_rounds("torch subset", steps, max(small_runs, torchfix_runs))
        tables["torch-subset"] = [step.series for step in steps]

    # 2. All candidates, with torchfix on a slice, the cache and --fix
    if "candidates" not in args.skip:
        findings = check_candidates(lint, corpus_dir, env, corpora["candidates"])
        facts["candidates-findings"] = findings
        steps = [row(ours, lint, "candidates", big_runs)]
        steps += [row(tool, tool.argv, "candidates", big_runs) for key, tool in others.items() if key != "torchfix"]
        steps.append(row(others["torchfix"], others["torchfix"].argv, "candidates-slice", torchfix_runs,
                         label=f"torchfix --select ALL ({slice_n:,}-file slice)"))
        if "fix" not in args.skip:
            fix_copy = corpus_dir / "candidates-fix"

            def fresh_copy() -> None:
                shutil.rmtree(fix_copy, ignore_errors=True)
                shutil.copytree(corpora["candidates"].root, fix_copy)

            fresh_copy()
            corpora["candidates-fix"] = corpora["candidates"]
            steps.append(row(ours, lint + ["--fix"], "candidates-fix", big_runs, "fix", "dp-rnn-lint --fix", fresh_copy))
        if "cache" not in args.skip:
            cache_counter = iter(range(1_000_000))
            cold_env = dict(env)

            def fresh_cache() -> None:
                cold_env["DP_RNN_LINT_CACHE_DIR"] = str(cache_root / f"round-{next(cache_counter)}")

            cold = row(ours, ours.argv, "candidates", big_runs, "cache-cold", "dp-rnn-lint, first run (empty cache)",
                       fresh_cache)
            warm = row(ours, ours.argv, "candidates", big_runs, "cache-warm", "dp-rnn-lint, second run (unchanged tree)")
            cold.env = warm.env = cold_env
            cold.then = warm
            steps.append(cold)
        warm_up(steps)
        run_rounds("all candidates", steps, max(big_runs, torchfix_runs))
        tables["candidates"] = [step.series for step in steps if step.then is None] + \
            [s for step in steps if step.then for s in (step.series, step.then.series)]
        if "fix" not in args.skip:
            facts["fix-rewritten"] = fix_rewritten(corpora["candidates"].root, corpus_dir / "candidates-fix")
            shutil.rmtree(corpus_dir / "candidates-fix", ignore_errors=True)

    # 3. Scale
    if "scale" not in args.skip:
        steps = []
        for tool, argv in ((ours, lint), (others["ruff"], others["ruff"].argv)):
            for count in (scale_small, scale_large):
                steps.append(row(tool, argv, f"scale-{count}", big_runs, f"{tool.key}-{count}",
                                 f"{tool.label}, {count:,} files"))
        warm_up(steps)
        run_rounds("scale", steps, big_runs)
        tables["scale"] = [step.series for step in steps]

    # 4. Real models: ours and ruff side by side on 2,500 files of real model code, one project
    if "real-models" not in args.skip:
        if "real-models" in corpora:
            steps = [row(ours, lint, "real-models", big_runs),
                     row(others["ruff"], others["ruff"].argv, "real-models", big_runs)]
            if "cache" not in args.skip:
                real_cache_counter = iter(range(1_000_000))
                real_cold_env = dict(env)

                def fresh_real_cache() -> None:
                    real_cold_env["DP_RNN_LINT_CACHE_DIR"] = str(cache_root / f"real-round-{next(real_cache_counter)}")

                real_cold = row(ours, ours.argv, "real-models", big_runs, "real-cache-cold",
                                "dp-rnn-lint, first run (empty cache)", fresh_real_cache)
                real_warm = row(ours, ours.argv, "real-models", big_runs, "real-cache-warm",
                                "dp-rnn-lint, second run (unchanged tree)")
                real_cold.env = real_warm.env = real_cold_env
                real_cold.then = real_warm
                steps.append(real_cold)
            warm_up(steps)
            run_rounds("real models", steps, big_runs)
            tables["real-models"] = [step.series for step in steps if step.then is None] + \
                [s for step in steps if step.then for s in (step.series, step.then.series)]
        else:
            tables["real-models"] = [Series(key, label, "", 0, problem=f"not run: {real_problem}")
                                     for key, label in (("dp-rnn-lint", ours.label), ("ruff", others["ruff"].label),
                                                        ("real-cache-cold", "dp-rnn-lint, first run (empty cache)"),
                                                        ("real-cache-warm", "dp-rnn-lint, second run (unchanged tree)"))]

    # Where the time goes: one table per corpus from the tool's own `--stats`, in separate runs (its
    # counting costs a little), so the timings above stay those of plain runs.
    if has["stats"]:
        stage_runs = 1 if quick else 3
        for name in ("torch-subset", "real-models"):
            if name in corpora and name not in args.skip:
                log(f"stages: {name}")
                stage_tables[name] = stage_counts(lint + ["."], corpora[name].root, env, stage_runs)

    # 5. One file in that project with a warm cache, against the same file outside any project
    if "one-file" not in args.skip:
        tables["one-file"] = one_file_runs(ours, corpora.get("real-models"), cache_root, env,
                                           args.runs or ONE_FILE_RUNS[quick], real_problem, facts)

    shutil.rmtree(cache_root, ignore_errors=True)
    facts["duration"] = f"{(time.time() - started) / 60:.1f} min"
    report = render(args, ours, others, has, corpora, tables, facts, cores,
                    dict(small=small_runs, big=big_runs, torchfix=torchfix_runs,
                         one=args.runs or ONE_FILE_RUNS[quick]), stage_tables)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    log(f"wrote {args.output}")
    targets = report[report.index("## Targets"):].split("\n\n## ")[0]
    print(targets)
    return 0


ONE_FILE_ROWS = (("one-file-inside", "inside the project, file unchanged"),
                 ("one-file-outside", "outside any project, file unchanged"),
                 ("one-file-inside-edited", "inside the project, file edited before each run"),
                 ("one-file-outside-edited", "outside any project, file edited before each run"))


def one_file_runs(ours: Tool, corpus: Optional[Corpus], cache_root: Path, env: Dict[str, str], runs: int,
                  problem: str, facts: Dict[str, str]) -> List[Series]:
    """`dp-rnn-lint FILE` as pre-commit runs it after a first run (result cache and index cache warm):
    FILE in the real-models project (whose every file the index reads) and a copy of FILE in a folder
    outside any project, in turn; then the same with FILE edited before each run, as pre-commit passes
    changed files (no result-cache hit; the index re-reads that one file)."""
    rows = [Series(key, label, "", 1) for key, label in ONE_FILE_ROWS]
    if corpus is None:
        for series in rows:
            series.problem = f"not run: {problem or 'no real-models corpus'}"
        return rows
    chosen, what = pick_one_model_file(corpus.root)
    outside, why = folder_outside_any_project()
    if chosen is None or outside is None:
        if outside is not None:
            shutil.rmtree(outside, ignore_errors=True)
        for series in rows:
            series.problem = f"not run: {why if chosen is not None else what}"
        return rows
    original = chosen.read_bytes()
    copy = outside / chosen.name
    copy.write_bytes(original)
    relative = chosen.relative_to(corpus.root).as_posix()
    facts["one-file"] = f"`{relative}` ({len(original) / 1000:.1f} kB): it {what}"
    # As the pre-commit hook runs it (entry: dp-rnn-lint --force-exclude), from the project's root.
    base = ours.argv + ["--force-exclude"]
    places = {"inside": (corpus.root, relative, cache_root / "one-file-inside", chosen),
              "outside": (outside, copy.name, cache_root / "one-file-outside", copy)}
    edits = iter(range(1_000_000))
    steps = []
    for series in rows:
        place = "inside" if "inside" in series.key else "outside"
        cwd, name, cache, path = places[place]
        argv = base + ["--cache-dir", str(cache), name]
        series.command = shown(base + ["--cache-dir", "<cache>"], "<file>")

        def edit(path: Path = path) -> None:
            path.write_bytes(original + f"# edited before run {next(edits)}\n".encode())
        steps.append(Step(series, argv, cwd, env, runs, edit if series.key.endswith("-edited") else None))
    try:
        for place, (cwd, name, cache, path) in places.items():
            shutil.rmtree(cache, ignore_errors=True)
            try:  # the first run, untimed: fills the result cache and the project index's cache
                measure(base + ["--cache-dir", str(cache), name], cwd, env)
            except ToolFailed as failure:
                for series in rows:
                    if place in series.key:
                        series.problem = f"failed ({failure})"
        run_rounds("one file", steps[:2], runs)
        run_rounds("one file, edited", steps[2:], runs)
    finally:
        chosen.write_bytes(original)
        shutil.rmtree(outside, ignore_errors=True)
    return rows


def check_candidates(ours_argv: List[str], corpus_dir: Path, env: Dict[str, str], corpus: Corpus) -> str:
    """One untimed JSON run: every generated file must have a finding, as many as its fixtures predict."""
    result = subprocess.run(ours_argv + ["--format", "json", corpus.name], cwd=corpus_dir, env=env,
                            capture_output=True, text=True)
    try:
        findings = json.loads(result.stdout)
    except ValueError:
        return f"could not be checked: dp-rnn-lint --format json printed no JSON (exit status {result.returncode})"
    with_finding = {Path(item["path"]).as_posix() for item in findings}
    files = {p.relative_to(corpus_dir).as_posix() for p in python_files(corpus.root)}
    missing = len(files - with_finding)
    expected = expected_candidate_findings(corpus.files)
    text = (f"{len(files) - missing:,} of {len(files):,} files have at least one finding; "
            f"{len(findings):,} findings in all, where the fixtures' markers predict {expected:,}")
    if missing:
        log(f"warning: {missing} generated files have no finding")
    if len(findings) != expected:
        log(f"warning: {len(findings)} findings on the generated files, {expected} expected")
    return text


def fix_rewritten(original: Path, fixed: Path) -> str:
    if not fixed.exists():
        return "not known"
    changed = sum(1 for path in python_files(original)
                  if (fixed / path.relative_to(original)).read_bytes() != path.read_bytes())
    return f"{changed:,} of {len(python_files(original)):,} files"


# ---------------------------------------------------------------------------------------------------
# RESULTS.md


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def memory_total() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return "unknown"


def seconds(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def series_table(rows: List[Series], reference: Optional[Series], rates: bool = False,
                 ratio_to: str = "dp-rnn-lint") -> List[str]:
    head = f"| tool | runs | median s | min–max s | ratio to {ratio_to} | peak RSS MB |"
    rule = "| --- | ---: | ---: | ---: | ---: | ---: |"
    if rates:
        head = "| tool | files | runs | median s | min–max s | files/s | peak RSS MB |"
        rule = "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    lines = [head, rule]
    for series in rows:
        if not series.ran:
            problem = series.problem or "no run"
            cells = 5 if rates else 4
            lines.append(f"| {series.label} | " + ("| " * cells) + f"{problem} |")
            continue
        spread = f"{seconds(series.low)}–{seconds(series.high)}"
        if rates:
            lines.append(f"| {series.label} | {series.files:,} | {len(series.samples)} | {seconds(series.median)} | "
                         f"{spread} | {series.files_per_second:,.0f} | {series.peak_mb:.0f} |")
        else:
            ratio = f"{series.median / reference.median:.2f}×" if reference is not None and reference.ran else "–"
            lines.append(f"| {series.label} | {len(series.samples)} | {seconds(series.median)} | {spread} | {ratio} | "
                         f"{series.peak_mb:.0f} |")
    return lines


def find(rows: List[Series], key: str) -> Optional[Series]:
    return next((s for s in rows if s.key == key), None)


def target_row(name: str, needed: List[Optional[Series]], figure: Callable[[], Tuple[float, str]],
               met: Callable[[float], bool]) -> str:
    """One row of the targets table: the figure and its details, or why it was not measured."""
    for series in needed:
        if series is None or not series.ran:
            why = series.problem if series is not None and series.problem else "not run"
            return f"| {name} | not measured ({why}) | not measured |"
    value, details = figure()
    return f"| {name} | {details} | {'met' if met(value) else '**missed**'} |"


def targets(tables: Dict[str, List[Series]], has: Dict[str, bool], scale_sizes: Tuple[int, int],
            real_files: int = REAL_MODEL_FILES[0]) -> List[str]:
    lines = ["| target | measured | result |", "| --- | --- | --- |"]

    def ratio(a: Series, b: Series, digits: int = 2) -> Tuple[float, str]:
        value = a.median / b.median
        return value, f"{value:.{digits}f}× ({seconds(a.median)} s vs {seconds(b.median)} s)"

    subset = tables.get("torch-subset", [])
    ours, ruff, torchfix = find(subset, "dp-rnn-lint"), find(subset, "ruff"), find(subset, "torchfix")
    plugin, bare = find(subset, "flake8-dpr"), find(subset, "flake8")
    lines.append(target_row(f"torch subset: dp-rnn-lint wall time ≤ {TARGET_RUFF_RATIO:.1f}× ruff's", [ours, ruff],
                            lambda: ratio(ours, ruff), lambda f: f <= TARGET_RUFF_RATIO))
    lines.append(target_row(f"torch subset: dp-rnn-lint ≥ {TARGET_TORCHFIX_SPEEDUP:.0f}× faster than torchfix",
                            [ours, torchfix], lambda: ratio(torchfix, ours, 1), lambda f: f >= TARGET_TORCHFIX_SPEEDUP))
    lines.append(target_row(f"torch subset: flake8 with our plugin ≤ {TARGET_PLUGIN_OVERHEAD:.2f}× flake8 without it",
                            [plugin, bare], lambda: ratio(plugin, bare), lambda f: f <= TARGET_PLUGIN_OVERHEAD))

    candidates = tables.get("candidates", [])
    ours, torchfix = find(candidates, "dp-rnn-lint"), find(candidates, "torchfix")

    def per_file() -> Tuple[float, str]:
        ours_ms, torchfix_ms = 1000 * ours.median / ours.files, 1000 * torchfix.median / torchfix.files
        return (torchfix_ms / ours_ms, f"{torchfix_ms / ours_ms:.1f}× ({ours_ms:.2f} ms/file on {ours.files:,} files "
                f"vs {torchfix_ms:.2f} ms/file on {torchfix.files:,})")
    lines.append(target_row(f"all candidates: dp-rnn-lint ≥ {TARGET_TORCHFIX_PER_FILE_SPEEDUP:.0f}× faster per file "
                            "than torchfix (torchfix timed on a slice)", [ours, torchfix], per_file,
                            lambda f: f >= TARGET_TORCHFIX_PER_FILE_SPEEDUP))

    scale = tables.get("scale", [])
    small, large = (find(scale, f"dp-rnn-lint-{n}") for n in scale_sizes)

    def rates() -> Tuple[float, str]:
        value = large.files_per_second / small.files_per_second
        return value, f"{value:.2f}× ({large.files_per_second:,.0f} vs {small.files_per_second:,.0f} files/s)"
    lines.append(target_row(f"scale: files/s at {scale_sizes[1]:,} files within 20% of files/s at {scale_sizes[0]:,} "
                            f"(≥ {TARGET_SCALE_RATE_RATIO:.1f}×: cost no worse than linear)", [small, large], rates,
                            lambda f: f >= TARGET_SCALE_RATE_RATIO))
    lines.append(target_row(f"scale: peak memory < {TARGET_SCALE_PEAK_MB:.0f} MB at {scale_sizes[1]:,} files",
                            [small, large], lambda: (large.peak_mb, f"{large.peak_mb:.0f} MB ({small.peak_mb:.0f} MB "
                                                     f"at {scale_sizes[0]:,} files)"),
                            lambda f: f < TARGET_SCALE_PEAK_MB))

    cold, warm, fix = find(candidates, "cache-cold"), find(candidates, "cache-warm"), find(candidates, "fix")

    def cache() -> Tuple[float, str]:
        value, details = ratio(warm, cold)
        return value, details + ("" if has["cache"] else "; this dp-rnn-lint has no --no-cache: no cache")
    lines.append(target_row(f"all candidates: a second run over an unchanged tree ≤ {TARGET_CACHE_RATIO:.1f}× the first",
                            [cold, warm], cache, lambda f: f <= TARGET_CACHE_RATIO))
    lines.append(target_row(f"all candidates: --fix ≤ {TARGET_FIX_RATIO:.0f}× the time of linting", [fix, ours],
                            lambda: ratio(fix, ours), lambda f: f <= TARGET_FIX_RATIO))

    # Issue #16: measured side by side in the same run.
    ours, ruff = find(subset, "dp-rnn-lint"), find(subset, "ruff")
    lines.append(target_row(f"#16 torch subset: dp-rnn-lint wall time ≤ {TARGET_RUFF_RATIO_16:.1f}× ruff's",
                            [ours, ruff], lambda: ratio(ours, ruff), lambda f: f <= TARGET_RUFF_RATIO_16))
    real = tables.get("real-models", [])
    ours, ruff = find(real, "dp-rnn-lint"), find(real, "ruff")
    lines.append(target_row(f"#16 real models ({real_files:,} files of real model code, one project): dp-rnn-lint "
                            f"wall time ≤ {TARGET_REAL_RUFF_RATIO:.1f}× ruff's", [ours, ruff],
                            lambda: ratio(ours, ruff), lambda f: f <= TARGET_REAL_RUFF_RATIO))

    # Issue #36: the same corpus, a tighter ratio, and a second run over the unchanged tree.
    lines.append(target_row(f"#36 real models: dp-rnn-lint wall time ≤ {TARGET_REAL_RUFF_RATIO_36:.1f}× ruff's",
                            [ours, ruff], lambda: ratio(ours, ruff), lambda f: f <= TARGET_REAL_RUFF_RATIO_36))
    real_warm = find(real, "real-cache-warm")
    lines.append(target_row(f"#36 real models: a second run over the unchanged tree ≤ {TARGET_REAL_WARM_OF_RUFF:.1f}× "
                            "ruff's cold run", [real_warm, ruff], lambda: ratio(real_warm, ruff),
                            lambda f: f <= TARGET_REAL_WARM_OF_RUFF))
    one = tables.get("one-file", [])
    inside, outside = find(one, "one-file-inside"), find(one, "one-file-outside")

    def extra() -> Tuple[float, str]:
        value = inside.median - outside.median
        return value, (f"{value:+.3f} s ({inside.median:.3f} s inside vs {outside.median:.3f} s outside, "
                       f"medians of {len(inside.samples)})")
    lines.append(target_row(f"#16 one file inside a {real_files:,}-file project, warm cache: ≤ "
                            f"{TARGET_ONE_FILE_EXTRA_S:.1f} s more wall time than the same file outside any project",
                            [inside, outside], extra, lambda f: f <= TARGET_ONE_FILE_EXTRA_S))
    return lines


def stages_section(stage_tables: Dict[str, StageCounts], corpora: Dict[str, Corpus]) -> List[str]:
    """Where dp-rnn-lint's time goes on each corpus, stage by stage, from its `--stats`."""
    out = ["## 6. where dp-rnn-lint's time goes", "",
           "From `dp-rnn-lint --stats` (its own count, in separate cold runs with the options above; median "
           "per stage). Seconds are CPU seconds summed over every process, so they add up to the work done, "
           "not to the wall time; files are those that reached the stage, where it knows them (- where it "
           "does not).", ""]
    names = [name for name in stage_tables]
    order: List[str] = []
    for name in names:
        order += [stage for stage in stage_tables[name].stages if stage not in order]
    header = "| stage | " + " | ".join(f"{corpora[name].name}: files | seconds" for name in names) + " |"
    out += [header, "| --- |" + " ---: | ---: |" * len(names)]
    for stage in order:
        cells = []
        for name in names:
            counts = stage_tables[name]
            seconds = counts.seconds.get(stage)
            cells.append(f"{counts.files.get(stage, '')} | "
                         + (f"{statistics.median(seconds):.2f}" if seconds else ""))
        out.append(f"| {stage} | " + " | ".join(cells) + " |")
    totals = []
    for name in names:
        counts = stage_tables[name]
        work = sum(statistics.median(values) for values in counts.seconds.values())
        wall = f", wall {statistics.median(counts.wall):.2f} s" if counts.wall else ""
        totals.append(f"{corpora[name].name}: {work:.2f} CPU s in all{wall}"
                      + (f" ({counts.problem})" if counts.problem else ""))
    out += ["", "; ".join(totals) + ".", ""]
    return out


def render(args: argparse.Namespace, ours: Tool, others: Dict[str, Tool], has: Dict[str, bool],
           corpora: Dict[str, Corpus], tables: Dict[str, List[Series]], facts: Dict[str, str], cores: int,
           runs: Dict[str, int], stage_tables: Optional[Dict[str, "StageCounts"]] = None) -> str:
    scale_sizes = SCALE_FILES[args.quick]
    out = ["# Benchmark results", ""]
    out.append("Written by `python benchmarks/bench.py" + (" --quick" if args.quick else "")
               + (" --mirrors DIR" if args.mirrors else "") + (f" --skip {','.join(sorted(args.skip))}" if args.skip else "") +
               "`; run it again to regenerate this file (see benchmarks/README.md). Do not edit it by hand.")
    if args.quick:
        out += ["", "**--quick: tiny corpora and one run each, to check the script works; the figures mean nothing.**"]
    out += ["", "| | |", "| --- | --- |",
            f"| date | {datetime.date.today().isoformat()} |",
            f"| cores (nproc) | {cores} |",
            f"| CPU | {cpu_model()} |",
            f"| memory | {memory_total()} |",
            f"| system | {platform.system()} {platform.release()} |",
            f"| Python | {platform.python_version()} |",
            f"| runs | {runs['small']} per tool on the torch subset, {runs['big']} on the other corpora, "
            f"{runs['torchfix']} for torchfix, {runs['one']} for each one-file row |",
            f"| time taken | {facts.get('duration', '?')} |", ""]

    out += ["## Targets", ""] + targets(tables, has, scale_sizes, REAL_MODEL_FILES[args.quick]) + [""]
    if "real-models-problem" in facts:
        out += [f"The real-models corpus was not built: {facts['real-models-problem']}; its two parts were not run.",
                ""]

    out += ["## Tools", "", "| tool | version | command |", "| --- | --- | --- |"]
    out.append(f"| dp-rnn-lint | {ours.version} | `{shown(ours.argv + (['--no-cache'] if has['cache'] else []), '<corpus>')}` |")
    for tool in others.values():
        state = f"not run: {tool.problem}" if tool.problem else tool.version
        out.append(f"| {tool.label} | {state.replace('|', '/')} | `{shown(tool.argv, '<corpus>')}` |")
    out += ["", "Every command runs with the corpora folder as its working directory, its output thrown away, "
            "no configuration file read (`--isolated`), and the tool's own parallelism (all cores by default). "
            "Both flake8 runs select only `DPR`, so they do the same work except for our plugin; flake8 without "
            "our plugin comes from a separate virtual environment with the same flake8, pycodestyle, pyflakes and "
            "mccabe versions. dp-rnn-lint bypasses its result cache"
            + (" (`--no-cache`)" if has["cache"] else "") + " except in the cache rows.", ""]

    out += ["## Corpora", "", "| corpus | files | MB | what |", "| --- | ---: | ---: | --- |"]
    for name, corpus in corpora.items():
        if name == "candidates-fix":  # the same files as candidates
            continue
        out.append(f"| {corpus.name} | {corpus.files:,} | {corpus.megabytes:.1f} | {corpus.description} |")
    out.append("")

    if "torch-subset" in tables:
        rows = tables["torch-subset"]
        out += [f"## 1. torch subset ({corpora['torch-subset'].files:,} files)", ""]
        out += series_table(rows, find(rows, "dp-rnn-lint")) + [""]

    if "candidates" in tables:
        rows = tables["candidates"]
        ours_row = find(rows, "dp-rnn-lint")
        out += [f"## 2. all candidates ({corpora['candidates'].files:,} files)", ""]
        out += series_table(rows, ours_row) + [""]
        per_file = [f"{others[series.key].label if series.key in others else series.key} "
                    f"{1000 * series.median / series.files:.2f} ms"
                    for series in rows if series.ran and series.key in ("dp-rnn-lint", *TOOL_KEYS)]
        out.append("The torchfix row is its run on the slice, so its ratio compares different numbers of files; "
                   "per file (median time / files, start-up included): " + ("; ".join(per_file) or "none") + ".")
        out += ["", f"Findings on this corpus: {facts.get('candidates-findings', 'not checked')}."]
        if "fix-rewritten" in facts:
            out.append(f"Files rewritten by `--fix` (each run on a fresh copy of the corpus): {facts['fix-rewritten']}.")
        out.append("")

    if "scale" in tables:
        out += ["## 3. scale", ""]
        out += series_table(tables["scale"], None, rates=True) + [""]

    if "real-models" in tables:
        rows = tables["real-models"]
        files = corpora["real-models"].files if "real-models" in corpora else REAL_MODEL_FILES[args.quick]
        out += [f"## 4. real models ({files:,} files)", ""]
        out += series_table(rows, find(rows, "dp-rnn-lint")) + [""]
        if "real-models-sources" in facts:
            out += [f"Made from {facts['real-models-sources']}; the corpus is one project (a pyproject.toml at its "
                    "root), so dp-rnn-lint indexes all of it once a file needs the analysis.", ""]

    if "one-file" in tables:
        rows = tables["one-file"]
        out += ["## 5. one file in a project, warm cache", ""]
        out += series_table(rows, find(rows, "one-file-outside"), ratio_to="outside, unchanged") + [""]
        out.append("Every row is dp-rnn-lint on one file. "
                   + (f"The file: {facts['one-file']}. " if "one-file" in facts else "")
                   + "Each place has its own cache folder, filled by one untimed run first; the rows then run in "
                   "turn, from the project's root (inside) or the file's folder (outside), with the pre-commit "
                   "hook's `--force-exclude`: `" + (rows[0].command or "dp-rnn-lint --cache-dir <cache> <file>")
                   + "`. Inside, dp-rnn-lint finds the project root (pyproject.toml) and indexes the whole project "
                   "(its cache holds the index: every file is checked by size and modification time); outside, "
                   "the index holds the one file. The rows with the file edited before each run are what "
                   "pre-commit does after a change: the result cache misses and the index reads that one file "
                   "again; they are shown for information, the target is the unchanged pair.")
        out.append("")

    if stage_tables:
        out += stages_section(stage_tables, corpora)

    out += ["## How it is measured", "",
            "- Wall time: `time.perf_counter()` around each tool's process, from start to exit.",
            "- Rounds: in each round every tool runs once, one after another, each round starting one tool later; "
            "medians and min–max are over the rounds. The first round follows an untimed run of each command on "
            "one file (not with `--quick`). The `--fix` runs each get a fresh copy of the corpus (the copying is not "
            "timed); the cache rows use a new, empty cache folder each round, the second run right after the first.",
            "- Peak RSS: `ru_maxrss` from `wait4()` on the tool's process: the resident size of the largest single "
            "process in its tree that was waited for, not the sum over worker processes.",
            "- Bytecode: the script byte-compiles the dp_rnn_lint package before any run, as pip does for the "
            "packages it installs (every other tool here) and Python does on a first import; PYTHONDONTWRITEBYTECODE "
            f"is {'set' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'not set'} in this environment, which "
            "would otherwise make an editable install compile its source again at every start.",
            "- Ratio to dp-rnn-lint: the row's median over dp-rnn-lint's median on the same corpus.",
            "- Projects: every corpus has a pyproject.toml at its root, so that it is a project of its own: "
            "dp-rnn-lint indexes the project root of the files it lints (the nearest folder upward with "
            "pyproject.toml, setup.cfg, setup.py or .git), which would otherwise be the checkout holding every corpus.",
            "- Real models: the repositories' Python files are materialised from local git mirrors by "
            "benchmarks/realworld.py (`--mirrors DIR`); without mirrors those parts are reported as not run.", ""]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
