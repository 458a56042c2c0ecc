"""DPR003 on the ways lengths reach pack_padded_sequence: what is followed, what counts as on the CPU."""

from __future__ import annotations

import textwrap

import pytest

from dp_rnn_lint.analysis.project import build_index
from dp_rnn_lint.engine import Selection, lint_source

from .helpers import findings, fixed

TEMPLATE = """\
import torch
import torch.nn as nn
from typing import List
from torch.nn.utils.rnn import pack_padded_sequence


class Encoder(nn.Module):
    def forward(self, x, {params}):
        {body}
        packed = pack_padded_sequence(x, {lengths}, batch_first=True, enforce_sorted=False)
        return self.rnn(packed)[0]
"""


def encoder(lengths="lengths", body="pass", params="lengths"):
    return TEMPLATE.format(lengths=lengths, body=body, params=params)


@pytest.mark.parametrize("lengths, body, params", [
    ("lengths", "pass", "lengths"),
    ("lengths=lengths", "pass", "lengths"),
    ("lengths.long()", "pass", "lengths"),
    ("lengths.to(torch.int64)", "pass", "lengths"),
    ("lengths.to(x.device)", "pass", "lengths"),
    ("mask.sum(-1)", "pass", "mask"),
    ("lens", "lens = mask.long().sum(1)", "mask"),
    ("lengths[order]", "order = torch.argsort(lengths)", "lengths"),
    ("sorted_lengths", "sorted_lengths, order = lengths.sort(descending=True)", "lengths"),
], ids=["parameter", "keyword", "long", "to-dtype", "to-device", "mask-sum", "assigned", "subscript", "sorted"])
def test_lengths_from_a_forward_parameter_on_the_gpu_are_flagged(lengths, body, params):
    source = encoder(lengths, body, params)
    assert findings(source, code="DPR003") == [(10, "DPR003")]
    shown = lengths.split("=")[-1]
    assert f"{shown}.cpu()" in fixed(source, code="DPR003")


@pytest.mark.parametrize("lengths, body, params", [
    ("lengths.cpu()", "pass", "lengths"),
    ("lengths.to('cpu')", "pass", "lengths"),
    ("lengths.to(device='cpu')", "pass", "lengths"),
    ("lengths.to(torch.device('cpu'))", "pass", "lengths"),
    ("lengths.tolist()", "pass", "lengths"),
    ("lengths.cpu().long()", "pass", "lengths"),
    ("lengths", "lengths = lengths.cpu()", "lengths"),
    ("lengths", "lengths = torch.tensor([3, 2])", "unused"),
    ("self.lengths", "pass", "lengths"),
    ("batch.lengths", "pass", "batch"),
    ("count_lengths(x)", "pass", "lengths"),
    ("[x.size(1)] * x.size(0)", "pass", "lengths"),
    ("full", "full = x.size(1)", "lengths"),
], ids=["cpu", "to-cpu-string", "to-cpu-keyword", "to-cpu-device", "tolist", "cpu-then-long", "rebound-on-cpu",
        "not-a-parameter", "self-attribute", "object-attribute", "free-function", "list-of-sizes", "size"])
def test_lengths_on_the_cpu_or_not_from_a_parameter_are_left_alone(lengths, body, params):
    assert findings(encoder(lengths, body, params), code="DPR003") == []


def test_lengths_through_helper_method_arguments():
    source = textwrap.dedent("""\
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence

        class Encoder(nn.Module):
            def forward(self, x, mask, on_cpu):
                a = self._run(x, lengths=mask.sum(1))
                b = self._other(x, on_cpu.cpu())
                return a + b

            def _run(self, x, lengths):
                return self.rnn(pack_padded_sequence(x, lengths, batch_first=True))[0]

            def _other(self, x, lengths):
                return self.rnn(pack_padded_sequence(x, lengths, batch_first=True))[0]
    """)
    assert findings(source, code="DPR003") == [(11, "DPR003")]


def test_calls_off_the_forward_path_are_left_alone():
    source = textwrap.dedent("""\
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence

        class Encoder(nn.Module):
            def forward(self, x, lengths):
                return self.rnn(x)[0]

            def greedy_decode(self, x, lengths):
                return self.rnn(pack_padded_sequence(x, lengths, batch_first=True))[0]
    """)
    assert findings(source, code="DPR003") == []


