"""The CPU emulation follows torch's DataParallel: chunk sizes, replicas, gather and its error."""

from __future__ import annotations

import collections
import re

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn.parallel import replicate  # noqa: E402
from torch.nn.parallel.scatter_gather import gather, scatter_kwargs  # noqa: E402

from dp_rnn_lint.harness import check_data_parallel  # noqa: E402
from dp_rnn_lint.harness.emulation import ReplicaDeviceTensor, cpu_communication, mark_replica_devices  # noqa: E402


@pytest.mark.parametrize(
    "batch, devices, sizes",
    [(5, 2, [3, 2]), (4, 2, [2, 2]), (1, 2, [1]), (5, 4, [2, 2, 1]), (7, 3, [3, 3, 1]), (2, 3, [1, 1])],
)
def test_scatter_chunks_like_torch_chunk(batch, devices, sizes):
    # comm.cpp splits with tensor.chunk(len(devices), dim): a batch of 5 on 2 devices is 3 + 2.
    assert [c.size(0) for c in torch.arange(batch).chunk(devices)] == sizes
    with cpu_communication():
        inputs, kwargs = scatter_kwargs((torch.arange(batch).view(batch, 1),), {}, list(range(devices)))
    assert [replica_inputs[0].size(0) for replica_inputs in inputs] == sizes
    assert torch.equal(torch.cat([replica_inputs[0] for replica_inputs in inputs]), torch.arange(batch).view(batch, 1))


def test_scatter_recurses_through_containers_and_replicates_other_objects():
    Pair = collections.namedtuple("Pair", "left right")
    marker = object()
    structure = ({"x": torch.zeros(4, 3), "tag": "keep"}, [torch.ones(4)], Pair(torch.arange(4), marker))
    with cpu_communication():
        inputs, _ = scatter_kwargs(structure, {}, [0, 1])
    assert len(inputs) == 2
    for first in inputs:
        mapping, listed, pair = first
        assert mapping["x"].shape == (2, 3) and mapping["tag"] == "keep"
        assert listed[0].shape == (2,)
        assert isinstance(pair, Pair) and pair.right is marker


def test_gather_concatenates_and_fails_with_torchs_message():
    with cpu_communication():
        assert torch.equal(gather([torch.zeros(3, 2), torch.ones(2, 2)], 0), torch.cat([torch.zeros(3, 2), torch.ones(2, 2)]))
        with pytest.raises(RuntimeError, match=r"^Gather got an input of invalid size: got \[2, 5, 4\], but expected \[2, 6, 4\]$"):
            gather([torch.zeros(3, 6, 4), torch.zeros(2, 5, 4)], 0)


def test_replicas_parameters_are_non_leaf_copies_and_gradients_flow_back():
    model = nn.Linear(3, 2)
    with cpu_communication():
        copies = replicate(model, [0, 1])
    assert len(copies) == 2
    for copy in copies:
        assert not copy.weight.is_leaf and list(copy.parameters()) == []
        assert torch.equal(copy.weight, model.weight)
    (copies[0](torch.ones(1, 3)).sum() + copies[1](torch.ones(1, 3)).sum()).backward()
    assert torch.equal(model.weight.grad, torch.full((2, 3), 2.0))


def test_rnn_replicas_keep_their_own_flat_weight_lists():
    model = nn.LSTM(3, 4)
    with cpu_communication():
        copies = replicate(model, [0, 1])
    assert copies[0]._flat_weights is not copies[1]._flat_weights


def test_patches_are_undone_after_the_emulation():
    from torch.nn.parallel import _functions, comm, scatter_gather

    def current():
        return (comm.scatter, comm.broadcast_coalesced, _functions.Broadcast, _functions.Gather, _functions.Scatter,
                scatter_gather.Gather, scatter_gather.Scatter)

    before = current()
    with cpu_communication():
        assert current() != before
    assert current() == before


class Encoder(nn.Module):
    def __init__(self, flatten: bool):
        super().__init__()
        self.flatten = flatten
        self.rnn = nn.GRU(3, 4, batch_first=True)

    def forward(self, x):
        if self.flatten:
            self.rnn.flatten_parameters()
        return self.rnn(x)[0]


def test_rnn_without_flatten_on_the_replica_is_reported_by_name():
    torch.manual_seed(0)
    report = check_data_parallel(Encoder(flatten=False).eval(), torch.randn(5, 6, 3))
    assert not report.ok
    assert report.replicas == 2
    [problem] = report.problems
    assert problem.startswith("RNN submodule `rnn` (GRU) ran on replicas 0, 1 before flatten_parameters()")


