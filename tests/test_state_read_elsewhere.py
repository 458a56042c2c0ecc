"""What the project index knows across files, in the tracker sample project: DPR006 in a class DataParallel
wraps (or runs as a submodule) flags state set in forward that another file reads (and not state only the
call uses), and DPR005
flags a wrap of what a factory function of another file returns when that is always a torch RNN."""

from __future__ import annotations

import shutil

import pytest

from .conftest import FIXTURES
from .test_project_recall import expected, flake8, run  # DPR006 runs with --preview
from .test_scope import located

SAMPLE = FIXTURES / "projects" / "tracker_project"
FINDINGS = {("tracker/model.py", 19, "DPR006"), ("tracker/encoder.py", 15, "DPR006"), ("extract.py", 9, "DPR005")}


@pytest.fixture
def project(tmp_path):
    target = tmp_path / "tracker_project"
    shutil.copytree(SAMPLE, target)
    return target


def test_the_markers_are_what_the_cli_and_flake8_report_whichever_paths_are_named(project):
    assert expected(project, "any") == FINDINGS
    whole = run(project, "--preview", "--no-cache")
    assert located(whole.stdout) == FINDINGS, whole.stdout
    one_file = run(project / "tracker", "--preview", "--no-cache", "model.py")
    assert located(one_file.stdout) == {("model.py", 19, "DPR006")}, one_file.stdout
    script = run(project, "--preview", "extract.py")  # as pre-commit runs it: one changed file, the cache warm or not
    assert located(script.stdout) == {("extract.py", 9, "DPR005")}, script.stdout
    assert "`layer` is what tracker/factory.py:recurrent_layer() returns, an nn.LSTM or nn.GRU" in script.stdout
    for path in ("tracker/model.py", "tracker/encoder.py", "extract.py"):
        plugin = flake8(project, "--dp-rnn-preview", path)
        assert located(plugin.stdout) == {item for item in FINDINGS if item[0] == path}, plugin.stdout


def test_the_state_finding_goes_when_the_other_file_stops_reading_the_state(project):
    assert located(run(project, "--preview").stdout) == FINDINGS
    train = project / "train.py"
    train.write_text(train.read_text().replace("tracker.module.last_loss", "0.0"))
    # The cached result of model.py, which did not change, must not survive the change elsewhere.
    result = run(project, "--preview")
    assert located(result.stdout) == FINDINGS - {("tracker/model.py", 19, "DPR006")}, result.stdout


def test_the_wrap_finding_goes_when_the_factory_stops_returning_a_torch_rnn(project):
    assert located(run(project, "--preview", "extract.py").stdout) == {("extract.py", 9, "DPR005")}
    factory = project / "tracker" / "factory.py"
    factory.write_text(factory.read_text().replace("    return nn.GRU(size, size, batch_first=True)",
                                                   "    return SlotTracker(size)"))
    result = run(project, "--preview", "extract.py")  # extract.py did not change: its cached verdict must not stand
    assert located(result.stdout) == set(), result.stdout


def test_a_setting_of_the_same_name_elsewhere_is_not_a_read_of_the_state(project):
    # model.py's forward keeps `self.batch_size` for the call; train.py reads `config.batch_size`, a setting.
    scratch = ("tracker/model.py", 20, "DPR006")
    assert "self.batch_size = " in (project / "tracker" / "model.py").read_text().splitlines()[19]
    assert located(run(project, "--preview").stdout) == FINDINGS
    train = project / "train.py"
    train.write_text(train.read_text().replace("config.batch_size", "tracker.module.batch_size"))
    result = run(project, "--preview")
    assert located(result.stdout) == FINDINGS | {scratch}, result.stdout


# A decoder (in its own file) steps an attention module that a factory of the attention's file builds; the
# attention carries state between the steps of one decoder call. Where the decoder's forward pass sets that
# state afresh through a method of the attention, nothing a call leaves there reaches a later call.
ATTENTION = '''\
import torch
import torch.nn as nn

from .masking import masked_softmax  # a file importing the project's own code: the index looks for its holders

class StepAttention(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.score = nn.Linear(size, 1)
        self.cumulative = None

    def init_states(self, keys):
        self._zero(keys)

    def _zero(self, keys):
        self.cumulative = torch.zeros(keys.size(0), keys.size(1))

    def forward(self, query, keys):
        weights = masked_softmax(self.score(keys + query.unsqueeze(1)).squeeze(-1) + self.cumulative)
        self.cumulative = self.cumulative + weights
        return (weights.unsqueeze(-1) * keys).sum(1)


def make_attention(size):
    return StepAttention(size)
'''

DECODER = '''\
import torch.nn as nn

from .attention import make_attention


class Decoder(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.attention = make_attention(size)
        self.cell = nn.GRUCell(size, size)

    def forward(self, keys, steps):
        {start}
        query = keys.mean(1)
        for _ in range(steps):
            query = self.cell(self.attention(query, keys), query)
        return query

    def _start(self, keys):
        self.attention.init_states(keys)

    def new_epoch(self, keys):
        self.attention.init_states(keys)
'''


@pytest.mark.parametrize("start, flagged", [
    ("self.attention.init_states(keys)", False),  # every decoder call starts the attention afresh
    ("self._start(keys)", False),  # through a method of the decoder's forward pass
    ("pass", True),  # only new_epoch(), outside the forward pass, resets it: state carried across calls
])
def test_state_a_holder_sets_afresh_in_each_of_its_calls_is_not_carried_across_calls(tmp_path, start, flagged):
    package = tmp_path / "decoding"
    package.mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'decoding'\n")
    (package / "__init__.py").write_text("")
    (package / "attention.py").write_text(ATTENTION)
    (package / "masking.py").write_text("import torch\n\n\ndef masked_softmax(scores):\n    return torch.softmax(scores, dim=1)\n")
    (package / "decoder.py").write_text(DECODER.format(start=start))
    line = ATTENTION.splitlines().index("        self.cumulative = self.cumulative + weights") + 1
    found = located(run(tmp_path, "--preview", "--no-cache", "--select", "DPR006", ".").stdout)
    assert found == ({("decoding/attention.py", line, "DPR006")} if flagged else set())
