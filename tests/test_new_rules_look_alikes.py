"""Code that looks like DPR005-DPR008's traps and is not one (found by probing the rules with realistic
models), and literals that once crashed the analysis. A loss of padded targets with its default reduction
is one number: it leaves no padded time dimension (DPR002 and DPR007 share that walk)."""

from __future__ import annotations

import textwrap

import pytest

from dp_rnn_lint.engine import Selection, check_source

LOOK_ALIKES = {
    "scratch mask set before it is read, every call": """
        import torch
        import torch.nn as nn
        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(8, 8, batch_first=True)
            def forward(self, x, lengths):
                self.lstm.flatten_parameters()
                self.pad_mask = torch.arange(x.size(1))[None] >= lengths[:, None]
                out, _ = self.lstm(x)
                return out.masked_fill(self.pad_mask.unsqueeze(-1), 0.0)
    """,
    "a bare annotation sets nothing": """
        import torch.nn as nn
        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(8, 8)
            def forward(self, x):
                self.gru.flatten_parameters()
                self.scale: float
                return self.gru(x)[0] * self.scale
    """,
    "a counter of a base class's buffer, updated in place": """
        import torch.nn as nn
        from base import Counted
        class LM(Counted):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(8, 8)
            def forward(self, x):
                self.gru.flatten_parameters()
                self.num_batches += 1
                return self.gru(x)[0]
    """,
    "a packed output unpacked by a method of a base class": """
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        class Base(nn.Module):
            def unpack(self, out, length):
                return pad_packed_sequence(out, batch_first=True, total_length=length)[0]
        class Encoder(Base):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(8, 8, batch_first=True)
            def forward(self, x, lengths):
                self.gru.flatten_parameters()
                packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
                out, _ = self.gru(packed)
                return self.unpack(out, x.size(1))
        model = nn.DataParallel(Encoder())
    """,
    "a packed output unpacked by a submodule": """
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        class Unpack(nn.Module):
            def forward(self, out, length):
                return pad_packed_sequence(out, batch_first=True, total_length=length)[0]
        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(8, 8, batch_first=True)
                self.unpack = Unpack()
            def forward(self, x, lengths):
                self.gru.flatten_parameters()
                packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
                out, _ = self.gru(packed)
                return self.unpack(out, x.size(1))
        model = nn.DataParallel(Encoder())
    """,
    "targets padded in forward only to compute a loss, one number": """
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.nn.utils.rnn import pad_sequence
        class Scorer(nn.Module):
            def __init__(self):
                super().__init__()
                self.out = nn.Linear(8, 5)
            def forward(self, x, target_rows):
                targets = pad_sequence(target_rows, batch_first=True, padding_value=-100)
                logits = self.out(x[:, : targets.size(1)])
                return F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=-100)
        model = nn.DataParallel(Scorer())
    """,
}


