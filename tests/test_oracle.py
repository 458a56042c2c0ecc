"""Our model of which `self.<attr>` can hold a torch RNN, against an independent oracle built on astroid.

The fixture projects are compared as benchmarks/oracle.py compares them: agreement must stay at 98% or
more, and every disagreement must have a reason in benchmarks/oracle_reasons.json, so a new one fails here.
Units on which astroid abstains (it could not infer a value: a parameter, getattr on a computed name) are
left out of the agreement, as the report does. The small projects below pin what the oracle itself finds
(astroid's reach), not what our model finds.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from typing import Dict

import pytest

pytest.importorskip("astroid", reason="astroid is not installed (pip install -e '.[test]'): the oracle needs it")

REPO = Path(__file__).resolve().parent.parent
AGREEMENT_FLOOR = 0.98


def _load_oracle():
    spec = importlib.util.spec_from_file_location("benchmarks_oracle", REPO / "benchmarks" / "oracle.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


oracle = _load_oracle()
from tests.oracle.astroid_oracle import STUB, astroid_rnn_attributes  # noqa: E402  (after the skip)


def _ours():
    return oracle.load_ours()


@pytest.mark.parametrize("root", oracle.fixture_roots(), ids=lambda root: root.name)
def test_fixture_project_agrees_with_astroid(root):
    result = oracle.compare_tree(root.name, root, _ours())
    assert not result.problems, f"astroid could not finish: {result.problems}"
    reasons = oracle.load_reasons()
    unexplained = [d.key(root.name) for d in result.tally.disagreements
                   if d.category in oracle.HARD and d.key(root.name) not in reasons]
    assert not unexplained, ("disagreements with astroid that benchmarks/oracle_reasons.json does not explain "
                             f"(run `python benchmarks/oracle.py --fixtures` to see them): {unexplained}")
    assert result.tally.ratio >= AGREEMENT_FLOOR, f"{root.name}: agreement {result.tally.ratio:.1%}"


def _project(tmp_path: Path, files: Dict[str, str]):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    problems, unknown = [], {}
    model = astroid_rnn_attributes(str(tmp_path), ["."], problems=problems, unknown=unknown)
    assert not problems
    return model, unknown


def test_star_import_of_nn_reaches_the_gru(tmp_path):
    model, _ = _project(tmp_path, {
        "tagger/__init__.py": "",
        "tagger/layers.py": "import torch.nn as nn\n",
        "tagger/encoder.py": """
            from .layers import *


            class Encoder(nn.Module):
                def __init__(self, size):
                    super().__init__()
                    self.rnn = nn.GRU(size, size)
                    self.project = nn.Linear(size, size)
            """,
    })
    assert model == {("tagger/encoder.py", "Encoder"): {"rnn": frozenset({"GRU"})}}


def test_mixin_subclass_of_lstm_used_by_bare_name_elsewhere(tmp_path):
    model, _ = _project(tmp_path, {
        "tagger/__init__.py": "",
        "tagger/rnn.py": """
            from torch import nn


            class RNNMixin:
                def init_weights(self):
                    pass


            class LSTM(RNNMixin, nn.LSTM):
                pass
            """,
        "tagger/encoder.py": """
            import torch.nn as nn

            from .rnn import LSTM


            class Encoder(nn.Module):
                def __init__(self, size):
                    super().__init__()
                    self.rnn = LSTM(size, size)
            """,
    })
    assert model == {("tagger/encoder.py", "Encoder"): {"rnn": frozenset({"LSTM"})},
                     ("tagger/rnn.py", "LSTM"): {}}


def test_factory_in_another_module_gives_both_kinds_whatever_the_argument(tmp_path):
    """astroid binds the call's arguments but does not prune the `if` on them: even "lstm" gives both."""
    model, _ = _project(tmp_path, {
        "tagger/__init__.py": "",
        "tagger/factory.py": """
            import torch.nn as nn


            def recurrent_layer(cell, size):
                if cell == "lstm":
                    return nn.LSTM(size, size)
                return nn.GRU(size, size)
            """,
        "tagger/encoder.py": """
            import torch.nn as nn

            from tagger.factory import recurrent_layer


            class Encoder(nn.Module):
                def __init__(self, cell, size):
                    super().__init__()
                    self.rnn = recurrent_layer(cell, size)
                    self.lstm = recurrent_layer("lstm", size)
            """,
    })
    both = frozenset({"LSTM", "GRU"})
    assert model == {("tagger/encoder.py", "Encoder"): {"rnn": both, "lstm": both}}