@pytest.mark.parametrize("helper", [
    "pack = lambda: pack_padded_sequence(x, lengths, batch_first=True)",
    "def pack():\n            return pack_padded_sequence(x, lengths, batch_first=True)",
], ids=["lambda", "nested-def"])
def test_a_nested_function_packing_with_forwards_own_lengths_is_flagged(helper):
    source = textwrap.dedent("""\
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence

        class Tagger(nn.Module):
            def forward(self, x, lengths):
                HELPER
                return self.rnn(pack())[0]
    """).replace("HELPER", helper)
    assert [line for line, _ in findings(source, code="DPR003")] == [7 if helper.startswith("def") else 6]


@pytest.mark.parametrize("helper", [
    "def pack(seq, lengths):\n            return pack_padded_sequence(seq, lengths, batch_first=True)",
    "def pack(seq):\n            lengths = seq.new_full((seq.size(0),), seq.size(1)).cpu()\n"
    "            return pack_padded_sequence(seq, lengths, batch_first=True)",
], ids=["own-parameter", "own-local"])
def test_a_nested_function_with_lengths_of_its_own_is_left_alone(helper):
    source = textwrap.dedent("""\
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence

        class Tagger(nn.Module):
            def forward(self, x, lengths):
                HELPER
                return self.rnn(pack(x))[0]
    """).replace("HELPER", helper)
    assert findings(source, code="DPR003") == []


def test_a_nested_function_is_left_alone_when_forward_rebinds_the_lengths():
    source = textwrap.dedent("""\
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence

        class Tagger(nn.Module):
            def forward(self, x, lengths):
                def pack(seq):
                    return pack_padded_sequence(seq, lengths, batch_first=True)
                lengths = lengths.cpu()
                return self.rnn(pack(x))[0]
    """)
    assert findings(source, code="DPR003") == []


@pytest.mark.parametrize("params, safe", [
    ("lengths: torch.Tensor", True),
    ("lengths: torch.LongTensor", True),
    ("lengths", False),
], ids=["annotated", "annotated-long", "unknown"])
def test_fix_is_safe_only_when_the_parameter_is_known_to_be_a_tensor(params, safe):
    result = lint_source(encoder(params=params).encode(), "model.py", Selection(select=("DPR003",), preview=True))
    [finding] = result.findings
    assert finding.fix.safe is safe


def test_a_parameter_used_as_a_tensor_makes_the_fix_safe():
    source = encoder(body="longest = lengths.max()")
    [finding] = lint_source(source.encode(), "model.py", Selection(select=("DPR003",), preview=True)).findings
    assert finding.fix.safe


def test_an_expression_is_parenthesised_before_cpu():
    source = encoder(lengths="lengths - 1", params="lengths")
    assert "pack_padded_sequence(x, (lengths - 1).cpu()," in fixed(source, code="DPR003")
    source = encoder(lengths="(lengths)", params="lengths")
    assert "pack_padded_sequence(x, (lengths).cpu()," in fixed(source, code="DPR003")


