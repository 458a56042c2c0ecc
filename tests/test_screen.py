"""The ast screen that spares most files the libcst analysis: it must never skip a file with a finding,
and it must skip the files that plainly hold none."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dp_rnn_lint.analysis.screen import may_have_findings, may_have_findings_text
from dp_rnn_lint.engine import Selection, check_source
from dp_rnn_lint.rules import ALL_RULES, NEEDS_BY_CODE, WRAP_TARGETS, needing_index_part, screen_needs

from .conftest import FIXTURES
from .helpers import unscreened_findings

CODES = [rule.code for rule in ALL_RULES]
# The rules that need a class DataParallel wraps directly are dropped before the screen for files without
# one (engine.screened_codes): the screen answers for the others. DPR006 (in preview) looks at every
# forward, so the stable rules' screen is tested here, and its own below.
NEEDS = screen_needs([code for code in CODES if code not in needing_index_part(CODES, WRAP_TARGETS)
                      and not NEEDS_BY_CODE[code].preview])
EXAMPLES = [example.source for rule in ALL_RULES for example in rule.invalid_examples] + [
    source for rule in ALL_RULES for source in rule.valid_examples
]


def screened_out(source: str, needs=NEEDS) -> bool:
    return not (may_have_findings_text(source, needs) and may_have_findings(ast.parse(source), needs))


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("DPR*/*.py")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_screen_keeps_every_fixture_finding(path: Path):
    source = path.read_bytes()
    assert [(f.line, f.col, f.code) for f in check_source(source, str(path), Selection(preview=True))] == unscreened_findings(source, str(path))


@pytest.mark.parametrize("source", EXAMPLES)
def test_the_screen_keeps_every_rule_example_finding(source):
    found = unscreened_findings(source)
    assert [(f.line, f.col, f.code) for f in check_source(source, "model.py", Selection(preview=True))] == found
    if found:  # an example holds its own wrap, so the rules that need one are screened for too
        assert not screened_out(source, screen_needs(CODES))


@pytest.mark.parametrize("snippet", [
    # No forward: DataParallel runs nothing else.
    """
    import torch.nn as nn
    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 4)
        def generate(self, x):
            return self.lstm(x)
    """,
    # An RNN class kept as a class attribute for type checks, never created.
    """
    import torch.nn as nn
    class QuantizedLSTM(nn.Module):
        _FLOAT_MODULE = nn.LSTM
        def forward(self, x):
            return x
        @classmethod
        def from_float(cls, other):
            assert isinstance(other, cls._FLOAT_MODULE)
            return cls()
    """,
    # pad_packed_sequence with total_length, and no RNN created.
    """
    from torch.nn.utils.rnn import pad_packed_sequence
    class Head(object):
        def forward(self, packed, padded):
            return pad_packed_sequence(packed, batch_first=True, total_length=padded.size(1))
    """,
    # getattr on something other than torch.nn.
    """
    import torch.nn as nn
    class Wrapper(nn.Module):
        def __init__(self, inner, name):
            super().__init__()
            self.inner = getattr(inner, name)
        def forward(self, x):
            return self.inner(x)  # an LSTM-free wrapper
    """,
    # "forward" and LSTM in prose and in other names only: no method named forward.
    """
    import torch.nn as nn
    class Tagger(nn.Module):
        \"\"\"Runs an LSTM forward over the tokens.\"\"\"
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 4)
        def forward_hook(self, x):
            return self.lstm(x)
    """,
    # A forward, getattr and an RNN named only in a docstring and a string: torch's export code looks so.
    """
    import torch.nn as nn
    class Exported(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner
        def forward(self, x):
            \"\"\"Like nn.LSTM, this keeps its state.\"\"\"
            return getattr(self.inner, "LSTM")(x)
    """,
])
def test_the_screen_skips_files_that_plainly_hold_no_finding(snippet):
    assert screened_out(textwrap.dedent(snippet))


@pytest.mark.parametrize("snippet", [
    # A constructor default, a local alias, a module-level dict, a factory, getattr on an alias of torch.nn.
    """
    import torch.nn as nn
    class Encoder(nn.Module):
        def __init__(self, cell=nn.GRU):
            super().__init__()
            self.rnn = cell(4, 4)
        def forward(self, x):
            return self.rnn(x)
    """,
    """
    import torch.nn as nn
    RECURRENT = {"lstm": nn.LSTM, "gru": nn.GRU}
    def build(kind):
        return RECURRENT[kind](4, 4)
    class Encoder(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.rnn = build(kind)
        def forward(self, x):
            return self.rnn(x)
    """,
    # A line continuation between `def` and the name.
    """
    import torch.nn as nn
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(4, 4)
        def \\
                forward(self, x):
            return self.rnn(x)
    """,
    """
    import torch.nn as tnn
    class Encoder(tnn.Module):
        def __init__(self, rnn_type):
            super().__init__()
            self.rnn = getattr(tnn, rnn_type)(4, 4)
        def forward(self, x):
            return self.rnn(x)
    """,
])
def test_the_screen_keeps_indirect_rnn_constructions(snippet):
    source = textwrap.dedent(snippet)
    assert unscreened_findings(source), "the analysis itself should flag this snippet"
    assert not screened_out(source)


OWN_LSTM_CLASS = """
import torch.nn as nn

class RNNBase(nn.Module):
    @classmethod
    def from_float(cls, mod):
        return LSTM(mod.input_size) if mod.mode == "LSTM" else GRU(mod.input_size)

    def forward(self, x):
        return x

class LSTM({lstm_base}):
    pass

class GRU(RNNBase):
    pass
"""


def test_a_files_own_class_named_lstm_is_no_rnn_unless_its_bases_are():
    # torch's quantized RNN modules define LSTM and GRU classes of their own: calling them builds no torch RNN.
    own = OWN_LSTM_CLASS.format(lstm_base="RNNBase")
    assert unscreened_findings(own) == [] and screened_out(own)
    # Subclassing torch's LSTM makes the name an RNN again; so does importing it.
    assert not screened_out(OWN_LSTM_CLASS.format(lstm_base="nn.LSTM"))
    assert not screened_out("from torch.nn import LSTM\n" + own)


def test_an_rnn_named_in_a_module_level_set_does_not_make_pack_or_pad_calls_look_unfixed():
    # torch.ao's numeric suite: a set of module classes naming nn.LSTM, and calls of functions bound to it.
    source = textwrap.dedent("""
        import torch.nn as nn
        ALLOW_LIST = {nn.Linear, nn.LSTM}
        def prepare(model, allow_list=None):
            allow_list = ALLOW_LIST if allow_list is None else allow_list
            return model
        class Shadow(nn.Module):
            def forward(self, x):
                return prepare(x)
    """)
    for code in ("DPR002", "DPR003"):
        assert not may_have_findings(ast.parse(source), screen_needs([code])), code


def test_the_screen_skips_torchs_own_rnn_module_definitions():
    torch = pytest.importorskip("torch")
    source = (Path(torch.__file__).parent / "nn" / "modules" / "rnn.py").read_text()
    assert screened_out(source)
    assert unscreened_findings(source) == []


def test_a_run_that_needs_no_analysis_never_imports_libcst(tmp_path):
    # Importing libcst costs more than screening hundreds of files: runs that need no analysis skip it.
    (tmp_path / "data.py").write_text("import torch\n\ndef load_lstm_weights(path):\n    return torch.load(path)\n")
    (tmp_path / "plain.py").write_text("x = 1\n")
    program = ("import sys\nfrom dp_rnn_lint.cli import main\nstatus = main(['--no-cache', '.'])\n"
               "assert 'libcst' not in sys.modules, 'libcst was imported'\nsys.exit(status)\n")
    result = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_rule_codes_known_without_loading_the_rules_match_the_rules():
    from dp_rnn_lint import rules

    assert rules.RULE_CODES == tuple(rule.code for rule in rules.ALL_RULES)


def test_the_text_screen_needs_a_function_named_forward():
    # Before any parse: a file that only calls forward, or names a method forward_hook, defines no forward.
    assert not may_have_findings_text("out = nn.LSTM(4, 4).forward(x)\ndef forward_hook(self, lstm_out): pass\n", NEEDS)
    assert may_have_findings_text("async def forward(self, x): return nn.LSTM\n", NEEDS)
    assert may_have_findings_text("def \\\n    forward(self, x): return nn.LSTM\n", NEEDS)
    assert may_have_findings_text(b"def\tforward(self, x): return nn.LSTM\n", NEEDS)


def test_a_file_the_text_rules_out_is_checked_for_syntax_without_building_pythons_tree(monkeypatch):
    from dp_rnn_lint import engine

    def no_tree(source):
        raise AssertionError("Python's tree was built for a file the text screen rules out")

    monkeypatch.setattr(engine, "python_verdict", no_tree)
    loader = b"import torch\n\ndef load_lstm_weights(path):\n    return torch.load(path)\n"
    assert engine.lint_source(loader, "loader.py").problem is None


def test_syntax_errors_in_files_the_text_rules_out_keep_pythons_words():
    from dp_rnn_lint import engine

    broken = engine.lint_source(b"import torch.nn as nn\nclass LSTMish(nn.Module:\n    pass\n", "broken.py")
    assert broken.problem.startswith("2:") and "cannot parse" in broken.problem
    # Only the compiler's scope rules reject this; Python's parser (and so the linter) accepts it, as before.
    assert engine.lint_source(b"# lstm\nnonlocal state\n", "scopes.py").problem is None


@pytest.mark.parametrize("body, kept", [
    ("n = lengths.amax()\n        out = x.new_zeros(x.size(0), n)", True),
    ("longest = int(max(lengths))\n        width = longest\n        out = torch.full((2, width), 0.0)", True),
    ("out = torch.zeros(x.size(0), lengths.max().item())", True),
    ("out = torch.zeros(x.size(0), x.size(1))", False),
    ("out = torch.zeros(x.size(0), 4)\n        top = lengths.max()", False),
])
def test_padding_by_hand_passes_the_screen_only_when_a_maximum_sizes_it(body, kept):
    # DPR007's hand-padding seeds: a tensor maker in forward, one of whose arguments is a maximum.
    source = f"import torch\nclass P:\n    def forward(self, x, lengths):\n        {body}\n        return out\n"
    assert screened_out(source, screen_needs(["DPR007"])) is not kept


@pytest.mark.parametrize("source, kept", [
    ("from models.factory import make_encoder\nnet = nn.DataParallel(make_encoder(32))\n", True),
    ("from .factory import make_encoder\nlayer = make_encoder(32)\nnet = nn.DataParallel(layer.cuda())\n", True),
    ("import models.factory as factory\nnet = nn.DataParallel(factory.build_rnn('gru'))\n", True),
    ("from .factory import make_encoder\nlayer = make_encoder(32).cuda()\nnet = nn.DataParallel(layer)\n", True),
    ("from .factory import make_encoder\nlayer: nn.Module = make_encoder(32)\nnet = nn.DataParallel(layer)\n", True),
    ("from .factory import _make_rnn\nnet = nn.DataParallel(_make_rnn(32))\n", True),
    # A class (capitalised), a torch function, or something not called: no factory result is wrapped.
    ("from models.net import Net\nnet = nn.DataParallel(Net())\n", False),
    ("from torch.hub import load\nnet = nn.DataParallel(load('repo', 'model'))\n", False),
    ("from models.factory import make_encoder\nnet = nn.DataParallel(model)\n", False),
])
def test_a_wrap_of_what_an_imported_function_returns_is_left_to_the_project(source, kept):
    # DPR005 across files: only the project index can say whether the factory returns a torch RNN.
    from dp_rnn_lint.analysis.screen import wraps_imported_call

    assert wraps_imported_call(ast.parse("import torch.nn as nn\n" + source), screen_needs(["DPR005"]).wrappers) is kept


def test_the_state_rule_keeps_every_forward_and_only_files_with_one():
    needs = screen_needs(["DPR006"])
    counter = "import torch.nn as nn\nclass Meter(nn.Module):\n    def forward(self, x):\n        return x\n"
    assert not screened_out(counter, needs)
    assert screened_out("import torch.nn as nn\nclass Meter(nn.Module):\n    def step(self, x):\n        return x\n", needs)


# No candidate word (no RNN, packing or DataParallel), a class with a forward on a base of another
# file, and a `getattr(nn, ...)` that the tree screen would keep: the words rule the file's own content
# out, whether or not the caller hands over Python's tree (flake8 does, the command line does not).
_INHERITS_WITHOUT_CANDIDATE_WORDS = textwrap.dedent('''\
    import torch.nn as nn

    from .observers import Observer


    class Equalizer(Observer):
        def forward(self, x):
            scale = getattr(nn, self.kind)
            return scale(x)
''')


def test_with_or_without_flake8s_tree_a_file_without_candidate_words_is_not_analysed(monkeypatch):
    from dp_rnn_lint import engine
    from dp_rnn_lint.analysis.project import FileContext

    def analysed(*args, **kwargs):
        raise AssertionError("the file went to the analysis")

    monkeypatch.setattr(engine, "run_with_deep_stack", analysed)
    source = _INHERITS_WITHOUT_CANDIDATE_WORDS
    assert check_source(source, "pkg/equalize.py", context=FileContext()) == []
    assert check_source(source, "pkg/equalize.py", tree=ast.parse(source), context=FileContext()) == []
    assert check_source(source, "pkg/equalize.py", tree=ast.parse(source), context=lambda: FileContext()) == []


def test_flake8s_file_kept_only_by_a_rule_its_context_takes_away_is_not_analysed(monkeypatch):
    """Only DPR008 (a rule for DataParallel's own targets) would look at this file; the project says no
    class of it is one, so with the codes left the screens rule it out, as a command-line run does."""
    from dp_rnn_lint import engine
    from dp_rnn_lint.analysis.project import FileContext

    source = textwrap.dedent('''\
        import torch.nn as nn
        from torch.nn.utils.rnn import PackedSequence


        class Repacker(nn.Module):
            def forward(self, batch):
                return PackedSequence(batch.data, batch.sizes)
    ''')

    def analysed(*args, **kwargs):
        raise AssertionError("the file went to the analysis")

    monkeypatch.setattr(engine, "run_with_deep_stack", analysed)
    assert check_source(source, "repack.py", tree=ast.parse(source), context=lambda: FileContext()) == []
