"""The loop that proves the fixes: every buggy fixture fails the harness with its pitfall, the linter's
--fix makes it pass, and the fixed model computes exactly what it computed on one device."""

from __future__ import annotations

import re
import shutil

import pytest

torch = pytest.importorskip("torch")

from dp_rnn_lint.engine import Selection, lint_path  # noqa: E402
from dp_rnn_lint.harness import check_data_parallel  # noqa: E402
from dp_rnn_lint.harness.loading import LoadProblem, load_model_and_inputs  # noqa: E402

from .conftest import FIXTURES, expected_findings, fixture_files, fixture_id  # noqa: E402

# What the harness reports for each rule's trap.
PROBLEMS = {
    "DPR001": re.compile(r"^RNN submodule `[^`]+` \(\w+\) ran on replicas? [\d, ]+ before flatten_parameters\(\)"),
    # Padded to each replica's longest sequence: gathered outputs of unequal lengths, or pooled over that padding.
    "DPR002": re.compile(r"^(gathering output\S* from the replicas fails: Gather got an input of invalid size|output\S* "
                         r"under DataParallel differs from the single-device output \(same shape, other values)"),
    "DPR003": re.compile(r"^replica \d+ raised RuntimeError at \S+: 'lengths' argument should be a 1D CPU int64 tensor, "
                         r"but got 1D cuda:\d+ \w+ tensor"),
    # The state is gathered along its layer dimension (returned), or scattered along it (passed in).
    "DPR004": re.compile(r"^(output\S* under DataParallel differs from the single-device output \(an output whose batch "
                         r"dimension is not dim 0|replica \d+ raised RuntimeError at \S+: Expected hidden(\[0\])? size)"),
    # State a replica set on itself, lost with the replica.
    "DPR006": re.compile(r"^replicas? [\d, ]+ set `[^`]+` in forward: DataParallel discards the replicas"),
    # A PackedSequence split field by field (passed in), or joined so (returned).
    "DPR008": re.compile(r"^(replica \d+ raised RuntimeError at \S+: start \(\d+\) \+ length \(\d+\) exceeds dimension size|"
                         r"output\S* under DataParallel differs from the single-device output \(a PackedSequence is "
                         r"gathered field by field)"),
}


def assert_problems_are_exactly(report, codes):
    """Every problem is one of the traps in `codes`, and every trap in `codes` shows."""
    matched = {code: [p for p in report.problems if pattern.match(p)] for code, pattern in PROBLEMS.items()}
    for code in PROBLEMS:
        assert bool(matched[code]) == (code in codes), (code, report.problems)
    assert sum(len(found) for found in matched.values()) == len(report.problems), report.problems


def load(path):
    try:
        model, inputs, kwargs = load_model_and_inputs(str(path), "make_model", "make_inputs")
    except LoadProblem:
        return None
    return model.eval(), inputs, kwargs


RUNNABLE = [p for p in fixture_files() if load(p) is not None]


def pitfalls(path):
    """Which pitfalls a file has: its markers, plus the lines its noqa comments hide."""
    text = path.read_text(encoding="utf-8", errors="replace")
    codes = {code for _, code, _ in expected_findings(path)}
    codes |= set(re.findall(r"noqa: ?(DPR\d{3})", text))
    return codes


def test_enough_fixtures_run():
    assert len(RUNNABLE) >= 30


@pytest.mark.parametrize("path", RUNNABLE, ids=fixture_id)
def test_fixture_fails_the_harness_with_exactly_its_pitfalls(path):
    model, inputs, kwargs = load(path)
    report = check_data_parallel(model, *inputs, **kwargs)
    assert_problems_are_exactly(report, pitfalls(path))


@pytest.mark.parametrize("path", [p for p in RUNNABLE if pitfalls(p)], ids=fixture_id)
def test_fix_makes_the_model_pass_and_changes_no_numbers(path, tmp_path):
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    result = lint_path(str(copy), Selection(preview=True), fix=True, write=True, unsafe_fixes=True)
    assert result.problem is None
    unfixable = {code for _, code, fixable in expected_findings(path) if not fixable}
    noqa = set(re.findall(r"noqa: ?(DPR\d{3})", path.read_text(encoding="utf-8", errors="replace")))

    fixed_model, inputs, kwargs = load(copy)
    report = check_data_parallel(fixed_model, *inputs, **kwargs)
    if unfixable or noqa:
        # What the fix could not (or was told not to) touch still fails, and nothing else does.
        assert_problems_are_exactly(report, unfixable | noqa)
        return
    assert report.ok, report.problems

    # The gathered output equals the fixed model on one device, which equals the original model.
    with torch.no_grad():
        single = fixed_model(*inputs, **kwargs)
        original_model, original_inputs, original_kwargs = load(path)
        original = original_model(*original_inputs, **original_kwargs)
    assert_same(report.output, single, exact=False)
    assert_same(single, original, exact=True)