# Lengths computed from a tensor parameter by comparison, reduction, arithmetic or a torch function stay on
# that tensor's device. The last item is the lengths argument as the fix writes it.
@pytest.mark.parametrize("lengths, body, params, fixed_lengths", [
    ("lengths", "lengths = (tokens != 0).sum(1)", "tokens", "lengths.cpu()"),
    ("lengths", "lengths = (tokens != self.pad_index).sum(-1)", "tokens", "lengths.cpu()"),
    ("(tokens != pad_index).sum(1)", "pass", "tokens, pad_index=0", "(tokens != pad_index).sum(1).cpu()"),
    ("mask.sum(dim=1)", "pass", "mask", "mask.sum(dim=1).cpu()"),
    ("(x != 0).long().sum(1)", "pass", "lengths", "(x != 0).long().sum(1).cpu()"),
    ("torch.sum(tokens != 0, dim=1)", "pass", "tokens", "torch.sum(tokens != 0, dim=1).cpu()"),
    ("lengths - 1", "pass", "lengths", "(lengths - 1).cpu()"),
    ("(lengths + 1) // 2", "pass", "lengths", "((lengths + 1) // 2).cpu()"),
    ("lengths * 2", "pass", "lengths", "(lengths * 2).cpu()"),
    ("2 * lengths", "pass", "lengths", "(2 * lengths).cpu()"),
    ("lengths // self.stride", "pass", "lengths", "(lengths // self.stride).cpu()"),
    ("half", "half = lengths // 2", "lengths", "half.cpu()"),
    ("lengths", "lengths = mask.sum(1) - 2", "mask", "lengths.cpu()"),
    ("lengths", "lengths = lengths - 1", "lengths", "lengths.cpu()"),
    ("mask.sum(1) - mask[:, 0]", "pass", "mask", "(mask.sum(1) - mask[:, 0]).cpu()"),
    ("torch.div(lengths, 2, rounding_mode='floor')", "pass", "lengths",
     "torch.div(lengths, 2, rounding_mode='floor').cpu()"),
    ("torch.floor_divide(lengths, 2)", "pass", "lengths", "torch.floor_divide(lengths, 2).cpu()"),
    ("torch.clamp(lengths, min=1)", "pass", "lengths", "torch.clamp(lengths, min=1).cpu()"),
    ("torch.clamp(input=lengths - 2, min=1)", "pass", "lengths", "torch.clamp(input=lengths - 2, min=1).cpu()"),
    ("sorted_lengths", "sorted_lengths, order = torch.sort(lengths, descending=True)", "lengths",
     "sorted_lengths.cpu()"),
    ("(lengths - 1).int()", "pass", "lengths", "(lengths - 1).int().cpu()"),
    ("(lengths // 2).long()", "pass", "lengths", "(lengths // 2).long().cpu()"),
    ("(lengths - 1).to(torch.int64)", "pass", "lengths", "(lengths - 1).to(torch.int64).cpu()"),
    ("(lengths - 1).to(device)", "pass", "lengths, device", "(lengths - 1).to(device).cpu()"),
    ("(lengths * 2).view(-1)", "pass", "lengths", "(lengths * 2).view(-1).cpu()"),
    ("(lengths + 1).squeeze()", "pass", "lengths", "(lengths + 1).squeeze().cpu()"),
    ("lengths.type(torch.cuda.LongTensor)", "pass", "lengths", "lengths.type(torch.cuda.LongTensor).cpu()"),
], ids=["compare-sum", "compare-attribute-sum", "compare-number-parameter", "sum-dim", "compare-long-sum",
        "torch-sum", "minus", "plus-floordiv", "times", "times-reversed", "floordiv-attribute", "local",
        "local-of-sum", "rebound", "same-parameter-twice", "torch-div", "torch-floor-divide", "torch-clamp",
        "torch-clamp-input-keyword", "torch-sort", "int", "long", "to-dtype", "to-device", "view", "squeeze",
        "type-cuda"])
def test_lengths_derived_from_a_tensor_parameter_are_flagged(lengths, body, params, fixed_lengths):
    source = encoder(lengths, body, params)
    assert findings(source, code="DPR003") == [(10, "DPR003")]
    assert f"pack_padded_sequence(x, {fixed_lengths}, batch_first=True" in fixed(source, code="DPR003")


@pytest.mark.parametrize("lengths, body, params", [
    ("lengths.cpu() - 1", "pass", "lengths"),
    ("(lengths.cpu() + 1) // 2", "pass", "lengths"),
    ("half.cpu()", "half = lengths // 2", "lengths"),
    ("(lengths - 1).cpu()", "pass", "lengths"),
    ("(lengths - 1).tolist()", "pass", "lengths"),
    ("(lengths // 2).to('cpu')", "pass", "lengths"),
    ("(tokens != 0).sum(1).numpy()", "pass", "tokens"),
    ("lengths", "lengths = (tokens != 0).sum(1).cpu()", "tokens"),
    ("lengths", "lengths = lengths.cpu() - 1", "lengths"),
    ("torch.div(lengths.cpu(), 2, rounding_mode='floor')", "pass", "lengths"),
    ("torch.clamp(lengths.cpu() - 2, min=1)", "pass", "lengths"),
    ("torch.tensor(counts) - 1", "counts = [x.size(1)] * x.size(0)", "lengths"),
    ("torch.tensor([len(s) for s in sentences]) // 2", "pass", "sentences"),
    ("[n - 1 for n in lengths.tolist()]", "pass", "lengths"),
    ("[x.size(1) - 1] * x.size(0)", "pass", "lengths"),
    ("x.size(1) - 1", "pass", "lengths"),
    ("lengths - offset", "pass", "lengths, offset"),
    ("lengths.type(torch.LongTensor) - 1", "pass", "lengths"),
    ("div(lengths, 2)", "from operator import floordiv as div", "lengths"),
    ("torch.max(lengths, 1)", "pass", "lengths"),
], ids=["cpu-minus", "cpu-plus-floordiv", "local-moved", "moved-after", "tolist", "to-cpu", "numpy",
        "sum-moved", "rebound-on-cpu", "torch-div-of-cpu", "torch-clamp-of-cpu", "tensor-from-list", "tensor-from-lens",
        "list-comprehension", "list-of-sizes", "size-arithmetic", "two-parameters", "type-cpu",
        "not-a-torch-function", "torch-function-not-known-to-keep-the-device"])
