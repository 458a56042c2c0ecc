"""Models assembled across files (issue 16): bases, factories and RNNs handed in from other modules of
the project are found whichever paths are named, from any working folder, by the CLI and by flake8."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

from .conftest import FIXTURES
from .test_scope import _MARKER, located

SAMPLE = FIXTURES / "projects" / "tagger_project"


def run(cwd, *args):
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--format", "concise", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def flake8(cwd, *args):
    return subprocess.run([sys.executable, "-m", "flake8", "--select=DPR", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def expected(root, scope: str) -> set:
    """(path relative to root, line, code) the markers announce for a scope."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = _MARKER.search(line)
            if match and match.group("scope") in (None, scope):
                found |= {(path.relative_to(root).as_posix(), number, item.split()[0])
                          for item in match.group("codes").split(",")}
    return found


def relative(found: set, root) -> set:
    """Findings with paths made relative to the project root, however the tool printed them."""
    prefix = str(root).rstrip("/") + "/"
    return {(path.removeprefix(prefix).removeprefix("./"), line, code) for path, line, code in found}


# The holder project: modules whose holders (in other files, handed them by a builder) call their
# methods besides forward on the forward pass.
MARKED = [SAMPLE, FIXTURES / "projects" / "holder_project"]


@pytest.fixture
def project(tmp_path):
    target = tmp_path / "tagger_project"
    shutil.copytree(SAMPLE, target)
    return target


@pytest.fixture(params=MARKED, ids=lambda path: path.name)
def marked_project(request, tmp_path):
    target = tmp_path / request.param.name
    shutil.copytree(request.param, target)
    return target


def test_the_whole_project_reports_what_the_markers_say(marked_project):
    project = marked_project
    assert expected(project, "any")
    assert relative(located(run(project, ".").stdout), project) == expected(project, "any")
    wrapped = run(project, "--scope", "wrapped", ".")
    assert relative(located(wrapped.stdout), project) == expected(project, "wrapped")
    assert "could not be resolved" not in wrapped.stdout  # self.model = self.build_model() is followed


def test_each_file_alone_from_another_folder_and_through_flake8_reports_the_same(marked_project, tmp_path):
    project = marked_project
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    every = expected(project, "any")
    for path in sorted(project.rglob("*.py")):
        name = path.relative_to(project).as_posix()
        want = {item for item in every if item[0] == name}
        assert relative(located(run(elsewhere, str(path)).stdout), project) == want, name
        assert relative(located(run(project, name).stdout), project) == want, name
        assert relative(located(flake8(path.parent, path.name).stdout), path.parent) == {
            (path.name, line, code) for _, line, code in want}, name


HARNESS_CHECK = textwrap.dedent("""
    import sys
    from dp_rnn_lint.harness import check_data_parallel
    from dp_rnn_lint.harness.loading import load_model_and_inputs
    model, inputs, kwargs = load_model_and_inputs(sys.argv[1], "make_model", "make_inputs")
    for problem in check_data_parallel(model.eval(), *inputs, **kwargs).problems:
        print(problem)
""")


def harness_problems(project, model_file: str = "tagger/model.py") -> list:
    result = subprocess.run([sys.executable, "-c", HARNESS_CHECK, str(project / model_file)],
                            cwd=project, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_fixed_project_passes_the_harness(project):
    pytest.importorskip("torch")
    before = harness_problems(project)
    # One problem per RNN the markers' classes run: the base's, the class attribute's, both factories',
    # the handed-in class's and the two handed-in instances'.
    assert len(before) == 7 and all("before flatten_parameters()" in line for line in before), before
    fixed = run(project, "--fix", ".")
    assert "7 fixed, 0 remaining" in fixed.stdout, fixed.stdout
    assert harness_problems(project) == []
    assert "All checks passed!" in run(project, ".").stdout
    assert "isinstance(self._module, nn.RNNBase)" in (project / "tagger" / "wrappers.py").read_text()


def test_the_holder_project_s_fix_compacts_in_the_methods_its_holders_run(tmp_path):
    # Answerer (built by a function that hands it its encoders) runs every_step() and read_tokens() of
    # its submodules in its forward pass: the harness sees both RNNs run uncompacted on the replicas.
    pytest.importorskip("torch")
    project = tmp_path / "holder_project"
    shutil.copytree(MARKED[1], project)
    before = harness_problems(project, "vqa/answering.py")
    assert len(before) == 2 and all("before flatten_parameters()" in line for line in before), before
    fixed = run(project, "--fix", ".")
    assert "2 fixed, 0 remaining" in fixed.stdout, fixed.stdout
    assert harness_problems(project, "vqa/answering.py") == []
    text = (project / "vqa" / "questions.py").read_text()
    assert "def every_step(self, x):\n        self.rnn.flatten_parameters()\n" in text
    assert "def probe(self, x):\n        # Held" in text  # held by a plain object only: left alone


BASE = """\
from torch import nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4)
"""
ENC = """\
from .base import Base


class Enc(Base):
    def forward(self, x):
        return self.rnn(x)[0]
"""


def test_the_two_file_repro_is_flagged_however_it_is_named_and_follows_the_base(tmp_path):
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'repro'\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "base.py").write_text(BASE)
    (root / "pkg" / "enc.py").write_text(ENC)
    want = {("pkg/enc.py", 6, "DPR001")}
    assert relative(located(run(root, "pkg").stdout), root) == want
    assert relative(located(run(tmp_path, str(root / "pkg" / "enc.py")).stdout), root) == want
    assert relative(located(run(root / "pkg", "enc.py").stdout), root / "pkg") == {("enc.py", 6, "DPR001")}
    assert relative(located(flake8(root, "pkg/enc.py").stdout), root) == want
    # With the cache warm, a change to the base alone changes the verdict on the subclass.
    (root / "pkg" / "base.py").write_text(BASE.replace("nn.LSTM(4, 4)", "nn.Linear(4, 4)"))
    assert located(run(root, "pkg/enc.py").stdout) == set()
    (root / "pkg" / "base.py").write_text(BASE)
    assert relative(located(run(root, "pkg/enc.py").stdout), root) == want


def test_copies_of_one_project_in_one_tree_each_find_their_own_files(tmp_path):
    # Two checkouts side by side (a corpus of repositories, vendored copies): `from .base import X` in one
    # copy means the file beside it, although the other copy has a module of the same dotted name.
    for copy in ("copy_a", "copy_b"):
        shutil.copytree(SAMPLE, tmp_path / copy / "tagger_project")
    wanted = {(f"{copy}/tagger_project/{path}", line, code) for copy in ("copy_a", "copy_b")
              for path, line, code in expected(SAMPLE, "any")}
    for jobs in ("1", "2"):
        assert relative(located(run(tmp_path, "--no-cache", "-j", jobs, ".").stdout), tmp_path) == wanted