def test_flattened_rnn_passes_and_matches_one_device():
    torch.manual_seed(0)
    model, x = Encoder(flatten=True).eval(), torch.randn(5, 6, 3)
    report = check_data_parallel(model, x)
    assert report.ok, report.problems
    assert torch.allclose(report.output, model(x))


def test_batch_smaller_than_replicas_uses_fewer_replicas():
    report = check_data_parallel(Encoder(flatten=True).eval(), torch.randn(1, 6, 3), replicas=2)
    assert report.ok and report.replicas == 1


def test_hidden_state_output_is_reported_as_differing_from_one_device():
    class ReturnsHidden(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(3, 4, batch_first=True)

        def forward(self, x):
            self.rnn.flatten_parameters()
            return self.rnn(x)[1]  # (layers, batch, hidden): batch is dim 1

    report = check_data_parallel(ReturnsHidden().eval(), torch.randn(4, 6, 3))
    assert report.problems and report.problems[0].startswith("output under DataParallel differs")


def test_replica_exception_is_reported_with_its_type():
    class NeedsParameters(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 3)

        def forward(self, x):
            return x.to(next(self.parameters()).device)

    [problem] = check_data_parallel(NeedsParameters().eval(), torch.randn(4, 3)).problems
    assert problem.startswith("replica 0 raised StopIteration")


def test_non_module_is_a_type_error():
    with pytest.raises(TypeError):
        check_data_parallel(lambda x: x, torch.zeros(2))


@pytest.mark.skipif(
    torch.cuda.device_count() < 2, reason=f"needs 2 CUDA devices for real DataParallel, found {torch.cuda.device_count()}"
)
def test_real_data_parallel_reports_the_warning_and_the_gather_error():
    from dp_rnn_lint.harness.loading import load_model_and_inputs

    from .conftest import FIXTURES

    torch.manual_seed(0)
    report = check_data_parallel(Encoder(flatten=False).eval(), torch.randn(5, 6, 3))
    assert report.mode == "cuda"
    assert any("not part of single contiguous chunk" in p for p in report.problems)
    assert check_data_parallel(Encoder(flatten=True).eval(), torch.randn(5, 6, 3)).ok

    buggy = FIXTURES / "DPR002" / "faq_lstm_batch_first.py"
    model, inputs, kwargs = load_model_and_inputs(str(buggy), "make_model", "make_inputs")
    problems = check_data_parallel(model.eval(), *inputs, **kwargs).problems
    assert any(p.startswith("gathering output from the replicas fails: Gather got an input of invalid size") for p in problems)
    model, inputs, kwargs = load_model_and_inputs(str(buggy.with_name("faq_lstm_batch_first.fixed.py")), "make_model", "make_inputs")
    fixed_report = check_data_parallel(model.eval(), *inputs, **kwargs)
    assert fixed_report.ok, fixed_report.problems  # includes the comparison with the single-device output


class Varying(nn.Module):
    """Returns something whose structure depends on the chunk a replica gets."""

    def __init__(self, shape):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.shape = shape

    def forward(self, x):
        y = self.linear(x)
        big = x.size(0) == 3
        if self.shape == "dict-keys":
            return {"a": y} if big else {"b": y}
        if self.shape == "python-number":
            return y, 3
        return y if big else None


@pytest.mark.parametrize("shape", ["dict-keys", "python-number", "none-on-one-replica"])
def test_outputs_that_cannot_be_gathered_are_problems_not_exceptions(shape):
    report = check_data_parallel(Varying(shape).eval(), torch.randn(5, 3))
    assert not report.ok
    assert any(p.startswith("gathering") for p in report.problems), report.problems


def test_input_without_a_batch_dimension_is_a_problem():
    report = check_data_parallel(nn.Identity(), torch.tensor(3.0))
    assert report.problems[0].startswith("scattering the inputs along dim 0 fails")


def test_one_replica_runs_the_module_itself_as_data_parallel_does():
    report = check_data_parallel(Encoder(flatten=False).eval(), torch.randn(5, 6, 3), replicas=1)
    assert report.ok and report.replicas == 1


def test_backward_through_the_gathered_output_works_after_the_emulation():
    model = nn.Linear(3, 2)
    x = torch.randn(5, 3, requires_grad=True)
    report = check_data_parallel(model, x)
    report.output.sum().backward()
    assert torch.allclose(x.grad, model.weight.sum(0).expand(5, 3))


def test_emulation_works_where_an_accelerator_exists_but_too_few_devices(monkeypatch):
    # On a one-GPU machine torch's Scatter would set up copy streams for device 1 and fail.
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    report = check_data_parallel(Encoder(flatten=True).eval(), torch.randn(5, 6, 3))
    assert report.mode == "cpu emulation" and report.ok, report.problems


def test_module_list_members_get_advice_about_the_list():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.GRU(3, 3, batch_first=True) for _ in range(2)])

        def forward(self, x):
            for layer in self.layers:
                x, _ = layer(x)  # noqa: DPR001 - the bug under test
            return x

    problems = check_data_parallel(Stack().eval(), torch.randn(4, 5, 3)).problems
    assert len(problems) == 2
    assert all("on every member of self.layers" in p for p in problems)