def test_derived_lengths_on_the_cpu_are_left_alone(lengths, body, params):
    assert findings(encoder(lengths, body, params), code="DPR003") == []


@pytest.mark.parametrize("imports, call", [
    ("import torch as th", "th.div(lengths, 2, rounding_mode='floor')"),
    ("from torch import clamp", "clamp(lengths, min=1)"),
], ids=["module-alias", "imported-function"])
def test_torch_functions_are_recognised_under_any_import_spelling(imports, call):
    source = textwrap.dedent(f"""\
        import torch.nn as nn
        {imports}
        from torch.nn.utils.rnn import pack_padded_sequence

        class Encoder(nn.Module):
            def forward(self, x, lengths):
                return self.rnn(pack_padded_sequence(x, {call}, batch_first=True))[0]
    """)
    assert findings(source, code="DPR003") == [(7, "DPR003")]
    assert f"pack_padded_sequence(x, {call}.cpu(), batch_first=True)" in fixed(source, code="DPR003")


def test_a_shadowed_torch_is_not_taken_for_torch():
    source = encoder("torch.div(lengths, 2)", "torch = make_backend()", "lengths")
    assert findings(source, code="DPR003") == []


@pytest.mark.parametrize("lengths, body, params, safe", [
    ("lengths - 1", "pass", "lengths", False),  # arithmetic alone: lengths may be a numpy array
    ("mask.sum(1) - 1", "pass", "mask", True),
    ("torch.div(lengths, 2)", "pass", "lengths", True),  # torch.div takes tensors only
    ("(tokens != 0).sum(1)", "pass", "tokens", True),
], ids=["arithmetic", "tensor-method", "torch-function", "comparison-sum"])
def test_derived_lengths_fix_is_safe_when_a_tensor_operation_shows_the_parameter_is_one(lengths, body, params, safe):
    result = lint_source(encoder(lengths, body, params).encode(), "model.py", Selection(select=("DPR003",), preview=True))
    [finding] = result.findings
    assert finding.fix.safe is safe


def test_derived_lengths_through_a_helper_method_are_flagged():
    source = textwrap.dedent("""\
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence

        class Encoder(nn.Module):
            def forward(self, frames, frame_lengths):
                return self._encode(frames, (frame_lengths + 1) // 2)

            def _encode(self, frames, lengths):
                return self.rnn(pack_padded_sequence(frames, lengths - 1, batch_first=True))[0]
    """)
    assert findings(source, code="DPR003") == [(9, "DPR003")]
    assert "pack_padded_sequence(frames, (lengths - 1).cpu(), batch_first=True)" in fixed(source, code="DPR003")


LIST_SOURCE = encoder(params="lengths: List[int]") + "\n\nmodel = nn.DataParallel(Encoder())\n"


def test_list_lengths_are_flagged_unfixable_only_in_wrapped_scope():
    assert findings(LIST_SOURCE, code="DPR003") == []
    context = build_index(["model.py"], sources={"model.py": LIST_SOURCE.encode()}).context_for("model.py", "wrapped")
    result = lint_source(LIST_SOURCE.encode(), "model.py", Selection(select=("DPR003",), preview=True), context=context)
    [finding] = result.findings
    assert not finding.fixable
    assert "a list parameter of forward" in finding.message
    assert finding.message.endswith("(wrapped at model.py:14)")


