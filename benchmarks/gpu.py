#!/usr/bin/env python3
"""The harness's one-GPU mode on a real GPU, and what DPR001 costs there; writes benchmarks/GPU.md.

    python benchmarks/gpu.py                  # needs a CUDA GPU: a few minutes on an H100
    python benchmarks/gpu.py --runs 5         # fewer timed runs
    python benchmarks/gpu.py --dry-run --only 'DPR002/faq*' --hidden 16 --input-size 8 --length 6 --batch 4 --runs 1
                                              # on the CPU: checks that the script works, measures nothing

Three parts, each written to the output file with the GPU's name and the torch, CUDA and cuDNN versions:

1. Facts the one-GPU mode builds on, checked on this machine: whether torch's RNN forward compacts a
   replica's weights itself (torch 2.0 and later), whether cuDNN warns about a replica's weights kept as
   separate copies (and about torch's own replicas, views into a broadcast buffer), that
   pack_padded_sequence refuses lengths on the GPU, and that torch's gather checks sizes on one device.
2. Every runnable fixture (those with make_model() and make_inputs(), as tests/test_harness_fixtures.py
   runs them), before and after `--fix`, under the one-GPU mode (`check_data_parallel(device="cuda")`)
   and under the CPU emulation: both verdicts, whether they agree, and whether cuDNN's "not part of
   single contiguous chunk of memory" warning appeared. `--fix` is the linter's own (every rule, unsafe
   fixes too, as the fixture tests apply it); where the linter's dependencies are missing, the fixtures'
   golden `.fixed.py` files, which tests/test_fixtures.py holds equal to that output.
3. DPR001's cost on a realistic model (a 2-layer bidirectional LSTM, hidden 1024, batch 64, sequences
   of 200, cuDNN): step time (median and quartiles of repeated runs, after warm-up runs, with the GPU
   synchronised around each) and peak GPU memory (torch.cuda.max_memory_allocated above what was held
   before the step), forward alone and forward with backward, for the module itself and for a replica
   built as DataParallel builds one on a second GPU (rebuilt every step, as DataParallel does): left to
   torch, with flatten_parameters() called first (DPR001's fix), and kept uncompacted (the trap as
   DPR001 describes it, which is how torch before 2.0 ran a replica).
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

FIXTURES = REPO / "fixtures"
NON_CONTIGUOUS = "RNN module weights are not part of single contiguous chunk of memory"

# A problem's shape, by the start of the harness's sentence: what the verdict tables compare.
SHAPES: Tuple[Tuple[str, str], ...] = (
    ("RNN submodule `", "RNN ran before flatten_parameters()"),
    ("PyTorch warned", "stray cuDNN warning"),
    ("gathering ", "gather fails"),
    ("scattering ", "scatter fails"),
    ("the module fails even on one device", "fails on one device"),
    ("the module raised", "module raised"),
)


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "GPU.md",
                        help="where to write the results (default: benchmarks/GPU.md)")
    parser.add_argument("--runs", type=int, default=30, help="timed runs of each DPR001 variant (default: 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs before them (default: 3)")
    parser.add_argument("--hidden", type=int, default=1024, help="LSTM hidden size (default: 1024)")
    parser.add_argument("--input-size", type=int, default=1024, help="LSTM input size (default: 1024)")
    parser.add_argument("--layers", type=int, default=2, help="LSTM layers, each bidirectional (default: 2)")
    parser.add_argument("--batch", type=int, default=64, help="batch size (default: 64)")
    parser.add_argument("--length", type=int, default=200, help="sequence length (default: 200)")
    parser.add_argument("--only", metavar="PATTERN", action="append",
                        help="only the fixtures whose DPRnnn/name.py matches this glob (repeatable)")
    parser.add_argument("--dry-run", action="store_true",
                        help="run every part with the CPU as the device, to check the script: nothing about cuDNN "
                        "shows and the numbers mean nothing (the file says so)")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError as error:
        sys.stderr.write(f"benchmarks/gpu.py: needs torch ({error}); nothing written\n")
        return 2
    if not args.dry_run and not torch.cuda.is_available():
        sys.stderr.write(f"benchmarks/gpu.py: needs a CUDA device, and torch {torch.__version__} sees none "
                         "(torch.cuda.is_available() is False); nothing written (--dry-run checks the script "
                         "on the CPU)\n")
        return 2
    device = torch.device("cpu") if args.dry_run else torch.device("cuda", torch.cuda.current_device())
    started = time.perf_counter()
    machine = describe_machine(torch, device)
    print("machine:", ", ".join(f"{key} {value}" for key, value in machine), flush=True)
    facts = check_facts(torch, device)
    for fact in facts:
        print(f"fact: {fact.question}: {fact.answer}", flush=True)
    fixtures, fix_source = compare_fixtures(torch, device, args.only)
    agree = sum(row.agree_before and row.agree_after for row in fixtures)
    print(f"fixtures: {len(fixtures)} run, verdicts agree before and after --fix on {agree}", flush=True)
    costs = measure_cost(torch, device, args)
    for cost in costs:
        figure = f"failed: {cost.failure}" if cost.failure else f"median {cost.median_ms:.2f} ms"
        print(f"cost: {cost.variant}, {cost.mode}: {figure}", flush=True)
    report = render(args, machine, facts, fixtures, fix_source, costs, time.perf_counter() - started)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report, encoding="utf-8")
    print(f"wrote {args.output} in {time.perf_counter() - started:.0f} s")
    return 0


# -- the machine -----------------------------------------------------------------------------------
def describe_machine(torch, device) -> List[Tuple[str, str]]:
    rows = []
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        rows.append(("GPU", f"{properties.name} ({properties.total_memory / 2**30:.0f} GiB, "
                            f"compute capability {properties.major}.{properties.minor})"))
        rows.append(("driver", _driver_version()))
    else:
        rows.append(("GPU", "none: a dry run on the CPU"))
    rows.append(("torch", torch.__version__))
    rows.append(("CUDA (torch built with)", str(torch.version.cuda)))
    rows.append(("cuDNN", _read(lambda: torch.backends.cudnn.version() if torch.backends.cudnn.is_available()
                                else "not available")))
    rows.append(("cuDNN enabled", _read(lambda: torch.backends.cudnn.enabled)))
    rows.append(("TF32 in cuDNN (allow_tf32)", _read(lambda: torch.backends.cudnn.allow_tf32)))
    rows.append(("Python", platform.python_version()))
    rows.append(("platform", platform.platform()))
    return rows


def _read(value: Callable[[], Any]) -> str:
    try:
        return str(value())
    except Exception as error:  # a setting this torch words otherwise is reported, not fatal
        return f"unknown ({type(error).__name__}: {_first_line(error)})"


def _driver_version() -> str:
    if not shutil.which("nvidia-smi"):
        return "unknown (no nvidia-smi)"
    try:
        found = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return f"unknown ({error})"
    return found.stdout.strip().splitlines()[0] if found.stdout.strip() else "unknown"


# -- part 1: the facts the one-device mode builds on ------------------------------------------------
@dataclass
class Fact:
    question: str
    answer: str
    detail: str = ""


def check_facts(torch, device) -> List[Fact]:
    from torch import nn

    facts = []

    def fact(question: str, check: Callable[[], Tuple[str, str]]) -> None:
        try:
            answer, detail = check()
        except Exception as error:  # a fact that cannot be checked here is reported, not fatal
            answer, detail = "could not check", f"{type(error).__name__}: {_first_line(error)}"
        facts.append(Fact(question, answer, detail))

    def run_lstm(lstm, uncompacted: bool, flatten_first: bool) -> Tuple[bool, int]:
        """(cuDNN warned, flatten_parameters() calls inside torch's forward) for one call of `lstm`."""
        from dp_rnn_lint.harness.one_device import without_self_compaction

        if uncompacted:
            without_self_compaction(lstm)
        if flatten_first:
            lstm.flatten_parameters()
        calls = []
        original = lstm.flatten_parameters
        lstm.flatten_parameters = lambda: (calls.append(1), original())[-1]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lstm(torch.randn(4, 7, 16, device=device))
        return any(NON_CONTIGUOUS in str(w.message) for w in caught), len(calls)

    def fresh_replica_lstm():
        from dp_rnn_lint.harness.one_device import fresh_replicas

        torch.manual_seed(0)
        return fresh_replicas(nn.LSTM(16, 32, batch_first=True).to(device), 1, device)[0]

    def left_to_torch():
        warned, calls = run_lstm(fresh_replica_lstm(), uncompacted=False, flatten_first=False)
        detail = f"flatten_parameters() calls inside forward: {calls}; cuDNN warned: {_yes(warned)}"
        return ("yes" if calls and not warned else "no"), detail

    def uncompacted():
        warned, calls = run_lstm(fresh_replica_lstm(), uncompacted=True, flatten_first=False)
        return _yes(warned), f"flatten_parameters() calls inside forward: {calls}"

    def flattened_first():
        warned, _ = run_lstm(fresh_replica_lstm(), uncompacted=True, flatten_first=True)
        return _yes(warned), "flatten_parameters() called on the replica before its forward"

    def torch_replicas():
        from torch.nn.parallel import replicate

        found = []
        for embedding_first in (True, False):
            torch.manual_seed(0)
            model = nn.Sequential(*([nn.Embedding(50, 16)] if embedding_first else []),
                                  nn.LSTM(16, 32, batch_first=True)).to(device)
            second = replicate(model, [device.index or 0] * 2)[1]  # comm.broadcast_coalesced's views
            lstm = second[-1]
            warned_left, _ = run_lstm(lstm, uncompacted=False, flatten_first=False)
            second = replicate(model, [device.index or 0] * 2)[1]
            warned_kept, _ = run_lstm(second[-1], uncompacted=True, flatten_first=False)
            found.append(f"{'embedding, then LSTM' if embedding_first else 'LSTM alone'}: warned left to torch "
                         f"{_yes(warned_left)}, kept uncompacted {_yes(warned_kept)}")
        return "see detail", "; ".join(found)

    def lengths_on_device():
        from torch.nn.utils.rnn import pack_padded_sequence

        try:
            pack_padded_sequence(torch.randn(2, 3, 4, device=device), torch.tensor([3, 2], device=device), batch_first=True)
        except RuntimeError as error:
            return "yes", _first_line(error)
        return "no", "packed without complaint"

    def gather_sizes():
        from torch.nn.parallel import gather

        index = device.index or 0
        try:
            gather([torch.zeros(3, 6, 4, device=device), torch.zeros(2, 5, 4, device=device)], index)
        except Exception as error:
            return ("yes" if "invalid size" in str(error) else "no"), f"{type(error).__name__}: {_first_line(error)}"
        return "no", "gathered without complaint"

    fact("torch's forward compacts a fresh replica's weights itself, and cuDNN then does not warn", left_to_torch)
    fact("cuDNN warns about a fresh replica's weights kept uncompacted (separate copies)", uncompacted)
    fact("cuDNN warns about them after flatten_parameters()", flattened_first)
    fact("torch's own replicate() onto this device twice, replica 1 (views into a broadcast buffer)", torch_replicas)
    fact("pack_padded_sequence refuses lengths on this device", lengths_on_device)
    fact("torch.nn.parallel.gather checks sizes with every output on this one device", gather_sizes)
    return facts


def _yes(value: bool) -> str:
    return "yes" if value else "no"


# -- part 2: the fixtures ---------------------------------------------------------------------------
@dataclass
class FixtureRow:
    name: str
    emulation_before: str
    gpu_before: str
    warned_before: bool
    emulation_after: str
    gpu_after: str
    warned_after: bool

    @property
    def agree_before(self) -> bool:
        return self.emulation_before == self.gpu_before

    @property
    def agree_after(self) -> bool:
        return self.emulation_after == self.gpu_after


def compare_fixtures(torch, device, only: Optional[List[str]]) -> Tuple[List[FixtureRow], str]:
    from dp_rnn_lint.harness.loading import LoadProblem, load_model_and_inputs

    fix, fix_source = _fixer()
    rows = []
    with tempfile.TemporaryDirectory(prefix="dp-rnn-lint-gpu-") as scratch:
        for path in sorted(p for p in FIXTURES.glob("DPR*/*.py") if not p.name.endswith(".fixed.py")):
            name = f"{path.parent.name}/{path.name}"
            if only and not any(fnmatch.fnmatch(name, pattern) for pattern in only):
                continue
            try:
                load_model_and_inputs(str(path), "make_model", "make_inputs")
            except LoadProblem:
                continue  # not runnable: the fixture tests skip it too
            try:
                fixed: Optional[Path] = fix(path, Path(scratch) / path.parent.name)
            except Exception as error:  # one fixture's failure is a row, not the end of the run
                fixed, fix_error = None, f"--fix raised {type(error).__name__}: {_first_line(error)}"
            before = [_check(torch, path, where) for where in ("cpu", device)]
            after = [_check(torch, fixed, where) if fixed else (fix_error, False) for where in ("cpu", device)]
            rows.append(FixtureRow(name, before[0][0], before[1][0], before[1][1], after[0][0], after[1][0], after[1][1]))
            print(f"  {name}: {rows[-1].gpu_before} -> {rows[-1].gpu_after}", flush=True)
    return rows, fix_source


def _fixer() -> Tuple[Callable[[Path, Path], Path], str]:
    """How a fixture gets its `--fix`: the linter itself, or the golden files where it cannot be imported."""
    try:
        from dp_rnn_lint.engine import Selection, lint_path
    except ImportError as error:
        def golden(path: Path, scratch: Path) -> Path:
            fixed = path.with_name(path.name[: -len(".py")] + ".fixed.py")
            return fixed if fixed.exists() else path

        return golden, (f"the fixtures' golden .fixed.py files (the linter cannot be imported here: {error}; "
                        "tests/test_fixtures.py holds them equal to its --fix output)")

    def linted(path: Path, scratch: Path) -> Path:
        scratch.mkdir(parents=True, exist_ok=True)
        copy = scratch / path.name
        shutil.copyfile(path, copy)
        result = lint_path(str(copy), Selection(preview=True), fix=True, write=True, unsafe_fixes=True)
        if result.problem is not None:
            raise RuntimeError(f"--fix failed on {path}: {result.problem}")
        return copy

    return linted, "`dp-rnn-lint --fix --unsafe-fixes --preview` (every rule, as the fixture tests apply it)"


def _check(torch, path: Path, device: Any) -> Tuple[str, bool]:
    """(verdict, whether cuDNN's warning appeared) of the harness on a fixture: the CPU emulation ("cpu"), or
    the one-device mode on `device`."""
    from dp_rnn_lint import harness
    from dp_rnn_lint.harness.loading import load_model_and_inputs

    try:
        model, inputs, kwargs = load_model_and_inputs(str(path), "make_model", "make_inputs")
        model.eval()
        if device == "cpu":
            report = harness.check_data_parallel(model, *inputs, device="cpu", **kwargs)
        elif device.type == "cpu":  # the dry run: the one-device mode with the CPU standing in for the GPU
            report = harness._run_on_one_device(model, inputs, kwargs, 2, device)
        else:
            report = harness.check_data_parallel(model, *inputs, device=str(device), **kwargs)
    except Exception as error:  # the harness itself failing is a finding for the table
        return f"harness raised {type(error).__name__}: {_cell(_first_line(error))[:80]}", False
    return _verdict(report), report.non_contiguous_warning


def _verdict(report) -> str:
    if report.ok:
        return "ok"
    shapes = []
    for problem in report.problems:
        shape = next((label for start, label in SHAPES if problem.startswith(start)), None)
        if shape is None:
            if problem.startswith("replica") and " raised " in problem:
                shape = "replica raised " + problem.split(" raised ", 1)[1].split(" ", 1)[0]
            elif "under DataParallel differs" in problem:
                shape = "output differs"
            elif " in forward: DataParallel discards the replicas" in problem:
                shape = "state lost with the replicas"
            else:
                shape = "other: " + problem[:40]
        shapes.append(shape)
    return "; ".join(sorted(set(shapes)))


# -- part 3: what DPR001 costs ----------------------------------------------------------------------
VARIANTS = (
    ("the module itself (no DataParallel)", "module"),
    ("replica, flatten_parameters() first (DPR001's fix)", "flatten"),
    ("replica left to torch (no flatten_parameters() call)", "left"),
    ("replica kept uncompacted (the trap as DPR001 describes it; torch before 2.0)", "uncompacted"),
)


@dataclass
class Cost:
    variant: str
    mode: str
    times_ms: List[float] = field(default_factory=list)
    peak_mib: Optional[float] = None
    warned: bool = False
    failure: str = ""  # what a variant that could not run raised

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def quartiles_ms(self) -> Tuple[float, float]:
        if len(self.times_ms) < 2:
            return self.times_ms[0], self.times_ms[0]
        q1, _, q3 = statistics.quantiles(self.times_ms, n=4)
        return q1, q3


def measure_cost(torch, device, args) -> List[Cost]:
    from torch import nn

    from dp_rnn_lint.harness.one_device import fresh_replicas, without_self_compaction

    torch.manual_seed(0)
    module = nn.LSTM(args.input_size, args.hidden, num_layers=args.layers, bidirectional=True, batch_first=True).to(device)
    batch = torch.randn(args.batch, args.length, args.input_size, device=device)
    cuda = device.type == "cuda"

    def synchronize() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    def step(kind: str, train: bool) -> bool:
        """One forward (and backward) as DataParallel runs it on a second GPU; whether cuDNN warned."""
        module.zero_grad(set_to_none=True)
        with warnings.catch_warnings(record=True) as caught, torch.set_grad_enabled(train):
            warnings.simplefilter("always")
            if kind == "module":
                rnn = module
            else:
                rnn = fresh_replicas(module, 1, device)[0]  # DataParallel replicates on every forward
                if kind == "uncompacted":
                    without_self_compaction(rnn)
                elif kind == "flatten":
                    rnn.flatten_parameters()
            output, _ = rnn(batch)
            if train:
                output.float().pow(2).mean().backward()
            del output, rnn
        return any(NON_CONTIGUOUS in str(w.message) for w in caught)

    costs = []
    for mode, train in (("forward", False), ("forward + backward", True)):
        measured = [Cost(label, mode) for label, _ in VARIANTS]
        for cost, (_, kind) in zip(measured, VARIANTS):
            try:
                for _ in range(max(args.warmup, 1)):
                    step(kind, train)
            except Exception as error:  # a variant this torch cannot run is a finding, not the end of the run
                cost.failure = f"{type(error).__name__}: {_first_line(error)}"
        running = [(cost, kind) for cost, (_, kind) in zip(measured, VARIANTS) if not cost.failure]
        for cost, kind in running:  # peak memory: one step each, on its own
            synchronize()
            if cuda:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(device)
            held = torch.cuda.memory_allocated(device) if cuda else 0
            cost.warned = step(kind, train)
            synchronize()
            if cuda:
                cost.peak_mib = (torch.cuda.max_memory_allocated(device) - held) / 2**20
        for _ in range(args.runs):  # the variants in turn, so that drift touches each alike
            for cost, kind in running:
                synchronize()
                start = time.perf_counter()
                cost.warned |= step(kind, train)
                synchronize()
                cost.times_ms.append((time.perf_counter() - start) * 1000)
        costs.extend(measured)
    return costs


# -- the report ------------------------------------------------------------------------------------
def render(args, machine, facts: List[Fact], fixtures: List[FixtureRow], fix_source: str, costs: List[Cost],
           elapsed: float) -> str:
    lines = ["# One GPU: the harness's one-device mode, and what DPR001 costs", ""]
    lines.append(f"Written by `benchmarks/gpu.py` on {datetime.date.today().isoformat()} in {elapsed:.0f} s; "
                 "to update this file, run the script again.")
    if args.dry_run:
        lines += ["", "**DRY RUN on the CPU** (`--dry-run`): this checks the script only. No GPU, no cuDNN: "
                  "nothing below says anything about either, and the timings mean nothing."]
    lines += ["", "## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in machine]

    lines += ["", "## What the one-device mode builds on, checked on this machine", "",
              "| question | answer | detail |", "|---|---|---|"]
    lines += [f"| {fact.question} | {fact.answer} | {_cell(fact.detail)} |" for fact in facts]

    lines += ["", "## Fixtures: the one-device mode beside the CPU emulation, before and after `--fix`", ""]
    agree_before = sum(row.agree_before for row in fixtures)
    agree_after = sum(row.agree_after for row in fixtures)
    warned_before = sum(row.warned_before for row in fixtures)
    warned_after = sum(row.warned_after for row in fixtures)
    lines.append(f"{len(fixtures)} runnable fixtures, each in eval mode over 2 replicas. `--fix`: {fix_source}. "
                 f"Verdicts agree before the fix on {agree_before} of {len(fixtures)}, after it on {agree_after}; "
                 f"cuDNN's warning appeared on {warned_before} fixtures before the fix and on {warned_after} after it. "
                 "A verdict is `ok` or the shapes of the problems reported.")
    lines += ["", "| fixture | emulation, before | one device, before | cuDNN warned | emulation, after | "
              "one device, after | cuDNN warned | agree |", "|---|---|---|---|---|---|---|---|"]
    for row in fixtures:
        agree = "yes" if row.agree_before and row.agree_after else "**no**"
        lines.append(f"| {row.name} | {row.emulation_before} | {row.gpu_before} | {_yes(row.warned_before)} | "
                     f"{row.emulation_after} | {row.gpu_after} | {_yes(row.warned_after)} | {agree} |")

    lines += ["", "## What DPR001 costs", ""]
    lines.append(f"`nn.LSTM({args.input_size}, {args.hidden}, num_layers={args.layers}, bidirectional=True, "
                 f"batch_first=True)` in float32 on a batch of {args.batch} sequences of {args.length}, cuDNN "
                 "as configured above. A replica is built as DataParallel builds one on a second GPU "
                 "(`dp_rnn_lint.harness.one_device.fresh_replicas`: torch's `replicate` with a copy of each "
                 "weight), inside every timed step, as DataParallel replicates on every forward; \"kept "
                 "uncompacted\" makes the replica take its weights for those of its last call, so that its "
                 "forward does not call flatten_parameters() itself (`without_self_compaction`), as no "
                 "torch before 2.0 did. Forward with backward: the loss is the mean square of the output. "
                 f"{args.runs} timed runs after {args.warmup} warm-up runs, the variants in turn; the GPU is "
                 "synchronised before and after each step. Peak memory: `torch.cuda.max_memory_allocated` "
                 "during one step, above what was allocated before it.")
    lines += ["", "| variant | pass | median ms | quartiles ms | × the fix | peak MiB | cuDNN warned |",
              "|---|---|---|---|---|---|---|"]
    fix_median = {cost.mode: cost.median_ms for cost in costs if cost.variant == VARIANTS[1][0] and not cost.failure}
    for cost in costs:
        if cost.failure:
            lines.append(f"| {cost.variant} | {cost.mode} | failed: {_cell(cost.failure)} | | | | |")
            continue
        q1, q3 = cost.quartiles_ms
        ratio = cost.median_ms / fix_median[cost.mode] if fix_median.get(cost.mode) else float("nan")
        peak = "n/a" if cost.peak_mib is None else f"{cost.peak_mib:.0f}"
        lines.append(f"| {cost.variant} | {cost.mode} | {cost.median_ms:.2f} | {q1:.2f}–{q3:.2f} | {ratio:.3f} | "
                     f"{peak} | {_yes(cost.warned)} |")
    lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _first_line(value: Any) -> str:
    text = str(value).strip()
    return text.splitlines()[0] if text else type(value).__name__


if __name__ == "__main__":
    sys.exit(main())
