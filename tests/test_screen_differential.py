"""The cheap screens only save time: on every fixture project, a normal run reports exactly what a run
reports where every screen lets every file through to the full analysis."""

from __future__ import annotations

import pytest

from dp_rnn_lint import cli, engine
from dp_rnn_lint.analysis import project, screen

from .conftest import FIXTURES

PROJECTS = sorted(path for path in (FIXTURES / "projects").iterdir() if path.is_dir())


def _findings(capsys, root) -> list:
    cli.main(["--isolated", "--no-cache", "-j", "1", "--format", "concise", "--exit-zero", str(root)])
    return sorted(line for line in capsys.readouterr().out.splitlines() if ": DPR" in line)


def _let_everything_through(monkeypatch) -> None:
    always = lambda *args, **kwargs: True  # noqa: E731
    monkeypatch.setattr(engine, "worth_a_look", always)
    monkeypatch.setattr(engine, "_candidate_words_found", lambda *args: engine._STRONG_WORDS)
    for module in (engine, screen):
        monkeypatch.setattr(module, "may_have_findings_text", always, raising=False)
        monkeypatch.setattr(module, "may_have_findings", always, raising=False)
        monkeypatch.setattr(module, "may_inherit_text", always, raising=False)
        monkeypatch.setattr(module, "inherits_from_elsewhere", always, raising=False)
    for name in ("mentions_wrap", "needs_summary_at_build", "_mentions_rnn", "_may_hand_rnn"):
        monkeypatch.setattr(project, name, always)
    monkeypatch.setattr(engine, "mentions_wrap", always)


@pytest.mark.parametrize("root", PROJECTS, ids=lambda path: path.name)
def test_a_screened_run_reports_what_analysing_every_file_reports(root, capsys, monkeypatch):
    screened = _findings(capsys, root)
    assert screened, "every sample project has findings"
    _let_everything_through(monkeypatch)
    forced = _findings(capsys, root)
    assert forced == screened


# A project whose classes all derive from a toolkit's base in another file that mentions an RNN: the
# index's cheap test (bases and imports reach a file naming an RNN) sends each of them to the analysis;
# the model then says which classes can run one: inherited from a base, built by an imported factory,
# or handed in by a caller elsewhere.
_INHERITING_PROJECT = {
    "pyproject.toml": "[project]\nname = 'toolkit-users'\n",
    "layers/__init__.py": "",
    "layers/base.py": (
        "import torch.nn as nn\n\n\nclass Layer(nn.Module):\n    \"\"\"A layer; Recurrent is the LSTM one.\"\"\"\n\n"
        "    def __init__(self, size):\n        super().__init__()\n        self.size = size\n\n\n"
        "class Recurrent(Layer):\n    def __init__(self, size):\n        super().__init__(size)\n"
        "        self.cell = nn.LSTM(size, size)\n"),
    "layers/factory.py": (
        "import torch.nn as nn\n\n\ndef make_encoder(size, kind='gru'):\n    if kind == 'gru':\n"
        "        return nn.GRU(size, size)\n    return nn.Linear(size, size)\n"),
    "models/__init__.py": "",
    "models/plain.py": (
        "from layers.base import Layer\n\n\nclass Head(Layer):\n    def forward(self, x):\n"
        "        return x * self.size\n"),
    "models/also_plain.py": (
        "from layers import base\n\n\nclass Scale(base.Layer):\n    def __init__(self):\n        super().__init__(2)\n"
        "        self.factor = 0.5\n\n    def forward(self, x):\n        return x * self.factor\n"),
    "models/recurrent.py": (
        "from layers.base import Recurrent\n\n\nclass Tagger(Recurrent):\n    def forward(self, x):\n"
        "        out, _ = self.cell(x)\n        return out\n"),
    "models/factory_made.py": (
        "from layers.base import Layer\nfrom layers.factory import make_encoder\n\n\nclass Encoder(Layer):\n"
        "    def __init__(self):\n        super().__init__(4)\n        self.encoder = make_encoder(4)\n\n"
        "    def forward(self, x):\n        return self.encoder(x)[0]\n"),
    "models/handed.py": (
        "from layers.base import Layer\n\n\nclass Wrapper(Layer):\n    def __init__(self, inner):\n"
        "        super().__init__(1)\n        self.inner = inner\n\n    def forward(self, x):\n"
        "        return self.inner(x)[0]\n"),
    "train.py": "import torch.nn as nn\n\nfrom models.handed import Wrapper\n\nmodel = Wrapper(nn.LSTM(3, 3))\n",
}


def _write(root, files) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_model_screen_keeps_what_analysing_every_file_finds(tmp_path, capsys, monkeypatch):
    _write(tmp_path, _INHERITING_PROJECT)
    screened = _findings(capsys, tmp_path)
    assert [line.split(":")[0].rsplit("/", 1)[-1] for line in screened] == \
        ["factory_made.py", "handed.py", "recurrent.py"]
    _let_everything_through(monkeypatch)
    assert _findings(capsys, tmp_path) == screened


def test_libcst_parses_only_the_files_whose_classes_the_model_says_can_run_an_rnn(tmp_path):
    import os
    import re
    import subprocess
    import sys

    _write(tmp_path, _INHERITING_PROJECT)
    done = subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--isolated", "--no-cache", "-j", "1", "--stats", "."],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={key: value for key, value in os.environ.items() if key != "DP_RNN_LINT_STATS"})
    parsed = re.search(r"^libcst parse\s+(\d+)", done.stderr, re.M)
    # The two classes on the toolkit's base that hold no RNN are decided on Python's tree.
    assert parsed and parsed.group(1) == "3", done.stderr
