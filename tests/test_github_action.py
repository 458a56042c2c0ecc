"""The GitHub Action (action.yml) run as GitHub runs a composite action: each step's script with bash
-eo pipefail, its `env` rendered from the inputs, in the workflow's checkout, the tool installed from
this repository into a virtual environment under RUNNER_TEMP."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML (pre-commit's dependency, in the `test` extra) reads action.yml")

from .test_cli import BUGGY  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
DEFAULTS = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}


def render(value: str, inputs: dict) -> str:
    """The `${{ ... }}` expressions this action uses: inputs, `a || b`, github.action_path."""
    def one(match: re.Match) -> str:
        for part in (part.strip() for part in match.group(1).split("||")):
            found = inputs.get(part[len("inputs."):], "") if part.startswith("inputs.") else (
                str(ROOT) if part == "github.action_path" else "")
            if found:
                return found
        return ""
    return re.sub(r"\$\{\{(.*?)\}\}", one, str(value))


def run_step(step: dict, inputs: dict, workspace: Path, runner_temp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "RUNNER_TEMP": str(runner_temp), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.update({name: render(value, inputs) for name, value in step.get("env", {}).items()})
    assert "${{" not in step["run"], "inputs reach the scripts through env only"
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=workspace,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runner_temp(tmp_path_factory):
    """The install step, run once: it makes the virtual environment the lint step runs from."""
    temp = tmp_path_factory.mktemp("runner_temp")
    [install] = [step for step in ACTION["runs"]["steps"] if step["name"] == "Install dp-rnn-lint"]
    done = run_step(install, DEFAULTS, temp, temp)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (temp / "dp-rnn-lint-venv" / "bin" / "dp-rnn-lint").exists()
    return temp


def lint(inputs: dict, workspace: Path, runner_temp: Path) -> subprocess.CompletedProcess:
    [step] = [step for step in ACTION["runs"]["steps"] if step["name"] == "Run dp-rnn-lint"]
    return run_step(step, {**DEFAULTS, **inputs}, workspace, runner_temp)


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "model.py").write_text(BUGGY)
    return tmp_path


def test_the_action_is_a_composite_action_with_its_inputs():
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {"args", "fix", "diff", "unsafe-fixes", "version"}
    assert all(step["shell"] == "bash" for step in ACTION["runs"]["steps"])


def test_findings_become_annotations_and_fail_the_step(workspace, runner_temp):
    done = lint({}, workspace, runner_temp)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines and all(line.startswith("::error title=dp-rnn-lint (DPR00") for line in lines)
    assert any("file=model.py," in line for line in lines)


def test_fix_rewrites_the_files_and_annotates_what_is_left(workspace, runner_temp):
    done = lint({"fix": "true"}, workspace, runner_temp)
    fixed = (workspace / "model.py").read_text()
    assert "flatten_parameters()" in fixed and fixed != BUGGY
    assert done.returncode == 1  # pad_packed_sequence's fix is unsafe: not applied, still annotated
    assert [line.split("(")[1][:6] for line in done.stdout.splitlines()] == ["DPR002"]
    again = lint({"fix": "true", "unsafe-fixes": "true"}, workspace, runner_temp)
    assert again.returncode == 0 and again.stdout == ""


def test_diff_prints_the_fixes_and_writes_nothing(workspace, runner_temp):
    done = lint({"diff": "true"}, workspace, runner_temp)
    assert "+        self.lstm.flatten_parameters()" in done.stdout
    assert (workspace / "model.py").read_text() == BUGGY


def test_args_are_words_never_shell_code(workspace, runner_temp):
    done = lint({"args": "model.py $(touch pwned) ;touch pwned2"}, workspace, runner_temp)
    assert not (workspace / "pwned").exists() and not (workspace / "pwned2").exists()
    assert done.returncode != 0