def test_getattr_of_nn_is_followed_only_for_a_literal_name(tmp_path):
    """astroid does not evaluate str.upper(), not even on a literal: those attributes are abstentions."""
    model, unknown = _project(tmp_path, {
        "tagger/__init__.py": "",
        "tagger/encoder.py": """
            import torch.nn as nn


            class Encoder(nn.Module):
                def __init__(self, name, size):
                    super().__init__()
                    self.rnn = getattr(nn, name.upper())(size, size)
                    self.gru = getattr(nn, "gru".upper())(size, size)
                    self.lstm = getattr(nn, "LSTM")(size, size)
            """,
    })
    key = ("tagger/encoder.py", "Encoder")
    assert model == {key: {"lstm": frozenset({"LSTM"})}}
    assert unknown[key] == {"rnn", "gru"}


def test_module_lists_built_in_place_are_read_and_returned_ones_abstain(tmp_path):
    model, unknown = _project(tmp_path, {
        "stack.py": """
            import torch.nn as nn


            def gru_stack(layers, size):
                return nn.ModuleList([nn.GRU(size, size) for _ in range(layers)])


            class Stacked(nn.Module):
                def __init__(self, layers, size):
                    super().__init__()
                    self.comprehension = nn.ModuleList([nn.LSTM(size, size) for _ in range(layers)])
                    collected = []
                    for _ in range(layers):
                        collected.append(nn.GRU(size, size))
                    self.collected = nn.ModuleList(collected)
                    self.appended = nn.ModuleList()
                    self.appended.append(nn.RNN(size, size))
                    self.extended = nn.ModuleList()
                    self.extended += [nn.GRU(size, size)]
                    self.cells = nn.ModuleList([nn.LSTMCell(size, size)])
                    self.returned = gru_stack(layers, size)
            """,
    })
    key = ("stack.py", "Stacked")
    assert model == {key: {"comprehension": frozenset({"LSTM"}), "collected": frozenset({"GRU"}),
                           "appended": frozenset({"RNN"}), "extended": frozenset({"GRU"})}}
    assert unknown[key] == {"returned"}


def test_class_on_an_unresolvable_base_is_no_module_and_marked_so(tmp_path):
    model, unknown = _project(tmp_path, {
        "tagger.py": """
            import pytorch_lightning as pl
            from torch import nn


            class LightningTagger(pl.LightningModule):
                def __init__(self, size):
                    super().__init__()
                    self.encoder = nn.LSTM(size, size)


            def build(size):
                class Local(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.rnn = nn.RNN(size, size)
                return Local()
            """,
    })
    assert model == {("tagger.py", "build.Local"): {"rnn": frozenset({"RNN"})}}
    assert unknown == {("tagger.py", "LightningTagger"): {"*"}}


def test_oracle_reads_the_stub_not_an_installed_torch(tmp_path):
    """The `torch` astroid resolves is tests/oracle/torch_stub.py, whichever torch the environment has."""
    import astroid

    from tests.oracle.astroid_oracle import _astroid_session

    (tmp_path / "probe.py").write_text("from torch import nn\n\nLSTM = nn.LSTM\n", encoding="utf-8")
    with _astroid_session(astroid, [str(STUB), str(tmp_path)]):
        module = astroid.MANAGER.ast_from_file(str(tmp_path / "probe.py"), "probe", source=True)
        lstm = next(module.igetattr("LSTM"))
        assert lstm.qname() == "torch.nn.LSTM"
        assert Path(lstm.root().file).is_relative_to(STUB)


def test_comparison_counts_units_classes_abstentions_and_kinds():
    ours = {("m.py", "A"): {"rnn": frozenset({"LSTM"}), "gru": frozenset({"GRU"}), "extra": frozenset({"RNN"})},
            ("m.py", "B"): {"rnn": frozenset({"GRU"})},
            ("m.py", "OnlyOurs"): {}}
    theirs = {("m.py", "A"): {"rnn": frozenset({"LSTM", "GRU"}), "gru": frozenset({"GRU"}), "missed": frozenset({"GRU"})},
              ("m.py", "B"): {}}
    result = oracle.tally(ours, theirs, unknown={("m.py", "B"): frozenset({"rnn"})})
    assert (result.units, result.agreed, result.abstained) == (5, 2, 1)
    categories = {(d.cls, d.attr): d.category for d in result.disagreements}
    assert categories == {("A", "rnn"): oracle.KINDS, ("A", "extra"): oracle.ATTRIBUTE,
                          ("A", "missed"): oracle.ATTRIBUTE, ("B", "rnn"): oracle.ABSTAINED,
                          ("OnlyOurs", "*"): oracle.CLASS}
    ratio, _ = oracle.compare(ours, theirs, {("m.py", "B"): frozenset({"rnn"})})
    assert ratio == pytest.approx(2 / 4)