@pytest.mark.parametrize("source", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_look_alikes_of_the_new_traps_are_not_flagged(source):
    assert check_source(textwrap.dedent(source), "model.py", Selection(preview=True)) == []


@pytest.mark.parametrize("padding", ["0x0", "0b0", "0o0", "0_0", "0.0"])
def test_padding_values_written_in_any_number_form_are_read(padding):
    source = textwrap.dedent(f"""\
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence, pad_packed_sequence
        class Chunker(nn.Module):
            def forward(self, rows, packed):
                out, _ = pad_packed_sequence(packed, True, {padding})
                return pad_sequence(rows, True, {padding}), out
        model = nn.DataParallel(Chunker())
    """)
    codes = sorted(finding.code for finding in check_source(source, "model.py", Selection(preview=True)))
    assert codes == ["DPR002", "DPR007", "DPR008"]


@pytest.mark.parametrize("padding, reduction", [
    ('float("-inf")', "max"), ("-math.inf", "amax"), ("float('inf')", "min"), ("torch.inf", "amin"),
])
def test_a_reduction_the_padding_value_cannot_change_is_not_pooling(padding, reduction):
    source = textwrap.dedent(f"""\
        import math
        import torch
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence
        class Pooler(nn.Module):
            def forward(self, rows):
                padded = pad_sequence(rows, batch_first=True, padding_value={padding})
                return torch.{reduction}(padded, 1)
        model = nn.DataParallel(Pooler())
    """)
    assert check_source(source, "model.py", Selection(preview=True)) == []
    opposite = {"max": "min", "amax": "amin", "min": "max", "amin": "amax"}[reduction]
    assert [f.code for f in check_source(source.replace(f"torch.{reduction}(", f"torch.{opposite}("),
                                         "model.py", Selection(preview=True))] == ["DPR007"]


def test_a_reduction_over_a_negative_dimension_says_it_may_or_may_not_be_time():
    source = textwrap.dedent("""\
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence
        class Pooler(nn.Module):
            def forward(self, rows):
                return pad_sequence(rows, batch_first=True).mean(-1)
        model = nn.DataParallel(Pooler())
    """)
    [finding] = check_source(source, "model.py", Selection(preview=True))
    assert finding.code == "DPR007"
    assert "is reduced over dimension -1 (mean), which keeps this replica's length or, if it is time" in finding.message


@pytest.mark.parametrize("full_length, flagged", [("padded.size(1)", False), ("lengths.max()", True)])
def test_pad_sequence_padded_back_out_to_an_input_length_is_not_flagged(full_length, flagged):
    # The zeros make every replica's output as long as its input: the same on each, unlike the replica's maximum.
    source = textwrap.dedent(f"""\
        import torch
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence
        class Chunker(nn.Module):
            def forward(self, padded, lengths):
                out = pad_sequence([row[:n] for row, n in zip(padded, lengths.tolist())], batch_first=True)
                missing = {full_length} - out.size(1)
                return torch.cat([out, out.new_zeros(out.size(0), missing, out.size(2))], dim=1)
        model = nn.DataParallel(Chunker())
    """)
    assert [f.code for f in check_source(source, "model.py", Selection(preview=True))] == (["DPR007"] if flagged else [])


@pytest.mark.parametrize("before, flagged", [
    ("self.measure(tokens)", False),  # the helper sets the sizes, then forward reads them: scratch of the call
    ("if tokens.dim() > 2:\n                    self.measure(tokens)", True),  # on the other path forward reads old sizes
    ("pass", True),  # forward reads what an earlier call's helper left
])
def test_state_a_helper_sets_before_forward_reads_it_is_scratch(before, flagged):
    source = textwrap.dedent(f"""\
        import torch.nn as nn


        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(4, 4)
                self.steps = self.batch = 1

            def measure(self, tokens):
                self.steps, self.batch = tokens.size(0), tokens.size(1)

            def forward(self, tokens):
                {before}
                self.lstm.flatten_parameters()
                out, _ = self.lstm(tokens)
                if self.training:
                    self.measure(tokens)
                return out.view(self.steps, self.batch, -1)
        """)
    codes = [finding.code for finding in check_source(source, "model.py", Selection(preview=True))]
    assert ("DPR006" in codes) == flagged


@pytest.mark.parametrize("helper, used, flagged", [
    ("return pad_sequence(rows, batch_first=True)", "return out, padded(rows)", True),
    ("result = pad_sequence(rows, batch_first=True)\n    return result", "return out, padded(rows)", True),
    ("return pad_sequence(rows, batch_first=True)", "return out + padded(rows).sum()", False),  # zeros add nothing
    ("return pad_sequence(rows, True, 0.0)", "return out + padded(rows).sum()", False),  # the helper's own zeros
    ("return pad_sequence(rows, True, -1.0)", "return out + padded(rows).sum()", True),  # -1 counts in the sum
    ("return torch.stack(rows)", "return out, padded(rows)", False),
])
def test_padding_by_a_helper_function_of_the_file(helper, used, flagged):
    source = textwrap.dedent("""\
        import torch
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence


        def padded(rows):
            {helper}


        class Scorer(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(4, 4, batch_first=True)

            def forward(self, x, *rows):
                self.gru.flatten_parameters()
                out, _ = self.gru(x)
                {used}


        model = nn.DataParallel(Scorer())
        """).format(helper=helper, used=used)
    codes = [finding.code for finding in check_source(source, "model.py", Selection(preview=True))]
    assert ("DPR007" in codes) == flagged
