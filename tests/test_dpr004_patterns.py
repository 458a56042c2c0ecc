"""DPR004 on the ways a hidden state leaves or enters a wrapped forward, and what is left alone."""

from __future__ import annotations

import pytest

from dp_rnn_lint.analysis.project import build_index
from dp_rnn_lint.engine import Selection, lint_source

from .helpers import findings, messages

TEMPLATE = """\
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 8, num_layers=2, batch_first=True)

    def forward(self, x, state=None):
        self.lstm.flatten_parameters()
        {body}
{wrap}"""
WRAP = "\n\nmodel = nn.DataParallel(Tagger())\n"


def tagger(body, wrap=WRAP):
    return TEMPLATE.format(body=body.replace("\n", "\n        "), wrap=wrap)


@pytest.mark.parametrize("body, line", [
    ("out, (h_n, c_n) = self.lstm(x)\nreturn out, (h_n, c_n)", 12),
    ("out, (h_n, c_n) = self.lstm(x)\nreturn out, h_n", 12),
    ("out, (h_n, c_n) = self.lstm(x)\nreturn h_n", 12),
    ("out, hidden = self.lstm(x)\nreturn {'logits': out, 'hidden': hidden}", 12),
    ("out, hidden = self.lstm(x)\nreturn [out, hidden]", 12),
    ("return self.lstm(x)", 11),
    ("out, _ = self.lstm(x, state)\nreturn out", 11),
    ("out, _ = self.lstm(x, hx=state)\nreturn out", 11),
], ids=["tuple", "h-only", "alone", "dict", "list", "rnn-output", "state-in", "state-in-keyword"])
def test_hidden_state_crossing_the_boundary_is_flagged_once(body, line):
    source = tagger(body)
    assert findings(source, code="DPR004") == [(line, "DPR004")]
    [message] = messages(source, code="DPR004")
    wrap_line = source.splitlines().index("model = nn.DataParallel(Tagger())") + 1
    assert message.endswith(f"(wrapped at model.py:{wrap_line})")


@pytest.mark.parametrize("body", [
    "out, (h_n, c_n) = self.lstm(x)\nreturn out, h_n.transpose(0, 1)",
    "out, (h_n, c_n) = self.lstm(x)\nreturn out, h_n[-1]",
    "out, (h_n, c_n) = self.lstm(x)\nh_n = h_n.permute(1, 0, 2)\nreturn out, h_n",
    "out, (h_n, c_n) = self.lstm(x)\nreturn out",
    "out, _ = self.lstm(x, state.transpose(0, 1).contiguous())\nreturn out",
    "state = self.init_state(x)\nout, _ = self.lstm(x, state)\nreturn out",
], ids=["transposed", "last-layer", "rebound-permuted", "not-returned", "state-transposed-in", "state-rebound"])
def test_batch_first_states_and_internal_ones_are_left_alone(body):
    assert findings(tagger(body), code="DPR004") == []


def test_a_class_that_is_not_wrapped_directly_is_left_alone():
    body = "out, (h_n, c_n) = self.lstm(x)\nreturn out, (h_n, c_n)"
    assert findings(tagger(body, wrap=""), code="DPR004") == []
    # Wrapped only as a submodule of another class: its state stays inside the replica.
    outer = "\n\nclass Outer(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.tagger = Tagger()\n\n"
    outer += "    def forward(self, x):\n        return self.tagger(x)[0]\n\n\nmodel = nn.DataParallel(Outer())\n"
    assert findings(tagger(body, wrap=outer), code="DPR004") == []


def test_wrapped_scope_does_not_repeat_the_wrap_site():
    source = tagger("out, (h_n, c_n) = self.lstm(x)\nreturn out, h_n")
    context = build_index(["model.py"], sources={"model.py": source.encode()}).context_for("model.py", "wrapped")
    [finding] = lint_source(source.encode(), "model.py", Selection(select=("DPR004",)), context=context).findings
    assert finding.message.count("wrapped at") == 1
    assert not finding.fixable


def test_a_member_of_a_module_list_that_also_holds_other_modules_is_not_taken_for_an_rnn():
    # `self.layers[1]` is the Linear: what it returns is no hidden state (DPR001 still asks to compact the LSTM).
    source = (TEMPLATE.replace("self.lstm = nn.LSTM(8, 8, num_layers=2, batch_first=True)",
                               "self.layers = nn.ModuleList([nn.LSTM(8, 8, batch_first=True), nn.Linear(8, 8)])")
              .replace("        self.lstm.flatten_parameters()\n", "")
              .format(body="out, _ = self.layers[0](x)\n        return self.layers[1](out)", wrap=WRAP))
    assert [code for _, code in findings(source)] == ["DPR001"]


@pytest.mark.parametrize("build, flagged", [
    ("nn.GRU(8, 8, num_layers=2, batch_first=True)", True),
    ("nn.GRU(8, 8, 2, True, True)", True),
    ("nn.GRU(8, 8, num_layers=2)", False),
    ("nn.GRU(8, 8, num_layers=2, batch_first=False)", False),
])
def test_a_sequence_first_rnn_s_state_crosses_correctly_under_the_dim_it_needs(build, flagged):
    # A sequence-first model's inputs split along the batch only with DataParallel(dim=1), which splits and
    # gathers the layers-first hidden state along its batch dimension too: nothing crosses wrongly.
    source = f"""\
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = {build}

    def forward(self, x, hidden):
        self.gru.flatten_parameters()
        out, h_n = self.gru(x, hidden)
        return out, h_n


model = nn.DataParallel(Tagger())
"""
    assert bool(findings(source, "DPR004")) == flagged
