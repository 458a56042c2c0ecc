"""The project-wide evaluator: what an attribute of a module class can hold, through the Python semantics
real projects use (star imports, mixins, factories in other modules, getattr on torch.nn), each written
in more than one spelling; and the speech sample project, whose models need them, linted as a user would."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

from dp_rnn_lint.analysis.evaluator import Evaluator, project_rnn_attributes
from dp_rnn_lint.analysis.values import ProjectClass, RnnKind

from .conftest import FIXTURES
from .test_scope import located

SPEECH = FIXTURES / "projects" / "speech_project"
LSTM, GRU, RNN = RnnKind.LSTM, RnnKind.GRU, RnnKind.RNN


def project(tmp_path, files):
    (tmp_path / "setup.cfg").write_text("")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def facts(root, path, cls="Model"):
    return Evaluator().rnn_attributes(str(root / path), cls)


MODEL = """\
    class Model(nn.Module):
        def __init__(self, kind="lstm"):
            super().__init__()
            {build}
"""


def model_with(build, header):
    return textwrap.dedent(header) + textwrap.dedent(MODEL).format(build=build)


@pytest.mark.parametrize("common", [
    "import torch.nn as nn\n",
    "from torch import nn\n",
    "import torch\nnn = torch.nn\n",
])
@pytest.mark.parametrize("star", ["from .common import *\n", "from pkg.common import *\n"])
def test_nn_bound_by_a_star_import_is_torchs(tmp_path, common, star):
    root = project(tmp_path, {"pkg/__init__.py": "", "pkg/common.py": common,
                              "pkg/model.py": model_with("self.rnn = nn.GRU(4, 4)", star)})
    found = facts(root, "pkg/model.py")
    assert found["rnn"].kinds == {GRU} and not found["rnn"].sometimes


def test_a_star_import_brings_only_what_all_exports(tmp_path):
    root = project(tmp_path, {"pkg/__init__.py": "", "pkg/common.py": "import torch.nn as nn\n__all__ = ['helper']\n",
                              "pkg/model.py": model_with("self.rnn = nn.GRU(4, 4)",
                                                         "from torch.nn import Module\nfrom .common import *\n")})
    assert Evaluator().module_classes(str(root / "pkg/model.py")) == []


@pytest.mark.parametrize("imported", [
    "from .layers import LSTM\n",  # re-exported through the package's __init__
    "from .layers.recurrent import LSTM\n",
    "from . import layers\nLSTM = layers.LSTM\n",
])
def test_a_project_lstm_through_a_mixin_of_rnnbase_is_an_lstm(tmp_path, imported):
    root = project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/layers/__init__.py": "from .recurrent import LSTM\n",
        "pkg/layers/recurrent.py": """\
            import torch.nn as nn
            class InitMixin(nn.RNNBase):
                def reset_parameters(self):
                    pass
            class LSTM(InitMixin, nn.LSTM):
                pass
        """,
        "pkg/model.py": model_with("self.encoder = LSTM(4, 4)", "import torch.nn as nn\n" + imported),
    })
    assert facts(root, "pkg/model.py")["encoder"].kinds == {LSTM}


def test_a_project_rnn_class_whose_forward_flattens_itself_needs_nothing_from_its_users(tmp_path):
    root = project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/layers.py": """\
            import torch.nn as nn
            class CompactLSTM(nn.LSTM):
                def forward(self, x, hx=None):
                    self.flatten_parameters()
                    return super().forward(x, hx)
        """,
        "pkg/model.py": model_with("self.rnn = CompactLSTM(4, 4)", "import torch.nn as nn\nfrom .layers import CompactLSTM\n"),
    })
    assert facts(root, "pkg/model.py") == {}


@pytest.mark.parametrize("factory, kinds, sometimes", [
    ("def Recurrent(mode, n):\n    if mode == 'lstm':\n        return nn.LSTM(n, n)\n    return nn.GRU(n, n)\n",
     {LSTM, GRU}, False),
    ("def Recurrent(mode, n):\n    rnn = nn.LSTM if mode == 'lstm' else nn.RNN\n    return rnn(n, n)\n", {LSTM, RNN}, False),
    ("def Recurrent(mode, n):\n    if mode == 'lstm':\n        return nn.LSTM(n, n)\n    return Stack(n)\n", {LSTM}, True),
    ("class Recurrent:\n    @staticmethod\n    def build(mode, n):\n        return nn.GRU(n, n)\n", {GRU}, False),
])
def test_a_factory_in_another_module_gives_what_its_returns_can_be(tmp_path, factory, kinds, sometimes):
    call = "Recurrent.build(kind, 4)" if "staticmethod" in factory else "Recurrent(kind, 4)"
    root = project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/factories.py": "import torch.nn as nn\nclass Stack(nn.Module):\n    pass\n" + factory,
        "pkg/model.py": model_with(f"self.rnn = {call}", "import torch.nn as nn\nfrom pkg.factories import Recurrent\n"),
    })
    found = facts(root, "pkg/model.py")["rnn"]
    assert (found.kinds, found.sometimes) == (kinds, sometimes)


def test_a_factory_returning_a_pair_gives_each_member_its_own_value(tmp_path):
    root = project(tmp_path, {"model.py": model_with(
        "rnn, proj = self.make()\n        self.rnn, self.proj = rnn, proj\n"
        "    def make(self):\n        return nn.GRU(4, 4), nn.Linear(4, 4)", "import torch.nn as nn\n")})
    found = facts(root, "model.py")
    assert set(found) == {"rnn"} and found["rnn"].kinds == {GRU}


@pytest.mark.parametrize("build, kinds, guess, sometimes", [
    # The default names one for certain; callers may pass another string.
    ("self.rnn = getattr(nn, kind.upper())(4, 4)", {LSTM}, False, True),
    ("name = 'GRU'\n        self.rnn = getattr(nn, name)(4, 4)", {GRU}, False, False),
    ("self.rnn = getattr(nn, self.choice)(4, 4)", {LSTM, GRU, RNN}, True, True),  # a string known only at run time
])
def test_getattr_on_torch_nn_follows_the_strings_the_name_can_hold(tmp_path, build, kinds, guess, sometimes):
    root = project(tmp_path, {"model.py": model_with(build, "import torch.nn as nn\n")})
    found = facts(root, "model.py")["rnn"]
    assert (found.kinds, found.guess, found.sometimes) == (kinds, guess, sometimes)


def test_getattr_of_a_cell_name_is_no_rnn(tmp_path):
    root = project(tmp_path, {"model.py": model_with("self.cell = getattr(nn, f'{kind.upper()}Cell')(4, 4)",
                                                     "import torch.nn as nn\n")})
    assert facts(root, "model.py") == {}


@pytest.mark.parametrize("build, expected", [
    ("rnn = nn.LSTM(4, 4)\n        rnn = WeightDrop(rnn)\n        self.rnn = rnn", None),  # rebuilt: the wrapper
    ("rnn = nn.LSTM(4, 4)\n        rnn = rnn.to('cpu')\n        self.rnn = rnn", {LSTM}),  # moved: the same LSTM
    ("self.rnn = nn.LSTM(4, 4) if kind else None", {LSTM}),
    ("self.rnns = nn.ModuleList([])\n        for _ in range(2):\n            self.rnns.append(nn.GRU(4, 4))", {GRU}),
    ("self.rnns = nn.ModuleList([nn.LSTM(4, 4) for _ in range(2)])", {LSTM}),
    ("self.add_module('rnn', nn.RNN(4, 4))", {RNN}),
    ("self.cell = nn.LSTMCell(4, 4)", None),
])
def test_local_flow_containers_and_registration(tmp_path, build, expected):
    header = "import torch.nn as nn\nclass WeightDrop(nn.Module):\n    def __init__(self, module):\n        super().__init__()\n"
    root = project(tmp_path, {"model.py": model_with(build, header)})
    found = facts(root, "model.py")
    assert (set(next(iter(found.values())).kinds) if found else None) == expected


def test_an_attribute_a_base_in_another_file_sets_belongs_to_the_subclass(tmp_path):
    root = project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": """\
            import torch.nn as nn
            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = self.build()
                def build(self):
                    return nn.LSTM(4, 4)
        """,
        "pkg/model.py": """\
            import torch.nn as nn
            from .base import Encoder
            class GruEncoder(Encoder):
                def build(self):
                    return nn.GRU(4, 4)
        """,
    })
    assert facts(root, "pkg/model.py", "GruEncoder")["rnn"].kinds == {GRU}  # the override, not the base's
    assert facts(root, "pkg/base.py", "Encoder")["rnn"].kinds == {LSTM}


def test_forward_inherited_from_another_file_enters_this_files_methods(tmp_path):
    root = project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": """\
            import torch.nn as nn
            class Base(nn.Module):
                def forward(self, batch):
                    if batch.padded:
                        return self.forward_padded(batch)
                    return self.prepare(self._forward(batch))
                def prepare(self, x):
                    return self.finish(x)
                def forward_padded(self, batch):
                    return self._forward(batch)
        """,
        "pkg/model.py": """\
            from .base import Base
            class Model(Base):
                def _forward(self, batch):
                    return batch
                def finish(self, x):
                    return x
        """,
    })
    model = ProjectClass(str(root / "pkg/model.py"), "Model")
    assert Evaluator().entries_from_elsewhere(model) == ["_forward", "finish"]


def test_project_rnn_attributes_keys_classes_by_relative_path(tmp_path):
    model = model_with("self.rnn = nn.GRU(4, 4)", "import torch.nn as nn\n")
    root = project(tmp_path, {"pkg/__init__.py": "", "pkg/model.py": model})
    assert project_rnn_attributes(str(root), [str(root / "pkg/model.py")]) == {("pkg/model.py", "Model"): {"rnn": {"GRU"}}}


# -- the speech sample project: every model needs one of the mechanisms above ----------------------------------------
def run(cwd, *args):
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--isolated", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def markers(root):
    found = set()
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if "# expect: " in line:
                found |= {(path.relative_to(root).as_posix(), number, code.strip().split()[0])
                          for code in line.split("# expect: ")[1].split(",")}
    return found


def test_the_speech_project_reports_what_its_markers_say(tmp_path):
    root = tmp_path / "speech_project"
    shutil.copytree(SPEECH, root)
    result = run(root, "--format", "concise", ".")
    assert located(result.stdout) == markers(root), result.stdout
    assert len(markers(root)) == 5


def test_the_speech_projects_fixes_compact_each_rnn_and_check_first_where_it_may_be_another_module(tmp_path):
    root = tmp_path / "speech_project"
    shutil.copytree(SPEECH, root)
    run(root, "--fix", ".")
    assert located(run(root, "--format", "concise", ".").stdout) == set()
    speller = (root / "asr/models/speller.py").read_text()
    assert "        if isinstance(self.decoder_rnn, nn.RNNBase):\n            self.decoder_rnn.flatten_parameters()\n" in speller
    listener = (root / "asr/models/listener.py").read_text()
    assert "        self.rnn.flatten_parameters()\n        out, _ = self.rnn(" in listener
    assert "for rnn in self.layers:\n            rnn.flatten_parameters()" in listener
    las = (root / "asr/models/las.py").read_text()
    assert "    def _forward(self, features):\n        self.rnn.flatten_parameters()\n" in las
    for path in root.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")


def test_a_repository_whose_root_folder_is_a_package_imports_from_that_folder(tmp_path):
    # `from model.base import Base` in `model/copy.py`, where the repository's own root has an __init__.py:
    # scripts run from the root, so `model` is the root's package, not one above it.
    root = tmp_path / "repo"
    for name, text in {
        "__init__.py": "",
        "model/__init__.py": "",
        "model/base.py": "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    def __init__(self):\n"
                         "        super().__init__()\n        self.encoder = nn.LSTM(4, 4)\n",
        "model/copy.py": "from model.base import Base\n\n\nclass WithCopy(Base):\n    def forward(self, x):\n"
                         "        return self.encoder(x)\n",
        "train.py": "from model.copy import WithCopy\n",  # the script run from the root
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    from dp_rnn_lint.analysis.evaluator import Evaluator

    found = Evaluator().rnn_attributes(str(root / "model" / "copy.py"), "WithCopy")
    assert found["encoder"].kinds == {LSTM}


def test_a_package_named_like_torch_inside_a_package_does_not_shadow_torch(tmp_path):
    # `import torch` in `texar/torch/core/layers.py` (no project marker): torch's, not texar's.
    root = tmp_path / "repo"
    for name, text in {
        "texar/__init__.py": "",
        "texar/torch/__init__.py": "",
        "texar/torch/core/__init__.py": "",
        "texar/torch/core/layers.py": "import torch\n\n\nclass Encoder(torch.nn.Module):\n"
                                      "    def __init__(self):\n        super().__init__()\n"
                                      "        self.rnn = torch.nn.GRU(4, 4)\n",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    from dp_rnn_lint.analysis.evaluator import Evaluator

    found = Evaluator().rnn_attributes(str(root / "texar" / "torch" / "core" / "layers.py"), "Encoder")
    assert found["rnn"].kinds == {GRU}


@pytest.mark.parametrize("header, maybe", [
    ("import abc\n\n\nclass Model(abc.ABC, object):", False),  # plain bases: never a module
    ("import fancylib\n\n\nclass Model(fancylib.Trainable):", True),  # another package's class: may be one
    ("class Model(UndefinedBase):", True),  # a base nothing defines or imports: cannot be followed
    ("class Base:\n    pass\n\n\nclass Model(Base):", False),
])
def test_a_class_not_known_to_be_a_module_may_still_be_one_through_a_base_that_cannot_be_followed(tmp_path, header, maybe):
    root = project(tmp_path, {"model.py": header + "\n    def forward(self, x):\n        return x\n"})
    evaluator = Evaluator()
    cls = ProjectClass(str(root / "model.py"), "Model")
    assert not evaluator.is_module_class(cls)
    assert evaluator.may_be_module_class(cls) is maybe