def test_scalar_output_is_explained_as_such():
    class Loss(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 1)

        def forward(self, x):
            return self.linear(x).mean()

    [problem] = check_data_parallel(Loss().eval(), torch.randn(4, 3)).problems
    assert "a scalar output is gathered into a vector" in problem


@pytest.mark.skipif(
    torch.cuda.device_count() < 2, reason=f"needs 2 CUDA devices to compare with torch's comm, found {torch.cuda.device_count()}"
)
def test_stand_ins_agree_with_torchs_cuda_comm():
    from torch.nn.parallel import comm

    from dp_rnn_lint.harness.emulation import check_gather_sizes, cpu_scatter

    for batch in (1, 2, 5, 7):
        tensor = torch.arange(batch * 3.0).view(batch, 3)
        real = comm.scatter(tensor.cuda(), [0, 1])
        ours = cpu_scatter(tensor, [0, 1])
        assert [t.shape for t in real] == [t.shape for t in ours]
        assert all(torch.equal(r.cpu(), o) for r, o in zip(real, ours))
    parts = [torch.zeros(3, 6, 4), torch.zeros(2, 5, 4)]
    with pytest.raises(RuntimeError) as real_error:
        comm.gather([parts[0].cuda(0), parts[1].cuda(1)], 0, 0)
    with pytest.raises(RuntimeError) as our_error:
        check_gather_sizes(parts, 0)
    assert str(our_error.value) in str(real_error.value)


# -- tensors that DataParallel moves to the replica's GPU ------------------------------------------
LENGTHS_ON_GPU = r"^replica \d+ raised RuntimeError.*'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:\d Long tensor"


class PackedTagger(nn.Module):
    """A batch-first LSTM over packed sequences; `prepare` is what forward does to the lengths first."""

    def __init__(self, prepare=lambda lengths: lengths):
        super().__init__()
        self.prepare = prepare
        self.embedding = nn.Embedding(10, 3)
        self.rnn = nn.LSTM(3, 4, batch_first=True)

    def forward(self, tokens, lengths):
        self.rnn.flatten_parameters()
        packed = nn.utils.rnn.pack_padded_sequence(
            self.embedding(tokens), self.prepare(lengths), batch_first=True, enforce_sorted=False
        )
        output, _ = self.rnn(packed)
        padded, _ = nn.utils.rnn.pad_packed_sequence(output, batch_first=True, total_length=tokens.size(1))
        return padded


def tagger_inputs():
    torch.manual_seed(0)
    return torch.randint(1, 10, (5, 6)), torch.tensor([6, 2, 4, 3, 5])


def test_lengths_passed_straight_to_pack_padded_sequence_fail_as_on_gpus():
    [problem] = check_data_parallel(PackedTagger().eval(), *tagger_inputs()).problems
    assert re.match(LENGTHS_ON_GPU, problem), problem
    assert "pass lengths.cpu() to pack_padded_sequence" in problem
    assert " at rnn.py:" in problem  # where torch raises, not the emulation's own frame


@pytest.mark.parametrize(
    "prepare",
    [lambda lengths: lengths.cpu(), lambda lengths: lengths.to("cpu"), lambda lengths: lengths.tolist()],
    ids=["cpu", "to-cpu", "tolist"],
)
def test_lengths_brought_to_the_cpu_pass_and_match_one_device(prepare):
    model, (tokens, lengths) = PackedTagger(prepare).eval(), tagger_inputs()
    report = check_data_parallel(model, tokens, lengths)
    assert report.ok, report.problems
    assert torch.allclose(report.output, model(tokens, lengths))


class MaskedTagger(PackedTagger):
    def forward(self, tokens, mask):
        return super().forward(tokens, mask.sum(1))


