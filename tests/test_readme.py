"""README.md is the front door: one screen, no placeholders, and its commands do what it says, as written
(the development commands are what .ci/run runs)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# `dp-rnn-lint` as the README writes it: the console script of the environment running the tests.
BIN = str(Path(sys.executable).parent)


def section(title: str) -> str:
    start = README.index(f"\n## {title}")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


def code_blocks(text: str):
    return re.findall(r"```[a-z]*\n(.*?)```", text, re.S)


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_readme_fits_a_screen_and_holds_no_placeholder():
    assert README.count("\n") <= 200
    assert "<owner>" not in README and "<commit>" not in README


def test_the_example_prints_what_the_readme_shows():
    [block] = code_blocks(section("An example"))
    # Each `$ command` with the output the README gives for it, up to the next one.
    for command, expected in re.findall(r"^\$ (.*)\n((?:(?!\$ ).*\n)*)", block, re.M):
        done = shell(command, ROOT)
        assert done.stdout == expected, command


def test_the_ci_commands_run_as_written(tmp_path):
    shutil.copytree(ROOT / "fixtures" / "projects" / "seq2seq_project", tmp_path / "project")
    project = tmp_path / "project"
    [block] = code_blocks(section("In CI"))
    commands = [line.split("- run: ", 1)[1].split("  #")[0].strip() for line in block.splitlines() if "- run: " in line]
    github, sarif = commands
    done = shell(github, project)
    assert done.returncode == 1 and done.stdout.startswith("::error title=dp-rnn-lint (DPR")
    done = shell(sarif, project)
    assert done.returncode == 0 and '"version": "2.1.0"' in (project / "dp-rnn-lint.sarif").read_text()


def test_the_verify_commands_exit_as_the_readme_says():
    pytest.importorskip("torch", reason="verify runs the model: torch (the `harness` extra)")
    [block] = code_blocks(section("Proving it at run time: `dp-rnn-lint verify`"))
    for line in block.splitlines():
        found = re.match(r"(dp-rnn-lint verify fixtures/\S+)\s+# exit (\d)", line)
        if found:
            assert shell(found.group(1), ROOT).returncode == int(found.group(2)), line


def test_the_pre_commit_local_hook_runs_as_written(tmp_path):
    pytest.importorskip("pre_commit", reason="pre-commit (in the `test` extra) runs the hook")
    if shutil.which("git") is None:
        pytest.skip("pre-commit needs git")
    [config] = code_blocks(section("pre-commit"))
    (tmp_path / ".pre-commit-config.yaml").write_text(config)
    shutil.copy(ROOT / "fixtures" / "DPR001" / "lstm_classifier.py", tmp_path / "model.py")
    for command in ("git init -q", "git add -A"):
        assert shell(command, tmp_path).returncode == 0
    done = shell(f"{sys.executable} -m pre_commit run --all-files", tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "model.py:18:23: DPR001" in done.stdout


def test_the_configuration_example_is_accepted(tmp_path):
    [toml] = code_blocks(section("Configuration"))
    (tmp_path / "pyproject.toml").write_text(toml)
    shutil.copy(ROOT / "fixtures" / "DPR001" / "lstm_classifier.py", tmp_path / "model.py")
    done = shell("dp-rnn-lint --format concise model.py", tmp_path)
    assert done.returncode == 1 and "model.py:18:23: DPR001" in done.stdout, done.stderr


def test_ci_runs_the_development_commands_as_written():
    [block] = code_blocks(section("Development"))
    ci = (ROOT / ".ci" / "run").read_text()
    for line in block.strip().splitlines():
        assert f"\n{line}\n" in ci, line


def test_the_flake8_command_runs_as_written(tmp_path):
    command = re.search(r"`(flake8 --select=DPR src/)`", section("flake8")).group(1)
    (tmp_path / "src").mkdir()
    shutil.copy(ROOT / "fixtures" / "DPR001" / "lstm_classifier.py", tmp_path / "src" / "model.py")
    done = shell(command, tmp_path)
    assert done.returncode == 1 and "src/model.py:18:23: DPR001" in done.stdout, done.stderr


def test_the_install_command_installs_the_linter_without_torch(tmp_path):
    [block] = code_blocks(section("Install"))
    install = block.splitlines()[0].split("#")[0].strip()
    assert install == "pip install -e ."
    venv = tmp_path / "venv"
    assert subprocess.run([sys.executable, "-m", "venv", str(venv)], timeout=120).returncode == 0
    done = subprocess.run(f". {venv}/bin/activate && {install} --quiet --disable-pip-version-check && dp-rnn-lint --version"
                          f" && python -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec(\"torch\") is not None)'",
                          shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300, executable="/bin/bash")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("dp-rnn-lint ")
