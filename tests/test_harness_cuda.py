"""The harness's one-device mode (`check_data_parallel(..., device="cuda")`, `verify --device cuda`): every
replica on one GPU, built as DataParallel builds a replica on a second GPU.

The tests marked `needs_cuda` run it on a GPU and skip without one. The others run everywhere: the device
arguments, and the same walk through DataParallel's steps with the CPU as the device (torch's CUDA-only
communication replaced by the emulation's stand-ins), which shows everything but what only a GPU can show:
cuDNN's warning, and lengths that the scatter puts on the GPU."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence  # noqa: E402

from dp_rnn_lint.engine import Selection, lint_path  # noqa: E402
from dp_rnn_lint.harness import (  # noqa: E402
    NON_CONTIGUOUS_WARNING,
    DeviceUnavailable,
    HarnessReport,
    _FlattenWatch,
    _gathered,
    _run_on_one_device,
    _scatter_problem,
    check_data_parallel,
    resolve_device,
)
from dp_rnn_lint.harness.one_device import fresh_replicas, without_self_compaction  # noqa: E402

from .conftest import ROOT, fixture_id  # noqa: E402
from .test_harness_fixtures import PROBLEMS, RUNNABLE, load, pitfalls  # noqa: E402

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
needs_cudnn = pytest.mark.skipif(not (torch.cuda.is_available() and torch.backends.cudnn.is_available()
                                      and torch.backends.cudnn.enabled), reason="needs a CUDA device with cuDNN")
without_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks what happens on a machine without CUDA")

CPU = torch.device("cpu")


class Tagger(nn.Module):
    """An embedding before the LSTM, as in most models: the LSTM's weights are not the first parameters."""

    def __init__(self, flatten: bool = False):
        super().__init__()
        self.flatten = flatten
        self.embed = nn.Embedding(30, 8)
        self.lstm = nn.LSTM(8, 12, batch_first=True)
        self.out = nn.Linear(12, 5)

    def forward(self, tokens):
        if self.flatten:
            self.lstm.flatten_parameters()
        states, _ = self.lstm(self.embed(tokens))
        return self.out(states)


def tokens(device=CPU):
    torch.manual_seed(0)
    return torch.randint(0, 30, (4, 7), device=device)


# -- the device argument ---------------------------------------------------------------------------
def test_device_names_resolve_to_a_device_or_to_auto():
    assert resolve_device("auto") is None
    assert resolve_device("cpu") == CPU
    assert resolve_device(CPU) == CPU
    for name in ("gpu", "tpu:0", "", 3.5):
        with pytest.raises(ValueError, match="device must be 'auto', 'cpu', 'cuda' or 'cuda:N'"):
            resolve_device(name)


def test_cuda_on_a_machine_without_it_is_a_one_line_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(DeviceUnavailable, match=r"^no CUDA device \(torch \S+: torch.cuda.is_available\(\) is False\)$"):
        check_data_parallel(Tagger().eval(), tokens(), device="cuda")