def assert_same(left, right, exact):
    if isinstance(left, torch.Tensor):
        assert left.shape == right.shape
        assert torch.equal(left, right) if exact else torch.allclose(left, right, rtol=1e-4, atol=1e-5)
    elif isinstance(left, (list, tuple)):
        assert len(left) == len(right)
        for a, b in zip(left, right):
            assert_same(a, b, exact)
    elif isinstance(left, dict):
        assert left.keys() == right.keys()
        for key in left:
            assert_same(left[key], right[key], exact)
    else:
        assert left == right


# Each shape of DPR002's fix, with a batch of six that two and three replicas both split evenly.
DPR002_FIX_SHAPES = ["faq_lstm_batch_first", "rebind_pack_statement", "nonliteral_batch_first", "hoisted_embedding_input",
                     "conditional_pack_packed_lstm", "helper_packs_its_input", "rebuilt_packed_sequence_highway",
                     "mean_pooled_over_time", "truncated_to_longest_before_packing", "packs_only_a_padded_input"]


@pytest.mark.parametrize("replicas", [2, 3])
@pytest.mark.parametrize("name", DPR002_FIX_SHAPES)
def test_each_dpr002_fix_shape_gathers_and_matches_one_device_on_two_and_three_replicas(name, replicas):
    buggy = FIXTURES / "DPR002" / f"{name}.py"
    model, inputs, kwargs = load(buggy)
    before = check_data_parallel(model, *inputs, replicas=replicas, **kwargs)
    assert before.replicas == replicas and not before.ok
    assert_problems_are_exactly(before, {"DPR002"})
    model, inputs, kwargs = load(buggy.with_name(f"{name}.fixed.py"))
    after = check_data_parallel(model, *inputs, replicas=replicas, **kwargs)
    assert after.replicas == replicas and after.ok, after.problems


def test_data_parallel_wrapping_an_rnn_itself_runs_it_unflattened_on_every_replica():
    """DPR005's trap, shown on the CPU emulation: the replicas run nn.GRU.forward, and no code of ours runs
    first to flatten them."""
    torch.manual_seed(0)
    report = check_data_parallel(torch.nn.GRU(6, 10, batch_first=True), torch.randn(4, 5, 6))
    assert any(re.match(r"RNN submodule `\(the module itself\)` \(GRU\) ran on replicas 0, 1 before flatten_parameters\(\)",
                        problem) for problem in report.problems), report.problems


def test_padding_by_hand_to_the_replicas_longest_sequence_fails_to_gather():
    """DPR007's hand-padding shape on the CPU emulation: a tensor made as long as lengths.max() in the
    wrapped forward has each replica's own length."""
    model, inputs, kwargs = load_model_and_inputs(str(FIXTURES / "DPR007" / "hand_padded_sentence_batch.py"),
                                                  "build_model", "build_inputs")
    report = check_data_parallel(model.eval(), *inputs, **kwargs)
    assert [problem for problem in report.problems if PROBLEMS["DPR002"].match(problem)] == report.problems != []


def test_pad_sequence_in_a_wrapped_forward_pads_each_replica_to_its_own_length():
    """DPR007's trap, shown on the CPU emulation: the replicas' outputs differ in length and cannot be
    gathered (the words are DPR002's, so this fixture's factories have names of their own)."""
    model, inputs, kwargs = load_model_and_inputs(str(FIXTURES / "DPR007" / "chunk_encoder_repads.py"),
                                                  "build_model", "build_inputs")
    report = check_data_parallel(model.eval(), *inputs, **kwargs)
    assert [problem for problem in report.problems if PROBLEMS["DPR002"].match(problem)] == report.problems != []


def test_attention_pooling_over_a_replica_padded_batch_gathers_but_differs_from_one_device():
    """DPR007 through a matrix product: the pooled output gathers, but each replica's softmax weighs its own
    padding, so the values differ from the single-device run (the message gives both readings)."""
    path = FIXTURES / "DPR007" / "attention_pooled_spans.py"
    model, inputs, kwargs = load_model_and_inputs(str(path), "build_model", "build_inputs")
    report = check_data_parallel(model.eval(), *inputs, **kwargs)
    assert report.problems != []
    assert all(problem.startswith("output under DataParallel differs from the single-device output (same shape, "
                                  "other values") for problem in report.problems), report.problems
    [finding] = lint_path(str(path)).findings
    assert "goes through a matrix product (torch.bmm)" in finding.message
    assert "where the product runs over time (attention pooling), it weighs other padding" in finding.message