@pytest.mark.parametrize("passed, flagged", [
    ("list(q_len.data)", False),
    ("q_len.tolist()", False),
    ("[int(n) for n in q_len]", False),
    ("q_len", True),  # one caller hands the tensor on: its replica's slice stays on the GPU
])
def test_lengths_every_holder_passes_as_a_list_are_on_the_cpu(passed, flagged):
    source = f"""\
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence


class TextProcessor(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 4, batch_first=True)

    def forward(self, q, q_len):
        self.lstm.flatten_parameters()
        packed = pack_padded_sequence(q, q_len, batch_first=True)
        return self.lstm(packed)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.text = TextProcessor()

    def forward(self, v, q, q_len):
        return self.text(q, list(q_len.data)), self.text(v, {passed})
"""
    assert findings(source, "DPR003") == ([(12, "DPR003")] if flagged else [])


@pytest.mark.parametrize("body, lengths, params, flagged", [
    # `if input_lengths:` raises for a tensor of several elements: the code means a list.
    ("if not input_lengths:\n            input_lengths = [x.size(1)] * x.size(0)", "input_lengths", "input_lengths=None",
     False),
    ("pass", "input_lengths", "input_lengths", True),
    # A member of a tuple parameter, `(tokens, lengths)`: what it holds is not told by the code.
    ("tokens = batch[0]", "batch[1]", "batch", False),
    ("order = lengths.argsort(descending=True)", "lengths[order]", "lengths", True),  # still the tensor, reordered
])
def test_what_the_code_says_of_a_lengths_parameter(body, lengths, params, flagged):
    result = lint_source(encoder(lengths=lengths, body=body, params=params).encode(), "model.py",
                         Selection(select=("DPR003",), preview=True))
    assert bool(result.findings) == flagged


@pytest.mark.parametrize("params, body, default", [
    ("lengths", "pass", False),  # nothing types it: reported with --preview only
    ("lengths: torch.Tensor", "pass", True),
    ("lengths", "steps = lengths.max()", True),  # used as a tensor
])
def test_lengths_nothing_types_are_reported_in_preview_only(params, body, default):
    source = encoder(params=params, body=body).encode()
    found = lint_source(source, "model.py", Selection(select=("DPR003",))).findings
    assert bool(found) == default
    assert lint_source(source, "model.py", Selection(select=("DPR003",), preview=True)).findings


# -- a module only run by the modules holding it: its lengths are what they pass -------------------------------
ENCODER = """\
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence


class CharEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4, batch_first=True)

    def forward(self, chars, char_lengths):
        order = char_lengths.argsort(descending=True)
        packed = pack_padded_sequence(chars[order], char_lengths[order], batch_first=True)
        return self.rnn(packed)[1][0]
"""

HOLDER = """\
import torch.nn as nn
from {module} import CharEncoder


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.chars = CharEncoder()

    def forward(self, chars, char_lengths):
        {call}
"""


@pytest.mark.parametrize("call, flagged", [
    ("return self.chars(chars, char_lengths.cpu())", False),
    ("lengths = char_lengths.to('cpu')\n        return self.chars(chars, lengths)", False),
    ("return self.chars.forward(chars, char_lengths=char_lengths.tolist())", False),
    ("return self.chars(chars, char_lengths)", True),  # the holder's own tensor, scattered onto its GPU
    ("return self.chars(chars, char_lengths.long())", True),
])
def test_lengths_a_holder_in_another_file_passes_on_the_cpu_are_not_flagged(tmp_path, call, flagged):
    from dp_rnn_lint.cli import main

    (tmp_path / "setup.cfg").write_text("")
    (tmp_path / "encoders.py").write_text(ENCODER)
    (tmp_path / "tagger.py").write_text(HOLDER.format(module="encoders", call=call))
    assert main(["--no-cache", "--select", "DPR003", "--quiet", str(tmp_path)]) == int(flagged)


def test_a_module_also_run_by_a_wrap_is_flagged_whatever_its_holders_pass(tmp_path):
    from dp_rnn_lint.cli import main

    (tmp_path / "setup.cfg").write_text("")
    (tmp_path / "encoders.py").write_text(ENCODER)
    (tmp_path / "tagger.py").write_text(HOLDER.format(module="encoders", call="return self.chars(chars, char_lengths.cpu())"))
    (tmp_path / "train.py").write_text("import torch.nn as nn\nfrom encoders import CharEncoder\n\n"
                                       "model = nn.DataParallel(CharEncoder())\n")
    assert main(["--no-cache", "--select", "DPR003", "--quiet", str(tmp_path)]) == 1
