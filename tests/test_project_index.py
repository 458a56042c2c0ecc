"""The project index: which classes DataParallel wraps across files, how wraps are resolved, its cache."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dp_rnn_lint.flake8_plugin import context_in_project
from dp_rnn_lint.analysis.project import (IndexBuilder, _path_key, build_index, imports_in_text,
                                          needs_summary_at_build)

from .conftest import FIXTURES

SAMPLE = FIXTURES / "projects" / "seq2seq_project"


def python_files(folder: Path, skip: str = "") -> list:
    return sorted(str(p) for p in folder.rglob("*.py") if not (skip and skip in p.parts))


def names(keys) -> set:
    return {name for _, name in keys}


def write_project(root: Path, files: dict) -> list:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return python_files(root)


MODEL = """
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(8, 8)

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Encoder()

        @classmethod
        def from_config(cls, config):
            return cls(**config)
"""


def test_sample_project_wraps_through_a_package_reexport_and_a_factory():
    index = build_index(python_files(SAMPLE))
    assert names(index.wrapped) == {"Seq2Seq", "Encoder", "Decoder", "Tagger", "Reranker"}
    assert names(index.direct) == {"Seq2Seq", "Tagger", "Reranker"}
    sites = {name: [str(site) for site in found] for (_, name), found in index.direct.items()}
    assert sites["Seq2Seq"][0].endswith("train.py:9")
    assert sites["Tagger"][0].endswith("train.py:11")
    [unresolved] = index.unresolved
    assert str(unresolved.site).endswith("scripts/evaluate.py:9")
    assert "torch.load" in unresolved.reason


def test_without_the_unresolved_script_every_wrap_resolves():
    index = build_index(python_files(SAMPLE, skip="scripts"))
    assert index.unresolved == []
    assert "CharLanguageModel" not in names(index.wrapped)


@pytest.mark.parametrize("train", [
    # nn.DataParallel(X(...)), then .cuda() on the wrapper
    "import torch.nn as nn\nfrom model import Tagger\nnet = nn.DataParallel(Tagger()).cuda()\n",
    # a name bound to X(...).to(device), with device_ids
    "import torch\nfrom model import Tagger\nmodel = Tagger().to('cuda')\nnet = torch.nn.DataParallel(model, device_ids=[0, 1])\n",
    # rebinding the same name
    "from torch.nn import DataParallel\nimport model as m\nnet = m.Tagger()\nnet = net.cuda()\nnet = DataParallel(net)\n",
    # an alias of the class
    "import torch.nn as nn\nfrom model import Tagger\nDP = nn.DataParallel\n\ndef main():\n    return DP(Tagger())\n",
    # the functional form
    "import torch\nfrom model import Tagger\n\ndef run(x):\n    module = Tagger()\n    return torch.nn.parallel.data_parallel(module, (x,), device_ids=[0, 1])\n",
    "from torch.nn.parallel import data_parallel\nfrom model import Tagger\n\ndef run(x):\n    return data_parallel(Tagger(), x)\n",
    # an attribute of another object, set in its __init__
    "import torch.nn as nn\nfrom model import Tagger\n\nclass Trainer:\n    def __init__(self):\n"
    "        self.model = Tagger()\n        self.net = nn.DataParallel(self.model)\n",
    # a classmethod constructor
    "import torch.nn as nn\nfrom model import Tagger\nnet = nn.DataParallel(Tagger.from_config({}))\n",
], ids=["call-then-cuda", "name-with-device-ids", "rebound-name", "alias", "data-parallel-function",
        "data-parallel-imported", "self-attribute", "classmethod"])
def test_wrap_forms_resolve_to_the_class_and_its_submodules(tmp_path, train):
    files = write_project(tmp_path, {"model.py": MODEL, "train.py": train})
    index = build_index(files)
    assert index.unresolved == []
    assert names(index.direct) == {"Tagger"}
    assert names(index.wrapped) == {"Tagger", "Encoder"}


def test_factory_in_a_package_with_relative_imports_and_bases_in_another_file(tmp_path):
    files = write_project(tmp_path, {
        "models/__init__.py": "",
        "models/base.py": "import torch.nn as nn\n\nclass BaseModel(nn.Module):\n    pass\n",
        "models/layers.py": MODEL,
        "models/factory.py": """
            from .base import BaseModel
            from . import layers

            class Classifier(BaseModel):
                def __init__(self):
                    super().__init__()
                    self.stack = nn.ModuleList([layers.Encoder() for _ in range(2)])
                    self.vocab = Vocabulary()

            class Vocabulary:
                pass

            def build(kind):
                if kind == "tagger":
                    model = layers.Tagger()
                    return model
                return Classifier()
        """,
        "train.py": "import torch.nn as nn\nfrom models.factory import build\nmodel = nn.DataParallel(build('tagger'))\n",
    })
    index = build_index(files)
    assert index.unresolved == []
    assert names(index.direct) == {"Tagger", "Classifier"}
    # Vocabulary is constructed in a method but is not an nn.Module: not a submodule.
    assert names(index.wrapped) == {"Tagger", "Classifier", "Encoder", "BaseModel"}


@pytest.mark.parametrize("train, reason", [
    ("import torch.nn as nn\n\ndef wrap(model):\n    return nn.DataParallel(model)\n",
     "`model` comes from a parameter whose callers are not followed"),
    ("import torch.nn as nn\nimport torchvision\nnet = nn.DataParallel(torchvision.models.resnet18())\n",
     "`torchvision.models.resnet18()` is what a function of another package returns"),
    ("import torch.nn as nn\nnet = nn.DataParallel(load_model())\n", "`load_model()` uses a name that is neither defined"),
    ("import torch.nn as nn\nfrom model import missing_factory\nnet = nn.DataParallel(missing_factory())\n",
     "`missing_factory()` uses a name that is neither defined nor imported"),
])
def test_wraps_that_cannot_be_resolved_are_recorded_with_why(tmp_path, monkeypatch, train, reason):
    monkeypatch.chdir(tmp_path)
    files = write_project(tmp_path, {"model.py": MODEL, "train.py": train})
    index = build_index(files)
    [unresolved] = index.unresolved
    assert str(unresolved.site).startswith("train.py:")
    assert reason in unresolved.reason
    assert index.wrapped == {}


def test_a_class_of_another_package_is_resolved_but_adds_nothing(tmp_path):
    files = write_project(tmp_path, {
        "model.py": MODEL,
        "train.py": "import torch.nn as nn\nfrom transformers import BertModel\nnet = nn.DataParallel(BertModel())\n",
    })
    index = build_index(files)
    assert index.unresolved == [] and index.wrapped == {}


def test_only_files_that_mention_data_parallel_or_are_reached_are_parsed(tmp_path):
    files = write_project(tmp_path, {
        "model.py": MODEL,
        "unrelated.py": "class Vocabulary:\n    pass\n",
        "train.py": "import torch.nn as nn\nfrom model import Tagger\nnet = nn.DataParallel(Tagger())\n",
    })
    builder = IndexBuilder(files)
    builder.build()
    # The index summarises the file with the wrap; what the wrap wraps (model.py) is the evaluator's to read.
    assert builder.files_parsed == 1
    read = {os.path.basename(path) for path in builder._evaluated.evaluator.read}
    assert read == {"model.py", "train.py"}


def test_cache_reuses_summaries_until_a_file_changes(tmp_path):
    project = tmp_path / "project"
    files = write_project(project, {
        "model.py": MODEL,
        "train.py": "import torch.nn as nn\nfrom model import Tagger\nnet = nn.DataParallel(Tagger())\n",
    })
    cache_file = tmp_path / "cache" / "index.json"
    first = IndexBuilder(files, cache_file=cache_file)
    first.build()
    first.save_cache()
    assert first.files_parsed == 1  # train.py, the wrap's file (model.py is the evaluator's)

    second = IndexBuilder(files, cache_file=cache_file)
    assert names(second.build().direct) == {"Tagger"}
    assert second.files_parsed == 0

    train = project / "train.py"
    train.write_text("import torch.nn as nn\nfrom model import Encoder\nnet = nn.DataParallel(Encoder())\n")
    os.utime(train, ns=(train.stat().st_atime_ns, train.stat().st_mtime_ns + 10**9))
    third = IndexBuilder(files, cache_file=cache_file)
    assert names(third.build().direct) == {"Encoder"}
    assert third.files_parsed == 1


def test_two_processes_saving_one_cache_keep_each_others_summaries(tmp_path):
    # flake8's workers each build the index from the same cache file and save it as they leave.
    files = write_project(tmp_path / "project", {
        "model.py": MODEL,
        "train.py": "import torch.nn as nn\nfrom model import Tagger\nnet = nn.DataParallel(Tagger())\n",
        "helpers.py": "def pad(x):\n    return x\n",
    })
    model, helpers = (next(path for path in files if path.endswith(name)) for name in ("model.py", "helpers.py"))
    cache_file = tmp_path / "index.json"
    one, other = IndexBuilder(files, cache_file=cache_file), IndexBuilder(files, cache_file=cache_file)
    one.build()
    other.build()
    one.summary(_path_key(model))
    other.summary(_path_key(helpers))
    one.save_cache()
    other.save_cache()  # read before the first saved: it keeps what the file holds now of the same files

    third = IndexBuilder(files, cache_file=cache_file)
    third.build()
    parsed = third.files_parsed
    third.summary(_path_key(model))
    third.summary(_path_key(helpers))
    assert third.files_parsed == parsed  # both summaries came from the cache


def test_a_damaged_cache_file_is_ignored(tmp_path):
    files = write_project(tmp_path / "project", {
        "model.py": MODEL,
        "train.py": "import torch.nn as nn\nfrom model import Tagger\nnet = nn.DataParallel(Tagger())\n",
    })
    cache_file = tmp_path / "index.json"
    cache_file.write_text('{"format": 1, "files": {"x": [1, 2')
    assert names(build_index(files, cache_file=cache_file).direct) == {"Tagger"}
    assert "files" in json.loads(cache_file.read_text())  # rewritten whole


def test_a_cache_file_of_the_right_format_with_wrong_contents_is_ignored(tmp_path):
    files = write_project(tmp_path / "project", {
        "model.py": MODEL,
        "train.py": "import torch.nn as nn\nfrom model import Tagger\nnet = nn.DataParallel(Tagger())\n",
    })
    cache_file = tmp_path / "index.json"
    good = IndexBuilder(files, cache_file=cache_file)
    good.build()
    good.save_cache()
    stored = json.loads(cache_file.read_text())
    for entry in stored["files"].values():
        if entry[3] is not None:
            entry[3]["classes"] = {"Tagger": {"bases": "nn.Module"}}
    cache_file.write_text(json.dumps(stored))
    assert names(build_index(files, cache_file=cache_file).direct) == {"Tagger"}


def test_nested_functions_locals_and_non_ascii_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = write_project(tmp_path, {
        "model.py": MODEL,
        "train.py": """
            import torch.nn as nn
            from model import Tagger

            def build():
                def log(message):
                    return message
                tagger = Tagger()
                return tagger

            class Trainer:
                def __init__(self):
                    model = build()
                    self.net = nn.DataParallel(model)  # « parallèle »

            legacy = {"modèle": nn.DataParallel(unknown)}
        """,
    })
    index = build_index(files)
    assert names(index.direct) == {"Tagger"}
    [unresolved] = index.unresolved
    assert (unresolved.site.line, unresolved.site.col) == (16, 21)  # characters (22 would count bytes)
    assert unresolved.site.text == "nn.DataParallel(unknown)"


def test_prose_about_data_parallel_is_not_parsed(tmp_path):
    files = write_project(tmp_path, {
        "notes.py": '"""Wrap the model in DataParallel for multi-GPU runs."""\nX = 1\n',
        "alias.py": "from torch.nn import DataParallel as DP\n",
        "assigned.py": "import torch.nn as nn\nDP = nn.DataParallel\n",
    })
    builder = IndexBuilder(files)
    builder.build()
    assert builder.files_parsed == 2


def test_names_ending_in_data_parallel_are_not_wraps(tmp_path):
    files = write_project(tmp_path, {
        "replica.py": "def copy(module):\n    return module._replicate_for_data_parallel()\n",
        "ddp.py": "from torch.nn.parallel import DistributedDataParallel\nnet = DistributedDataParallel(model)\n",
        "wrap.py": "import torch\nnet = torch.nn.DataParallel(model)\n",
        "function.py": "from torch.nn.parallel import data_parallel\nout = data_parallel(model, x)\n",
    })
    builder = IndexBuilder(files)
    builder.build()
    assert builder.files_parsed == 2


@pytest.mark.parametrize("text, expected", [
    ("from .base import Base\n", [[1, "base", ["Base"]]]),
    ("from .. import base, layers as L\n", [[2, "", ["base", "layers"]]]),
    ("from pkg.models import (\n    Encoder,  # the base\n    Decoder as Dec,\n)\n",
     [[0, "pkg.models", ["Encoder", "Decoder"]]]),
    ("from pkg import a, \\\n    b\n", [[0, "pkg", ["a", "b"]]]),
    ("import os; from pkg.x import *\n", [[0, "pkg.x", ["*"]], [0, "os", []]]),
    ("import pkg.base as pb, other\n", [[0, "pkg.base", []], [0, "other", []]]),
    ("    try:\n        from fast import Impl\n    except ImportError:\n        pass\n", [[0, "fast", ["Impl"]]]),
    ("x = 1  # no imports here\n", []),
])
def test_import_statements_are_read_from_the_text(text, expected):
    assert imports_in_text(text.encode()) == expected


@pytest.mark.parametrize("imports, base", [
    ("from pkg.base import Base", "Base"),
    ("from pkg import base", "base.Base"),
    ("import pkg.base as pb", "pb.Base"),
    ("from . import base", "base.Base"),
    ("from .middle import Middle", "Middle"),
    ("from pkg import (\n    Middle,\n)", "Middle"),
    ("from pkg import Base", "Base"),
])
def test_a_file_whose_imports_reach_an_rnn_may_run_it(tmp_path, imports, base):
    # pkg/base.py builds the RNN; pkg/middle.py names none but derives from it; pkg/__init__ re-exports.
    files = write_project(tmp_path, {
        "pkg/__init__.py": "from .middle import Middle\nfrom .base import Base\n",
        "pkg/base.py": "import torch.nn as nn\nclass Base(nn.Module):\n    def __init__(self):\n"
                       "        super().__init__()\n        self.rnn = nn.LSTM(4, 4)\n",
        "pkg/middle.py": "from .base import Base\nclass Middle(Base):\n    pass\n",
        "pkg/model.py": f"{imports}\nclass Model({base}):\n    def forward(self, x):\n        return self.rnn(x)\n",
        "pkg/other.py": "from .util import helper\nclass Other(Thing):\n    def forward(self, x):\n        return x\n",
        "pkg/util.py": "def helper():\n    return 1\n",
    })
    index = build_index(files)
    assert index.may_run_rnn_elsewhere(str(tmp_path / "pkg" / "model.py"))
    assert not index.may_run_rnn_elsewhere(str(tmp_path / "pkg" / "other.py"))
    assert index.context_for(str(tmp_path / "pkg" / "model.py"), "any").rnn_elsewhere


def test_a_class_an_rnn_is_handed_to_may_run_it_whatever_its_imports(tmp_path):
    files = write_project(tmp_path, {
        "wrapper.py": "class Wrapper(Base):\n    def forward(self, x):\n        return self.module(x)\n",
        "build.py": "import torch.nn as nn\nfrom wrapper import Wrapper\nnet = Wrapper(nn.LSTM(4, 4))\n",
    })
    assert build_index(files).may_run_rnn_elsewhere(str(tmp_path / "wrapper.py"))


@pytest.mark.parametrize("use, elsewhere", [
    ("class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.rnn = build_rnn()\n", True),
    ("RNN = build_rnn\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.rnn = RNN()\n", True),
    ("ENCODER = build_rnn()\n", True),
    ("def make():\n    return build_rnn()\nclass Model(nn.Module):\n    def __init__(self):\n"
     "        super().__init__()\n        self.rnn = make()\n", True),
    # A function of the file that no class calls cannot hand a class what it builds.
    ("def make():\n    return build_rnn()\n", False),
    ("@build_rnn\nclass Model(nn.Module):\n    pass\n", False),
    ("@register(build_rnn)\nclass Model(nn.Module):\n    pass\n", False),
    # A class of that file known not to be a module cannot be an RNN.
    ("SETTINGS = Settings()\n", False),
])
def test_an_imported_factory_counts_where_what_it_builds_can_reach_a_class(tmp_path, use, elsewhere):
    files = write_project(tmp_path, {
        "factories.py": "import torch.nn as nn\nclass Settings:\n    pass\ndef build_rnn():\n    return nn.LSTM(4, 4)\n"
                        "def register(thing):\n    return lambda cls: cls\n",
        "model.py": f"import torch.nn as nn\nfrom factories import build_rnn, register, Settings\n{use}"
                    "class Tagger(nn.Module):\n    def forward(self, x):\n"
                    "        return self.rnn(x)\n",
    })
    assert build_index(files).context_for(str(tmp_path / "model.py"), "any").rnn_elsewhere is elsewhere


@pytest.mark.parametrize("text, summarised", [
    (b"import torch.nn as nn\nenc = Encoder(rnn_class=nn.GRU)\n", True),
    (b"import torch\nnet = Wrapper(torch.nn.LSTM(4, 4))\n", True),
    (b"from .rnn import GRU, LSTM\n", False),
    (b"import torch.nn as nn\nif isinstance(module, (nn.LSTM, nn.GRU)):\n    pass\n", False),
    (b"import torch.nn as nn\nok = issubclass(kind, nn.RNN)\n", False),
])
def test_files_that_may_hand_an_rnn_to_a_class_are_summarised_at_build(text, summarised):
    assert needs_summary_at_build(text) is summarised


def _build_repeatedly(arguments):
    files, cache_file = arguments
    found = set()
    for _ in range(15):
        found |= names(build_index(files, cache_file=Path(cache_file)).direct)
    return found


def test_processes_sharing_the_cache_file_never_read_a_partial_one(tmp_path):
    files = write_project(tmp_path / "project", {
        "model.py": MODEL,
        **{f"module_{n}.py": f"import torch.nn as nn\n\nclass Layer{n}(nn.Module):\n    pass\n" for n in range(30)},
        "train.py": "import torch.nn as nn\nfrom model import Tagger\nnet = nn.DataParallel(Tagger())\n",
    })
    cache_file = str(tmp_path / "cache" / "index.json")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_build_repeatedly, [(files, cache_file)] * 4)
    assert all(found == {"Tagger"} for found in results)
    json.loads(Path(cache_file).read_text())  # whole, never half written
    assert not [p for p in Path(cache_file).parent.iterdir() if p.name.endswith(".tmp")]


def test_flake8_project_is_the_folder_holding_setup_cfg(tmp_path):
    context = context_in_project(str(SAMPLE / "seq2seq" / "tagger.py"), "wrapped", tmp_path)
    assert dict(context.direct)["Tagger"].endswith("train.py:11")
    assert context.unresolved and context.unresolved[0].endswith("scripts/evaluate.py:9")
    without_scripts = context_in_project(str(SAMPLE / "seq2seq" / "tagger.py"), "wrapped", tmp_path, ("scripts",))
    assert without_scripts.unresolved == ()


def test_summaries_made_in_a_pool_give_the_same_index(tmp_path):
    files = write_project(tmp_path, {
        "model.py": MODEL,
        **{f"train_{n}.py": f"import torch.nn as nn\nfrom model import {'Tagger' if n % 2 else 'Encoder'}\n"
                            f"net = nn.DataParallel({'Tagger' if n % 2 else 'Encoder'}())\n" for n in range(20)},
        "broken.py": "import torch.nn as nn\nnet = nn.DataParallel(\n",
    })
    alone, pooled = IndexBuilder(files), IndexBuilder(files)
    expected, actual = alone.build(jobs=1), pooled.build(jobs=2)
    assert (actual.wrapped, actual.direct, actual.sites) == (expected.wrapped, expected.direct, expected.sites)
    assert names(actual.direct) == {"Tagger", "Encoder"} and len(actual.sites) == 20
    assert pooled.files_parsed == alone.files_parsed == 21  # the wraps' files (model.py is the evaluator's)


def test_what_callers_hand_a_class_leaves_the_index_typed():
    from dp_rnn_lint.analysis.project import FileContext
    from dp_rnn_lint.analysis.values import RnnKind

    context = FileContext(injected=(("Encoder", "rnn", "instance", "nn.LSTM"), ("Encoder", "rnn", "class", "nn.GRU"),
                                    ("Encoder", "rnn", "instance", "nn.GRU"), ("Other", "0", "class", "nn.RNN")))
    assert context.handed_in("Encoder") == {
        "rnn": frozenset({("instance", RnnKind.LSTM), ("class", RnnKind.GRU), ("instance", RnnKind.GRU)})}
    assert context.handed_in("Other") == {"0": frozenset({("class", RnnKind.RNN)})}


def test_a_wrap_of_an_attribute_the_method_replaces_wraps_what_it_held_before(tmp_path):
    # `self.model = nn.DataParallel(self.model)`: the wrap sees the value set before it, not itself.
    train = ("import torch.nn as nn\nfrom model import Tagger\n\nclass Trainer:\n    def __init__(self):\n"
             "        self.model = self.build()\n        self.model = nn.DataParallel(self.model)\n\n"
             "    def build(self):\n        return Tagger()\n")
    index = build_index(write_project(tmp_path, {"model.py": MODEL, "train.py": train}))
    assert index.unresolved == []
    assert names(index.direct) == {"Tagger"}
    assert names(index.wrapped) == {"Tagger", "Encoder"}


def test_wraps_of_one_attribute_in_two_methods_each_see_their_own_value(tmp_path):
    # values_where sets what `self.model` held before each wrap; one answer must not leak into the other.
    train = ("import torch.nn as nn\nfrom model import Encoder, Tagger\n\nclass Trainer:\n    def __init__(self):\n"
             "        self.model = Tagger()\n        self.model = nn.DataParallel(self.model)\n\n"
             "    def other(self):\n        self.model = Encoder()\n        self.encoder_only = nn.DataParallel(self.model)\n")
    index = build_index(write_project(tmp_path, {"model.py": MODEL, "train.py": train}))
    sites = {name: [str(site).rsplit(":", 1)[1] for site in found] for (_, name), found in index.direct.items()}
    assert sites == {"Tagger": ["7"], "Encoder": ["11"]}


def test_saved_wrap_answers_follow_the_files_they_rest_on(tmp_path):
    # The index cache keeps what each wrap wraps; a change to the wrapped class's file changes the answer.
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    model = textwrap.dedent("""\
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(8, 8)

            def forward(self, x):
                return self.lstm(x)[0]

        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(8, 8)

            def forward(self, x):
                return self.gru(x)[0]

        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.part = Encoder()
    """)
    (project / "model.py").write_text(model)
    (project / "train.py").write_text("import torch.nn as nn\nfrom model import Tagger\nnet = nn.DataParallel(Tagger())\n")
    command = [sys.executable, "-m", "dp_rnn_lint", "--scope", "wrapped", "--format", "concise", "--cache-dir",
               str(tmp_path / "cache"), "."]

    def wrapped_rnn_lines():
        done = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=120)
        return sorted(line.split(":")[1] for line in done.stdout.splitlines() if "DPR001" in line)

    assert wrapped_rnn_lines() == ["9"]  # Encoder's LSTM: Tagger holds an Encoder
    assert wrapped_rnn_lines() == ["9"]  # from the saved answers
    (project / "model.py").write_text(model.replace("self.part = Encoder()", "self.part = Decoder()  # now"))
    assert wrapped_rnn_lines() == ["17"]  # Decoder's GRU: the saved answers rested on model.py


def test_many_wrap_files_resolve_the_same_when_the_build_starts_fresh_evaluators(tmp_path, monkeypatch):
    """A project of many wrap files is resolved by a fresh evaluator every few files (each bound file keeps
    its syntax tree): the answers are those of one evaluator for all, and the saved answers still rest on
    every file any of them read."""
    from dp_rnn_lint.analysis import project

    files = {"models.py": MODEL}
    for number in range(7):
        files[f"train_{number}.py"] = f"""
            import torch.nn as nn
            from models import Tagger, Encoder

            model = nn.DataParallel({'Tagger()' if number % 2 else 'Encoder()'})
        """
    paths = write_project(tmp_path, files)

    def built(limit: int):
        monkeypatch.setattr(project, "_WRAP_FILES_PER_EVALUATOR", limit)
        builder = IndexBuilder(paths)
        index = builder.build()
        return index, builder._evaluated_wraps.stored()

    one, stored_one = built(1000)
    fresh, stored_fresh = built(2)
    assert names(one.wrapped) == {"Tagger", "Encoder"}
    assert (fresh.wrapped, fresh.direct, fresh.unresolved) == (one.wrapped, one.direct, one.unresolved)
    read = lambda stored: {os.path.basename(entry[0]) for entry in stored["files"]}  # noqa: E731
    assert "models.py" in read(stored_fresh) and read(stored_fresh) == read(stored_one)
