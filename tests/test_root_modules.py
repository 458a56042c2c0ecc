"""Root modules (issue 19): a module class the project builds only outside other modules, and hands to
nothing that may keep it, is what a DataParallel wrap would run, so DPR004 checks it in the default
scope without a wrap; a submodule (built in another module, or handed to one's constructor) is not."""

from __future__ import annotations

import os
import textwrap

import pytest

from dp_rnn_lint.analysis.project import IndexBuilder
from dp_rnn_lint.cli import main

LANGUAGE_MODEL = """
    import torch.nn as nn

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(8, 8, num_layers=2, batch_first=True)

        def forward(self, tokens, state):
            self.lstm.flatten_parameters()
            output, state = self.lstm(tokens, state)
            return output, state
"""


def write(root, files: dict) -> list:
    (root / "pyproject.toml").write_text("")
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return sorted(str(path) for path in root.rglob("*.py"))


def root_site(root, files: dict):
    paths = write(root, {"pkg/lm.py": LANGUAGE_MODEL, **files})
    builder = IndexBuilder(paths)
    return builder.root_site((os.path.normcase(str(root / "pkg" / "lm.py")), "LanguageModel"))


@pytest.mark.parametrize("use, root", [
    ("model = LanguageModel()\n", True),
    # Held by a class that is not a module: still the root of what runs.
    ("class Trainer:\n    def __init__(self):\n        self.model = LanguageModel()\n", True),
    ("class Trainer:\n    def __init__(self, model):\n        self.model = model\n"
     "trainer = Trainer(LanguageModel())\n", True),
    # A submodule: built in a module class, or handed to one's constructor directly or through a name.
    ("import torch.nn as nn\nclass Tagger(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.lm = LanguageModel()\n", False),
    ("import torch.nn as nn\nclass Tagger(nn.Module):\n    def __init__(self, lm):\n        super().__init__()\n"
     "        self.lm = lm\ndef build():\n    lm = LanguageModel()\n    return Tagger(lm)\n", False),
    ("import torch.nn as nn\nclass Tagger(nn.Module):\n    def __init__(self, lm):\n        super().__init__()\n"
     "        self.lm = lm\ntagger = Tagger(lm=LanguageModel())\n", False),
    # Kept by a class of another package: a container, or DistributedDataParallel (which does not scatter).
    ("import torch.nn as nn\nstack = nn.Sequential(LanguageModel())\n", False),
    ("import torch\nddp = torch.nn.parallel.DistributedDataParallel(LanguageModel())\n", False),
    # Nothing in the project builds it: a registry or a configuration may, as a submodule.
    ("", False),
])
def test_a_root_is_built_outside_modules_and_kept_by_none(tmp_path, use, root):
    train = "from pkg.lm import LanguageModel\n" + use
    site = root_site(tmp_path, {"train.py": train})
    assert (site is not None) == root, site
    if root:
        line = next(number for number, text in enumerate(train.splitlines(), 1) if "LanguageModel()" in text)
        assert site.endswith(f"train.py:{line}")


def test_a_class_of_the_same_name_elsewhere_is_not_this_one(tmp_path):
    other = "import torch.nn as nn\nclass LanguageModel(nn.Module):\n    pass\nclass Tagger(nn.Module):\n" \
            "    def __init__(self):\n        super().__init__()\n        self.lm = LanguageModel()\n"
    site = root_site(tmp_path, {"other.py": other, "train.py": "from pkg.lm import LanguageModel\nlm = LanguageModel()\n"})
    assert site is not None and site.endswith("train.py:2")


def lint(capsys, root, *args):
    status = main(["--no-cache", "--format", "concise", *args, str(root)])
    return status, capsys.readouterr().out


def test_dpr004_checks_a_root_and_says_why_and_not_in_wrapped_scope(tmp_path, capsys):
    write(tmp_path, {"pkg/lm.py": LANGUAGE_MODEL, "train.py": "from pkg.lm import LanguageModel\nmodel = LanguageModel()\n"})
    status, out = lint(capsys, tmp_path, "--select", "DPR004")
    findings = [line for line in out.splitlines() if "DPR004" in line]
    assert status == 1 and [line.split(": DPR004")[0].rsplit(":", 2)[-2] for line in findings] == ["11", "12"]
    assert all("(checked as a root module: the project builds it at " in line and "train.py:2 and no other module "
               "holds it" in line for line in findings)
    status, out = lint(capsys, tmp_path, "--select", "DPR004", "--scope", "wrapped")
    assert status == 0 and "DPR004" not in out


def test_a_root_stops_being_one_when_another_file_makes_it_a_submodule(tmp_path, capsys):
    # The result cache is keyed on what the index says of the file: a change elsewhere re-lints it.
    write(tmp_path, {"pkg/lm.py": LANGUAGE_MODEL, "train.py": "from pkg.lm import LanguageModel\nmodel = LanguageModel()\n"})
    cache = tmp_path / ".cache"
    assert main(["--cache-dir", str(cache), "--select", "DPR004", str(tmp_path)]) == 1
    capsys.readouterr()
    (tmp_path / "train.py").write_text(
        "import torch.nn as nn\nfrom pkg.lm import LanguageModel\nclass Tagger(nn.Module):\n"
        "    def __init__(self, lm):\n        super().__init__()\n        self.lm = lm\n"
        "model = Tagger(LanguageModel())\n")
    assert main(["--cache-dir", str(cache), "--select", "DPR004", str(tmp_path)]) == 0
    assert "All checks passed!" in capsys.readouterr().out


def test_a_module_a_factory_returns_is_not_a_root(tmp_path, capsys):
    # build_encoder() may be called in another module's __init__ (a transducer building its encoder): the
    # index does not follow the factory's callers, so the class it returns is not taken for a root.
    factory = "from pkg.lm import LanguageModel\n\n\ndef build():\n    return LanguageModel()\n"
    write(tmp_path, {"pkg/lm.py": LANGUAGE_MODEL, "pkg/factory.py": factory})
    status, out = lint(capsys, tmp_path, "--select", "DPR004", "--no-cache")
    assert status == 0 and "DPR004" not in out, out
    # Built in a function that keeps it to itself (a script's main): the root it was.
    (tmp_path / "pkg" / "factory.py").unlink()
    script = "from pkg.lm import LanguageModel\n\n\ndef main():\n    model = LanguageModel()\n    model.train()\n"
    write(tmp_path, {"train.py": script})
    status, out = lint(capsys, tmp_path, "--select", "DPR004", "--no-cache")
    assert status == 1 and "DPR004" in out, out