@pytest.mark.parametrize("to_cpu, ok", [(False, False), (True, True)])
def test_lengths_computed_from_a_mask_keep_the_replicas_device(to_cpu, ok):
    tokens, lengths = tagger_inputs()
    mask = torch.arange(tokens.size(1)) < lengths[:, None]
    report = check_data_parallel(MaskedTagger(lambda lengths: lengths.cpu() if to_cpu else lengths).eval(), tokens, mask)
    assert report.ok == ok, report.problems
    if not ok:
        assert re.match(LENGTHS_ON_GPU, report.problems[0]), report.problems


def test_lengths_as_a_python_list_reach_every_replica_whole():
    tokens, lengths = tagger_inputs()
    report = check_data_parallel(PackedTagger().eval(), tokens, lengths.tolist())
    assert not report.ok
    assert any(re.match(r"^replica \d+ raised", p) for p in report.problems), report.problems


def test_gathered_output_is_a_plain_tensor_after_integer_inputs():
    report = check_data_parallel(PackedTagger(lambda lengths: lengths.cpu()).eval(), *tagger_inputs())
    assert report.ok, report.problems
    assert type(report.output) is torch.Tensor


def test_one_replica_marks_nothing(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # one CUDA device would run the real thing
    report = check_data_parallel(PackedTagger().eval(), *tagger_inputs(), replicas=1)
    assert report.ok, report.problems
    assert type(report.output) is torch.Tensor


def test_scatter_marks_integer_and_bool_tensors_in_every_container_but_not_floats():
    Pair = collections.namedtuple("Pair", "ids mask")
    structure = ({"ids": torch.arange(4)}, [torch.ones(4, dtype=torch.bool)], Pair(torch.arange(4), torch.zeros(4)))
    with cpu_communication():
        inputs, kwargs = mark_replica_devices(*scatter_kwargs(structure, {"lengths": torch.arange(4)}, [0, 1]))
    for index, (mapping, listed, pair) in enumerate(inputs):
        marked = [mapping["ids"], listed[0], pair.ids, kwargs[index]["lengths"]]
        assert all(isinstance(t, ReplicaDeviceTensor) and t.replica_device == f"cuda:{index}" for t in marked)
        assert isinstance(pair, Pair) and type(pair.mask) is torch.Tensor


def test_the_mark_follows_torch_operations_until_the_tensor_reaches_the_cpu():
    lengths = torch.tensor([3, 1, 2]).as_subclass(ReplicaDeviceTensor)
    lengths.replica_device = "cuda:1"
    for derived in (lengths.long(), lengths.sort()[0], (lengths > 1).sum(0), lengths.to(torch.int32), lengths + 1):
        assert isinstance(derived, ReplicaDeviceTensor) and derived.replica_device == "cuda:1"
    for on_cpu in (lengths.cpu(), lengths.to("cpu"), lengths.to(device="cpu"), lengths.to(torch.device("cpu")),
                   lengths.to(torch.zeros(3))):
        assert type(on_cpu) is torch.Tensor
    assert lengths.device.type == "cpu"  # tensors made on `x.device` in user code still work


def test_marked_lengths_are_refused_with_torchs_wording():
    lengths = torch.tensor([[3, 1, 2]])
    with pytest.raises(RuntimeError) as real:
        torch.nn.utils.rnn.pack_padded_sequence(torch.zeros(3, 3, 2), lengths, batch_first=True)
    marked = lengths[0].as_subclass(ReplicaDeviceTensor)
    marked.replica_device = "cuda:0"
    with pytest.raises(RuntimeError) as emulated:
        torch.nn.utils.rnn.pack_padded_sequence(torch.zeros(3, 3, 2), marked, batch_first=True, enforce_sorted=False)
    assert str(real.value) == "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor"
    assert str(emulated.value) == "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor"


class _SelfFlatteningLSTM(nn.LSTM):
    def forward(self, input, hx=None):
        self.flatten_parameters()
        return super().forward(input, hx)[0]


class _UnflattenedLSTM(nn.LSTM):
    def forward(self, input, hx=None):
        return super().forward(input, hx)[0]


def test_an_rnn_subclass_is_checked_when_torchs_forward_runs_so_its_own_flatten_counts():
    inputs = torch.randn(4, 3, 4)
    assert check_data_parallel(_SelfFlatteningLSTM(4, 4, batch_first=True).eval(), inputs).problems == []
    problems = check_data_parallel(_UnflattenedLSTM(4, 4, batch_first=True).eval(), inputs).problems
    assert len(problems) == 1 and "_UnflattenedLSTM.forward just before it runs the inherited forward" in problems[0]
    # The class's forward is torch's own again once the run is over.
    assert nn.LSTM.forward.__qualname__ == "LSTM.forward"
