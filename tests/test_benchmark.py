"""The benchmark script, run with --quick on a temporary folder: corpora, tables and targets, no network."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks" / "bench.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bench")
    # No mirrors of the real-world repositories, as in CI, whatever this machine has.
    env = {key: value for key, value in os.environ.items() if key != "DP_RNN_LINT_MIRRORS"}
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--output", str(folder / "RESULTS.md"),
         "--corpus-dir", str(folder / "corpora"), "--venv-dir", str(folder / "venvs")],
        capture_output=True, text=True, timeout=180, env=env,
    )
    assert result.returncode == 0, result.stderr
    return folder, (folder / "RESULTS.md").read_text()


def test_quick_run_writes_a_table_per_corpus_and_the_targets(quick_run):
    _, results = quick_run
    for heading in ("## Targets", "## Tools", "## Corpora", "## 1. torch subset", "## 2. all candidates", "## 3. scale"):
        assert heading in results
    assert "| cores (nproc) |" in results and "| date |" in results
    targets = results.split("## Targets")[1].split("\n## ")[0]
    rows = [line for line in targets.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 13
    assert all(row.rstrip().endswith(("| met |", "| **missed** |", "| not measured |")) for row in rows)
    # ours runs everywhere, so the targets that need only ours are measured
    assert "a second run over an unchanged tree" in targets and "--fix ≤ 2×" in targets
    assert "| dp-rnn-lint | 1 |" in results


def test_quick_run_says_where_the_time_goes_stage_by_stage(quick_run):
    _, results = quick_run
    section = results.split("## 6. where dp-rnn-lint's time goes")[1].split("\n## ")[0]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in section.splitlines() if line.startswith("| ")}
    from dp_rnn_lint.stages import STAGE_NAMES

    assert list(rows)[2:] == list(STAGE_NAMES)  # after the header and its rule
    # Every file of the corpus was walked and read; the stage's seconds are a number.
    walked = rows["walking and reading"].split(" | ")
    assert int(walked[1]) > 0 and float(walked[2].rstrip(" |")) >= 0
    assert "torch-subset:" in section and "CPU s in all" in section


def test_without_mirrors_the_real_model_parts_are_reported_as_not_run(quick_run):
    folder, results = quick_run
    targets = results.split("## Targets")[1].split("\n## ")[0]
    why = "not run: no mirrors of the real-world repositories (--mirrors DIR or $DP_RNN_LINT_MIRRORS)"
    for name in ("#16 real models", "#16 one file inside a", "#36 real models: dp-rnn-lint",
                 "#36 real models: a second run"):
        row = next(line for line in targets.splitlines() if line.startswith(f"| {name}"))
        assert why in row and row.rstrip().endswith("| not measured |")
    assert "#16 torch subset: dp-rnn-lint wall time ≤ 0.5× ruff's" in targets
    assert "## 4. real models" in results and "## 5. one file in a project, warm cache" in results
    assert not (folder / "corpora" / "real-models").exists()


def test_real_models_corpus_is_one_project_of_numbered_copies(tmp_path):
    bench = load_bench()
    tree = tmp_path / "owner+repo"
    (tree / "pkg" / "models").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "models" / "__init__.py").write_text("")
    (tree / "pkg" / "models" / "base.py").write_text("from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n")
    (tree / "pkg" / "models" / "rnn.py").write_text(
        "from torch import nn\n\nfrom .base import Base\n\n\nclass Encoder(Base):\n"
        "    def __init__(self):\n        super().__init__()\n        self.rnn = nn.LSTM(4, 4)\n")
    (tree / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    sources = bench.real_model_sources([("owner+repo", tree)])
    assert [relative for _, relative in sources] == [
        "owner+repo/pkg/__init__.py", "owner+repo/pkg/models/__init__.py", "owner+repo/pkg/models/base.py",
        "owner+repo/pkg/models/rnn.py"]  # setup.py would make each copy a project of its own
    files = dict(bench.real_model_files(sources, 10)())
    assert "pyproject.toml" in files
    names = [name for name in files if name.endswith(".py")]
    assert len(names) == 10
    assert "copy_000/owner+repo/pkg/models/rnn.py" in names and "copy_002/owner+repo/pkg/models/__init__.py" in names
    root = tmp_path / "corpus"
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    chosen, what = bench.pick_one_model_file(root)
    # copy_002 holds no rnn.py, so copy_000's and copy_001's are the same module twice: not unique
    assert chosen.name == "rnn.py" and "imported from another file" in what


def test_the_folder_outside_any_project_has_no_marker_above_it():
    bench = load_bench()
    folder, why = bench.folder_outside_any_project()
    if folder is None:
        pytest.skip(why)
    try:
        assert bench.marker_above(folder) is None
    finally:
        folder.rmdir()


def test_quick_run_makes_no_virtual_environment_and_says_why_a_tool_did_not_run(quick_run):
    folder, results = quick_run
    assert not (folder / "venvs").exists()
    assert "| torchfix --select ALL | not run: no virtual environment for it yet" in results
    assert "| flake8 without dp-rnn-lint | not run: no virtual environment for it yet" in results


def test_results_name_no_folder_of_this_machine(quick_run):
    folder, results = quick_run
    assert str(folder) not in results
    assert str(ROOT) not in results


def test_every_generated_candidate_is_valid_python_with_the_findings_its_fixtures_predict(quick_run):
    folder, results = quick_run
    files = sorted((folder / "corpora" / "candidates").rglob("*.py"))
    assert len(files) == 6
    for path in files:
        source = path.read_text()
        ast.parse(source)
        assert "DataParallel(" in source and "pack_padded_sequence" in source
    # the script checks this itself with dp-rnn-lint --format json, and reports it
    match = re.search(r"Findings on this corpus: 6 of 6 files have at least one finding; (\d+) findings in all, "
                      r"where the fixtures' markers predict (\d+)\.", results)
    assert match and match.group(1) == match.group(2)


def test_torch_subset_and_scale_corpora_have_the_quick_sizes(quick_run):
    folder, _ = quick_run
    corpora = folder / "corpora"
    assert len(list((corpora / "torch-subset").rglob("*.py"))) == 20
    assert len(list((corpora / "scale-200").rglob("*.py"))) == 200
    # each corpus is a project of its own, not part of the checkout that holds it
    for name in ("torch-subset", "candidates", "candidates-slice", "scale-20", "scale-200"):
        assert (corpora / name / "pyproject.toml").is_file()


def test_renaming_a_fixture_leaves_attributes_and_other_names_alone():
    bench = load_bench()
    source = "class LSTM(nn.Module):\n    lstm = nn.LSTM(4, 4)\n\n\ndef make_model():\n    return LSTM()\n"
    assert bench.renamed(source, ["LSTM", "make_model"], "_7a") == (
        "class LSTM_7a(nn.Module):\n    lstm = nn.LSTM(4, 4)\n\n\ndef make_model_7a():\n    return LSTM_7a()\n"
    )


def test_index_share_script_quick_run_writes_its_table(tmp_path):
    output = tmp_path / "INDEX_RESULTS.md"
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "index_share.py"), "--quick", "--output", str(output)],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    text = output.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| fixtures |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert len(cells) == 10 and cells[8].endswith("%")
    assert str(ROOT) not in text


def test_findings_diff_sees_no_change_on_the_same_tree_and_every_changed_verdict(tmp_path):
    script = ROOT / "benchmarks" / "findings_diff.py"
    tree = tmp_path / "tagger_project"
    import shutil
    shutil.copytree(ROOT / "fixtures" / "projects" / "tagger_project", tree)
    saved = tmp_path / "before.json"
    run = lambda *args: subprocess.run([sys.executable, str(script), *args, str(tree)], capture_output=True,  # noqa: E731
                                       text=True, timeout=300)
    assert run("--save", str(saved)).returncode == 0
    same = run("--against", str(saved))
    assert same.returncode == 0 and same.stdout.startswith("0 differences"), same.stdout
    # A compaction added by hand removes one finding: reported as gone, in both scopes where it was.
    model = tree / "tagger" / "encoders.py"
    line = "        outputs, _ = self.rnn(embedded)  # expect: DPR001\n"
    before = json.loads(saved.read_text())
    model.write_text(model.read_text().replace(line, "        self.rnn.flatten_parameters()\n" + line, 1))
    changed = run("--against", str(saved))
    assert changed.returncode == 1
    assert any(line.startswith("- ") and "DPR001" in line for line in changed.stdout.splitlines()), changed.stdout
    assert sum(map(len, before.values())) > 0
