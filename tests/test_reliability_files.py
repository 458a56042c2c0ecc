"""Bad input never crashes the run or changes a byte on disk; fixes are written whole or not at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dp_rnn_lint import engine, files, parse
from dp_rnn_lint.engine import lint_path

from .conftest import FIXTURES, golden_path

BUGGY = (FIXTURES / "DPR001" / "lstm_classifier.py").read_bytes()


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def snapshot(folder: Path) -> dict:
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def bad_tree(tmp_path: Path) -> Path:
    (tmp_path / "good.py").write_bytes(BUGGY)
    (tmp_path / "readonly.py").write_bytes(BUGGY)
    (tmp_path / "readonly.py").chmod(0o444)
    (tmp_path / "nul.py").write_bytes(b"import torch.nn as nn\nrnn = nn.LSTM(1, 1)\x00\n")
    (tmp_path / "binary.py").write_bytes(bytes(range(256)) * 4 + b"lstm")
    (tmp_path / "latin.py").write_bytes(b"# lstm\nname = '\xe9'\n")
    (tmp_path / "deep.py").write_text("rnn = " + "(" * 5000 + ")" * 5000 + "\n")
    (tmp_path / "broken.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "loop_a.py").symlink_to(tmp_path / "loop_b.py")
    (tmp_path / "loop_b.py").symlink_to(tmp_path / "loop_a.py")
    (tmp_path / "folder_loop").symlink_to(tmp_path)
    # The same troubles in files that mention no RNN (and so are never parsed) are still reported.
    (tmp_path / "plain_binary.py").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "plain_nul.py").write_bytes(b"x = 1\x00\n")
    (tmp_path / "plain_latin.py").write_bytes(b"name = '\xe9'\n")
    return tmp_path


def test_every_bad_file_gets_one_error_line_and_nothing_changes_but_the_good_file(bad_tree):
    before = snapshot(bad_tree)
    result = run("--fix", ".", cwd=bad_tree)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    errors = sorted(line.removeprefix("error: ").split(":")[0].removeprefix("./") for line in result.stderr.splitlines())
    assert errors == sorted(
        ["binary.py", "broken.py", "deep.py", "latin.py", "loop_a.py", "loop_b.py", "nul.py", "readonly.py",
         "plain_binary.py", "plain_latin.py", "plain_nul.py"]
    ), result.stderr
    after = snapshot(bad_tree)
    changed = {name for name in before if before[name] != after.get(name)}
    assert changed == {"good.py"}
    assert after["good.py"][0] == golden_path(FIXTURES / "DPR001" / "lstm_classifier.py").read_bytes()
    assert set(after) == set(before), "a temporary file was left behind"


def test_unlistable_folder_is_reported(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    real_scandir = os.scandir

    def refuse(path):
        if str(path).endswith("sub"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(files.os, "scandir", refuse)
    assert list(files.discover([str(tmp_path)])) == [(str(tmp_path / "sub"), "cannot list folder: Permission denied")]


def test_symlinks_out_of_the_walked_folder_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.py").write_bytes(BUGGY)
    project = tmp_path / "project"
    project.mkdir()
    (project / "linked.py").symlink_to(outside / "model.py")
    (project / "linked_folder").symlink_to(outside)
    (project / "inner.py").write_bytes(BUGGY)
    (project / "inner_link.py").symlink_to(project / "inner.py")
    found = [Path(path).name for path, _ in files.discover([str(project)])]
    assert found == ["inner.py", "inner_link.py"]
    run("--fix", ".", cwd=project)
    assert (outside / "model.py").read_bytes() == BUGGY


def test_file_changed_on_disk_between_reading_and_writing_is_not_overwritten(tmp_path, monkeypatch):
    target = tmp_path / "model.py"
    target.write_bytes(BUGGY)
    original_lint = engine.lint_source

    def edit_meanwhile(*args, **kwargs):
        result = original_lint(*args, **kwargs)
        target.write_bytes(BUGGY + b"# edited by someone else\n")
        return result

    monkeypatch.setattr(engine, "lint_source", edit_meanwhile)
    result = lint_path(str(target), fix=True, write=True)
    assert result.problem == "changed on disk while it was being fixed; not overwritten"
    assert target.read_bytes() == BUGGY + b"# edited by someone else\n"


def test_oversized_candidate_file_is_skipped_with_a_note(tmp_path):
    big = tmp_path / "generated.py"
    big.write_bytes(BUGGY + b"# padding\n" * (parse.MAX_FILE_BYTES // 10 + 1))
    result = run("generated.py", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr.startswith("note: generated.py: skipped: 1.0 MiB is over the 1 MiB limit")


def test_large_file_without_rnn_words_is_cheap(tmp_path):
    (tmp_path / "data.py").write_text("VALUES = [\n" + "    1,\n" * 1_500_000 + "]\n")
    result = run("data.py", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "All checks passed! Checked 1 file."


def test_concurrent_fix_runs_leave_every_file_fixed_or_untouched(tmp_path):
    sources = [p for p in sorted(FIXTURES.glob("DPR00*/*.py")) if golden_path(p).exists()]
    for index, source in enumerate(sources * 3):
        (tmp_path / f"m{index:03d}_{source.name}").write_bytes(source.read_bytes())
    command = [sys.executable, "-m", "dp_rnn_lint", "--preview", "--fix", "--unsafe-fixes", "."]
    runs = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [process.communicate(timeout=300) for process in runs]
    for _, stderr in outputs:
        assert b"Traceback" not in stderr
    for index, source in enumerate(sources * 3):
        content = (tmp_path / f"m{index:03d}_{source.name}").read_bytes()
        assert content == golden_path(source).read_bytes(), source.name
    assert not list(tmp_path.glob(".dp-rnn-lint-*"))


def test_linting_never_runs_the_code_it_reads(tmp_path):
    marker = tmp_path / "marker"
    trap = (
        "import os\n"
        f"open({str(marker)!r}, 'w').write('module ran')\n"
        "import torch.nn as nn\n\n\n"
        "class Encoder(nn.Module):\n"
        f"    open({str(marker)!r}, 'w').write('class body ran')\n\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lstm = nn.LSTM(4, 4)\n\n"
        "    def forward(self, x):\n"
        "        return self.lstm(x)[0]\n"
    )
    (tmp_path / "trap.py").write_text(trap)
    (tmp_path / "conftest.py").write_text(trap)
    assert run(".", cwd=tmp_path).returncode == 1
    assert run("--fix", ".", cwd=tmp_path).returncode == 0
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=DPR", "."], cwd=tmp_path, capture_output=True)
    assert flake8.returncode == 0
    assert not marker.exists()


@pytest.mark.parametrize("name", ["evil\nmodel.py:1:1: DPR002 forged.py", "colour\x1b[31mred.py"])
def test_file_names_cannot_forge_output_lines(tmp_path, name):
    (tmp_path / name).write_bytes(BUGGY)
    result = run("--format", "concise", ".", cwd=tmp_path)
    finding_lines = [line for line in result.stdout.splitlines() if ": DPR" in line]
    assert len(finding_lines) == 1
    assert "\x1b" not in result.stdout
    assert ("\\n" in finding_lines[0]) or ("\\x1b" in finding_lines[0])


def test_long_flat_expression_is_linted_and_the_run_survives(tmp_path):
    # libcst's native parser recursed past the default stack on this valid file and killed the process.
    (tmp_path / "chain.py").write_text("# rnn\nx = " + " or ".join(["a"] * 10000) + "\n")
    (tmp_path / "model.py").write_bytes(BUGGY)
    result = run("--fix", ".", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "model.py").read_bytes() == golden_path(FIXTURES / "DPR001" / "lstm_classifier.py").read_bytes()
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=DPR", "chain.py"], cwd=tmp_path,
                            capture_output=True, timeout=120)
    assert flake8.returncode == 0


def test_fix_is_written_to_a_new_file_that_replaces_the_old_one(tmp_path, monkeypatch):
    target = tmp_path / "model.py"
    target.write_bytes(BUGGY)
    inode = target.stat().st_ino
    assert lint_path(str(target), fix=True, write=True).problem is None
    assert target.stat().st_ino != inode  # os.replace of a temporary file, not a rewrite in place


def test_failed_write_leaves_the_original_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "model.py"
    target.write_bytes(BUGGY)

    def disk_full(descriptor):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", disk_full)
    result = lint_path(str(target), fix=True, write=True)
    assert result.problem == "cannot write: No space left on device"
    assert target.read_bytes() == BUGGY
    assert [p.name for p in tmp_path.iterdir()] == ["model.py"]