def test_a_cuda_device_the_machine_lacks_is_named(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(DeviceUnavailable, match=r"^no device cuda:3 \(torch sees 1 CUDA device\)$"):
        resolve_device("cuda:3")


def test_device_cpu_is_the_emulation():
    report = check_data_parallel(Tagger().eval(), tokens(), device="cpu")
    assert report.mode == "cpu emulation"
    assert report.problems and report.problems[0].startswith("RNN submodule `lstm` (LSTM) ran on replicas 0, 1")


# -- the one-device walk, on the CPU ---------------------------------------------------------------
def test_fresh_replicas_keep_every_weight_in_a_storage_of_its_own():
    """What makes a replica on one GPU meet cuDNN's check as a second GPU's replica does: no weight is a view
    into the module's compacted buffer, nor into any buffer shared with another weight."""
    model = Tagger()
    replicas = fresh_replicas(model, 2, CPU)
    source = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = set()
    for replica in replicas:
        for weight in replica.lstm._flat_weights:
            storage = weight.untyped_storage()
            assert storage.data_ptr() not in source and storage.data_ptr() not in seen
            assert weight.storage_offset() == 0 and storage.nbytes() == weight.numel() * weight.element_size()
            seen.add(storage.data_ptr())
        assert torch.equal(replica.lstm.weight_hh_l0, model.lstm.weight_hh_l0)
        assert replica.lstm.weight_hh_l0.grad_fn is not None  # an output of the broadcast, as DataParallel's are


def test_gradients_of_fresh_replicas_reach_the_module():
    model = Tagger()
    replicas = fresh_replicas(model, 2, CPU)
    sum(replica(tokens()).sum() for replica in replicas).backward()
    twice = model.lstm.weight_ih_l0.grad.clone()
    model.zero_grad()
    model(tokens()).sum().backward()
    assert torch.allclose(twice, 2 * model.lstm.weight_ih_l0.grad)


@pytest.mark.parametrize("path", RUNNABLE, ids=fixture_id)
def test_the_one_device_walk_on_the_cpu_reports_what_the_emulation_reports_but_lengths(path):
    """The emulation and the one-device mode share their walk through DataParallel: with the CPU as the device
    they differ only where the emulation pretends integer tensors live on a GPU (DPR003's lengths)."""
    model, inputs, kwargs = load(path)
    emulated = check_data_parallel(model, *inputs, device="cpu", **kwargs)
    model, inputs, kwargs = load(path)
    one_device = _run_on_one_device(model, inputs, kwargs, 2, CPU)
    assert one_device.mode == "one device, cpu" and one_device.replicas == emulated.replicas
    assert not one_device.non_contiguous_warning
    if "DPR003" in pitfalls(path):
        assert [p for p in emulated.problems if PROBLEMS["DPR003"].match(p)] and not one_device.problems
    else:
        assert one_device.problems == emulated.problems


def test_torch_calls_flatten_parameters_itself_on_a_replicas_first_call(monkeypatch):
    """Since torch 2.0 an RNN whose weights are other tensors than at its last call re-reads them and calls
    flatten_parameters() (on a GPU: compacts them) before running: a replica's always are."""
    replica, kept = fresh_replicas(nn.LSTM(3, 4, batch_first=True), 2, CPU)
    without_self_compaction(kept)
    calls = []
    original = nn.LSTM.flatten_parameters
    monkeypatch.setattr(nn.LSTM, "flatten_parameters", lambda rnn: (calls.append(rnn), original(rnn))[-1])
    replica(torch.randn(2, 5, 3))
    kept(torch.randn(2, 5, 3))
    assert calls == [replica]


def run_watched(model, on_cuda=True):
    replicas = fresh_replicas(model, 2, CPU)
    watch = _FlattenWatch(replicas)
    with watch.catching_warnings(), watch.inherited_forwards():
        for replica, chunk in zip(replicas, tokens().chunk(2)):
            replica(chunk)
    return watch.problems(on_cuda), watch.warning_messages()


def cudnn_like_warning(monkeypatch):
    """LSTM.forward warning as cuDNN does about weights it has to compact, so that the CPU can show the watch."""
    original = nn.LSTM.forward

    def forward(rnn, *args, **kwargs):
        warnings.warn(f"{NON_CONTIGUOUS_WARNING}. This means they need to be compacted at every call", UserWarning)
        return original(rnn, *args, **kwargs)

    monkeypatch.setattr(nn.LSTM, "forward", forward)


def test_a_warning_raised_inside_an_rnns_call_is_laid_at_that_rnn(monkeypatch):
    cudnn_like_warning(monkeypatch)
    problems, messages = run_watched(Tagger())
    assert problems == [
        f"RNN submodule `lstm` (LSTM) ran on replicas 0, 1 before flatten_parameters() was called on that replica: "
        f"cuDNN warned '{NON_CONTIGUOUS_WARNING}' on replicas 0, 1 and copied the weights; "
        "call self.lstm.flatten_parameters() at the start of forward"]
    assert len(messages) == 1 and NON_CONTIGUOUS_WARNING in messages[0]


def test_a_warning_after_flatten_parameters_is_its_own_problem(monkeypatch):
    cudnn_like_warning(monkeypatch)
    problems, _ = run_watched(Tagger(flatten=True))
    assert len(problems) == 1
    assert problems[0].startswith(f"RNN submodule `lstm` (LSTM) made cuDNN warn '{NON_CONTIGUOUS_WARNING}' on replicas 0, 1 "
                                  "although flatten_parameters() was called on that replica before it ran")


def test_without_a_warning_the_watch_says_torch_compacted_the_replica_itself():
    problems, messages = run_watched(Tagger())
    assert messages == []
    assert problems[0].startswith("RNN submodule `lstm` (LSTM) ran on replicas 0, 1 before flatten_parameters() was "
                                  "called on that replica: cuDNN did not warn: torch's forward called "
                                  "flatten_parameters() itself on replicas 0, 1")


def test_the_emulation_keeps_its_words_for_the_same_rnn():
    problems, _ = run_watched(Tagger(), on_cuda=False)
    assert f"before flatten_parameters() was called on that replica: on GPUs every forward warns '{NON_CONTIGUOUS_WARNING}'" \
        in problems[0]


def test_torchs_gather_refusing_a_cpu_tensor_is_reported_with_the_output_it_met():
    """What a replica returning a PackedSequence meets on a GPU (its batch_sizes stay on the CPU): torch's own
    Gather, unpatched, refuses CPU tensors, here as there."""
    packed = [pack_padded_sequence(torch.randn(2, 3, 4), torch.tensor([3, 2]), batch_first=True) for _ in range(2)]
    report = HarnessReport()
    assert _gathered(packed, report, 0) is None
    assert report.problems[0].startswith("gathering output[0] from the replicas fails: AssertionError: Gather function "
                                         "not implemented for CPU tensors (a replica returned a tensor on the CPU")
    assert DPR008_ON_GPUS.match(report.problems[0])


def test_a_packed_sequence_whose_batch_sizes_left_the_cpu_is_reported_as_a_scatter_problem():
    """PackedSequence's own refusal, which DataParallel's scatter meets on a GPU (made here with the meta device)."""
    with pytest.raises(ValueError) as refused:
        PackedSequence(torch.randn(3, 4), torch.tensor([2, 1], device="meta"))
    problem = _scatter_problem(refused.value)
    assert problem.startswith("scattering the inputs along dim 0 fails: ValueError: batch_sizes should always be on CPU.")
    assert problem.endswith("pass the padded batch and the lengths, and pack inside forward)")
    assert DPR008_ON_GPUS.match(problem)


@without_cuda
def test_the_gpu_benchmark_without_cuda_says_so_and_writes_nothing(tmp_path):
    output = tmp_path / "GPU.md"
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--output", str(output)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith("benchmarks/gpu.py: needs a CUDA device") and result.stderr.count("\n") == 1
    assert not output.exists()


def test_the_gpu_benchmark_dry_run_writes_every_part(tmp_path):
    output = tmp_path / "GPU.md"
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--dry-run", "--only", "DPR002/faq_lstm_batch_first.py",
         "--only", "DPR001/bilstm_tagger.py", "--hidden", "8", "--input-size", "4", "--length", "5", "--batch", "4",
         "--runs", "2", "--warmup", "1", "--output", str(output)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    text = output.read_text(encoding="utf-8")
    assert "**DRY RUN on the CPU**" in text
    for heading in ("## Machine", "## What the one-device mode builds on", "## Fixtures", "## What DPR001 costs"):
        assert heading in text
    assert "| DPR002/faq_lstm_batch_first.py | gather fails | gather fails | no | ok | ok | no | yes |" in text
    assert text.count("| forward + backward |") == 4


# -- on a GPU --------------------------------------------------------------------------------------
@needs_cudnn
def test_on_cudnn_a_replicas_separate_weights_warn_unless_they_are_compacted_first():
    """The facts the one-device mode builds on: weights in storages of their own make cuDNN warn; torch's own
    forward (2.0 and later) compacts a replica's weights before cuDNN sees them; so does flatten_parameters()."""
    device = torch.device("cuda", torch.cuda.current_device())
    model = Tagger().to(device)
    batch = model.embed(tokens(device)).detach()

    def warned(lstm):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lstm(batch)
        return any(NON_CONTIGUOUS_WARNING in str(w.message) for w in caught)

    assert not warned(model.lstm)  # .cuda() compacted the module's own weights
    kept = fresh_replicas(model, 1, device)[0].lstm
    without_self_compaction(kept)
    assert warned(kept)
    flattened = fresh_replicas(model, 1, device)[0].lstm
    without_self_compaction(flattened)
    flattened.flatten_parameters()
    assert not warned(flattened)
    assert not warned(fresh_replicas(model, 1, device)[0].lstm)


@needs_cuda
def test_pack_padded_sequence_refuses_lengths_on_one_gpu():
    device = torch.device("cuda", torch.cuda.current_device())
    with pytest.raises(RuntimeError, match=rf"^'lengths' argument should be a 1D CPU int64 tensor, but got 1D {device} Long tensor"):
        pack_padded_sequence(torch.randn(2, 3, 4, device=device), torch.tensor([3, 2], device=device), batch_first=True)


@needs_cuda
def test_torch_gather_checks_sizes_with_every_output_on_one_gpu():
    from torch.nn.parallel import gather

    index = torch.cuda.current_device()
    with pytest.raises(RuntimeError, match=r"^Gather got an input of invalid size: got \[2, 5, 4\], but expected \[2, 6, 4\]"):
        gather([torch.zeros(3, 6, 4, device=f"cuda:{index}"), torch.zeros(2, 5, 4, device=f"cuda:{index}")], index)


# DPR008's trap where a PackedSequence's batch_sizes are what torch makes them, a tensor on the CPU: the scatter
# moves them to the GPU, which PackedSequence refuses, and the gather refuses CPU tensors. The emulation keeps
# every tensor on the CPU and shows the trap later (a replica's packed data split wrongly, a batch_sizes
# concatenated), so on a GPU it takes these forms; read from torch's code, to be seen on a GPU.
DPR008_ON_GPUS = re.compile(r"^(scattering the inputs along dim 0 fails: ValueError: batch_sizes should always be on CPU|"
                            r"gathering output\S* from the replicas fails: .*not implemented for CPU tensors)")


def pitfalls_shown(report):
    """Which rules' traps the report's problems show; every problem must show one."""
    codes = set()
    for problem in report.problems:
        found = {code for code, pattern in PROBLEMS.items() if pattern.match(problem)}
        if DPR008_ON_GPUS.match(problem):
            found.add("DPR008")
        assert found, problem
        codes |= found
    return codes


def fixed_copy(path, tmp_path):
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    assert lint_path(str(copy), Selection(preview=True), fix=True, write=True, unsafe_fixes=True).problem is None
    return copy


@needs_cudnn
@pytest.mark.parametrize("path", RUNNABLE, ids=fixture_id)
def test_one_gpu_gives_the_emulations_verdict_before_and_after_fix(path, tmp_path):
    device = f"cuda:{torch.cuda.current_device()}"
    for source in (path, fixed_copy(path, tmp_path)):
        model, inputs, kwargs = load(source)
        emulated = check_data_parallel(model, *inputs, device="cpu", **kwargs)
        model, inputs, kwargs = load(source)
        on_gpu = check_data_parallel(model, *inputs, device=device, **kwargs)
        assert on_gpu.mode == f"one device, {device}"
        assert on_gpu.ok == emulated.ok, (on_gpu.problems, emulated.problems)
        assert pitfalls_shown(on_gpu) == pitfalls_shown(emulated), (on_gpu.problems, emulated.problems)
        for problem in on_gpu.problems:
            # Every RNN that ran uncompacted either made cuDNN warn or was compacted by torch first.
            assert "(it did not run this RNN)" not in problem, problem
        if "DPR001" not in pitfalls_shown(on_gpu):
            assert not on_gpu.non_contiguous_warning, on_gpu.warnings


@needs_cuda
def test_verify_device_cuda_runs_the_one_device_mode(tmp_path):
    fixture = ROOT / "fixtures" / "DPR002" / "faq_lstm_batch_first.py"
    result = subprocess.run([sys.executable, "-m", "dp_rnn_lint", "verify", str(fixture), "--device", "cuda"],
                            capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 1, result.stderr
    assert f"DataParallel check (one device, cuda:{torch.cuda.current_device()}, 2 replicas): 1 problem" in result.stdout
    assert "Gather got an input of invalid size" in result.stdout
