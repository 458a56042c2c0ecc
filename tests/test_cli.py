"""The command line, run as users run it: through a subprocess, checking output and exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES

BUGGY = """\
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        return out
"""

CLEAN = """\
import torch.nn as nn


class Head(nn.Module):
    def forward(self, x):
        return x
"""


def run(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dp_rnn_lint", *args], cwd=cwd, capture_output=True, text=True, input=stdin, timeout=60
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(BUGGY)
    (tmp_path / "head.py").write_text(CLEAN)
    return tmp_path


def test_concise_format_prints_one_line_per_finding_and_exits_1(project):
    result = run("--format", "concise", "model.py", cwd=project)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("model.py:12:18: DPR001 self.lstm (nn.LSTM) runs in the forward pass")
    assert lines[1].startswith("model.py:13:18: DPR002 pad_packed_sequence() without total_length")
    assert lines[2:] == ["Found 2 errors (1 fixable with `dp-rnn-lint --fix`). Checked 1 file.",
                         "1 hidden fix can be enabled with the `--unsafe-fixes` option."]


def test_text_format_shows_the_source_line_with_carets_under_the_flagged_call(project):
    result = run("model.py", cwd=project)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("model.py:12:18: DPR001 self.lstm (nn.LSTM) runs in the forward pass")
    assert lines[1:4] == [
        "   |",
        "12 |         out, _ = self.lstm(packed)",
        "   |                  ^^^^^^^^^^^^^^^^^ DPR001",
    ]
    assert lines[5].startswith("model.py:13:18: DPR002")
    assert lines[7:9] == [
        "13 |         out, _ = pad_packed_sequence(out, batch_first=True)",
        "   |                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ DPR002",
    ]
    assert lines[-2:] == ["Found 2 errors (1 fixable with `dp-rnn-lint --fix`). Checked 1 file.",
                          "1 hidden fix can be enabled with the `--unsafe-fixes` option."]
    assert "\x1b" not in result.stdout  # not a terminal: no colour


def test_carets_stay_under_the_code_after_tabs_and_wide_characters(tmp_path):
    (tmp_path / "model.py").write_text(
        "import torch.nn as nn\n\n\nclass Tagger(nn.Module):\n\tdef __init__(self):\n\t\tsuper().__init__()\n"
        "\t\tself.lstm = nn.LSTM(8, 16)\n\n\tdef forward(self, x):\n\t\t\u540d, _ = self.lstm(x)\n\t\treturn \u540d\n"
    )
    lines = run("model.py", cwd=tmp_path).stdout.splitlines()
    # Tabs shown as four spaces; the wide character takes two cells; the carets cover `self.lstm(x)`.
    assert lines[2] == "10 |         \u540d, _ = self.lstm(x)"
    assert lines[3] == "   | " + " " * 16 + "^" * 12 + " DPR001"


@pytest.mark.parametrize("environment, coloured", [({}, False), ({"FORCE_COLOR": "1"}, True),
                                                   ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False)])
def test_colour_only_when_forced_and_never_with_no_color(project, environment, coloured):
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    result = subprocess.run([sys.executable, "-m", "dp_rnn_lint", "model.py"], cwd=project, capture_output=True,
                            text=True, timeout=60, env={**env, **environment})
    assert ("\x1b[" in result.stdout) == coloured


def test_clean_file_exits_0(project):
    result = run("head.py", cwd=project)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "All checks passed! Checked 1 file."


def test_default_path_is_the_current_folder(project):
    result = run(cwd=project)
    assert result.returncode == 1
    assert "model.py:12:18: DPR001" in result.stdout


def test_folders_skip_virtualenvs_build_and_excluded_names(project):
    for folder in ("build", ".venv", "__pycache__", "generated"):
        (project / folder).mkdir()
        (project / folder / "copy.py").write_text(BUGGY)
    env = project / "env"
    env.mkdir()
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (env / "copy.py").write_text(BUGGY)
    result = run(".", "--extend-exclude", "generated", cwd=project)
    assert "copy.py" not in result.stdout
    assert "model.py" in result.stdout


def test_json_format_lists_findings_with_1_based_positions(project):
    result = run("--format", "json", "model.py", cwd=project)
    assert result.returncode == 1
    items = json.loads(result.stdout)
    assert [(i["path"], i["line"], i["col"], i["code"], i["fixable"]) for i in items] == [
        ("model.py", 12, 18, "DPR001", True),
        ("model.py", 13, 18, "DPR002", True),
    ]
    assert set(items[0]) == {"path", "cell", "line", "col", "code", "message", "fixable", "fix"}
    assert [i["fix"]["applicability"] for i in items] == ["safe", "unsafe"]


def _apply_json_edits(source: str, items) -> str:
    lines = source.split("\n")

    def offset(position) -> int:
        return sum(len(line) + 1 for line in lines[: position["row"] - 1]) + position["column"] - 1

    edits = [edit for item in items for edit in item["fix"]["edits"]]
    for edit in sorted(edits, key=lambda e: offset(e["location"]), reverse=True):
        source = source[: offset(edit["location"])] + edit["content"] + source[offset(edit["end_location"]):]
    return source


def test_json_fix_edits_applied_to_the_source_give_what_fix_writes(project):
    original = (project / "model.py").read_text()
    items = json.loads(run("--format", "json", "model.py", cwd=project).stdout)
    assert all(item["fix"]["edits"] for item in items)
    assert run("--fix", "--unsafe-fixes", "model.py", cwd=project).returncode == 0
    assert _apply_json_edits(original, items) == (project / "model.py").read_text()


def test_fix_rewrites_the_file_and_reports_what_it_fixed(project):
    result = run("--fix", "--unsafe-fixes", "model.py", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "Found 2 errors (2 fixed, 0 remaining). Checked 1 file."
    text = (project / "model.py").read_text()
    assert "    def forward(self, x, lengths):\n        self.lstm.flatten_parameters()\n" in text
    assert "pad_packed_sequence(out, batch_first=True, total_length=x.size(1))" in text
    assert run("model.py", cwd=project).returncode == 0


def test_diff_prints_the_fix_and_writes_nothing(project):
    result = run("--diff", "--unsafe-fixes", "model.py", cwd=project)
    assert result.returncode == 1
    assert "+        self.lstm.flatten_parameters()" in result.stdout
    assert "+        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))" in result.stdout
    assert (project / "model.py").read_text() == BUGGY


def test_select_and_ignore_take_codes_and_prefixes(project):
    only_pad = run("--select", "DPR002", "model.py", cwd=project)
    assert "DPR001" not in only_pad.stdout and "DPR002" in only_pad.stdout
    no_flatten = run("--ignore", "DPR001", "model.py", cwd=project)
    assert "DPR001" not in no_flatten.stdout and "DPR002" in no_flatten.stdout
    nothing = run("--ignore", "DPR", "model.py", cwd=project)
    assert nothing.returncode == 0
    specific_wins = run("--ignore", "DPR", "--select", "DPR001", "model.py", cwd=project)
    assert "DPR001" in specific_wins.stdout


@pytest.mark.parametrize("args", [["--select", "E501"], ["--format", "xml"], ["--no-such-option"]])
def test_usage_errors_exit_2_with_one_message(project, args):
    result = run(*args, "model.py", cwd=project)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "error:" in result.stderr


@pytest.mark.parametrize(
    "comment, suppressed",
    [
        ("  # noqa", {"DPR001"}),
        ("  # noqa: DPR001", {"DPR001"}),
        ("  # noqa:DPR001,DPR002", {"DPR001"}),
        ("  # NOQA: DPR", {"DPR001"}),
        ("  # noqa: E501", set()),
    ],
)
def test_noqa_on_the_reported_line_suppresses_and_prevents_the_fix(project, comment, suppressed):
    source = BUGGY.replace("out, _ = self.lstm(packed)", "out, _ = self.lstm(packed)" + comment)
    (project / "model.py").write_text(source)
    result = run("--format", "json", "model.py", cwd=project)
    codes = {item["code"] for item in json.loads(result.stdout)}
    assert codes == {"DPR001", "DPR002"} - suppressed
    run("--fix", "model.py", cwd=project)
    fixed = (project / "model.py").read_text()
    assert ("flatten_parameters()" in fixed) == (not suppressed)


def test_unparsable_file_gets_one_error_line_and_the_rest_is_still_linted(project):
    (project / "broken.py").write_text("import torch.nn as nn\nclass LSTMish(nn.Module:\n    pass\n")
    result = run(".", cwd=project)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    errors = result.stderr.splitlines()
    assert len(errors) == 1
    assert errors[0].startswith("error: ./broken.py:2:") or errors[0].startswith("error: broken.py:2:")
    assert "cannot parse" in errors[0]
    assert "model.py:12:18: DPR001" in result.stdout
    assert "1 file could not be linted" in result.stdout


def test_undecodable_file_gets_one_error_line(project):
    (project / "latin.py").write_bytes(b"# lstm model\nname = '\xe9t\xe9'\n")
    result = run("latin.py", cwd=project)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: latin.py: cannot decode")


def test_missing_path_is_reported_not_raised(project):
    result = run("nowhere.py", "model.py", cwd=project)
    assert result.returncode == 1
    assert "error: nowhere.py: no such file or directory" in result.stderr
    assert "model.py:12:18" in result.stdout


def test_fix_leaves_unfixable_findings_and_exits_1(project):
    source = BUGGY.replace(
        "        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True)\n", ""
    ).replace("def forward(self, x, lengths):", "def forward(self, packed):")
    (project / "model.py").write_text(source)
    result = run("--fix", "model.py", cwd=project)
    assert result.returncode == 1
    assert "DPR002" in result.stdout and "(1 fixed, 1 remaining)" in result.stdout


@pytest.mark.parametrize(
    "expression",
    ["'(' * 3000 + '1' + ')' * 3000", "'1+' * 20000 + '1'", "'-' * 5000 + '1'"],
    ids=["parentheses", "operator-chain", "unary-chain"],
)
def test_deeply_nested_file_is_an_error_line_not_a_crash(project, expression):
    (project / "deep.py").write_text("rnn = " + eval(expression) + "\n")
    result = run(".", cwd=project)
    assert result.returncode == 1
    assert result.stderr.startswith("error: ./deep.py:") or result.stderr.startswith("error: deep.py:")
    assert "cannot parse" in result.stderr and "Traceback" not in result.stderr
    assert "model.py:12:18: DPR001" in result.stdout


def test_internal_error_is_one_line_and_the_run_goes_on(project, monkeypatch):
    from dp_rnn_lint import engine

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(engine, "_violations", broken)
    result = engine.lint_source(BUGGY.encode(), "model.py")
    assert result.problem.startswith("internal error while analysing (KeyError")


def test_fix_does_not_touch_a_read_only_file(project):
    target = project / "model.py"
    target.chmod(0o444)
    result = run("--fix", "model.py", cwd=project)
    assert result.returncode == 1
    assert "error: model.py: read-only file; not fixed" in result.stderr
    assert target.read_text() == BUGGY
    assert oct(target.stat().st_mode & 0o777) == "0o444"


def test_a_fix_that_could_not_be_written_is_not_remembered_by_the_cache(project):
    # The read-only file's finding is reported (it was not fixed), and once the file is writable again
    # the next run, with the same cache, still finds it.
    target = project / "model.py"
    target.chmod(0o444)
    cache = ["--cache-dir", str(project / "cache")]
    first = run("--fix", *cache, "--format", "concise", ".", cwd=project)
    assert first.returncode == 1 and "error: model.py: read-only file; not fixed" in first.stderr
    assert "model.py:12:18: DPR001" in first.stdout
    target.chmod(0o644)
    second = run(*cache, "--format", "concise", ".", cwd=project)
    assert "model.py:12:18: DPR001" in second.stdout and "error" not in second.stderr


NO_COLON = "import torch.nn as nn\n\n\nclass Head(nn.Module):\n    def forward(self, x)\n        return x\n"


@pytest.mark.parametrize("cached", [False, True])
def test_a_file_named_on_the_command_line_gets_its_syntax_error_whatever_its_words(project, cached):
    (project / "broken.py").write_text(NO_COLON)
    cache = ["--cache-dir", str(project / "cache")] if cached else ["--no-cache"]
    for _ in range(2 if cached else 1):  # the second run is answered from the cache
        result = run(*cache, "broken.py", cwd=project)
        assert result.returncode == 1
        assert "error: broken.py:5:25: cannot parse: expected ':'" in result.stderr
    from_stdin = run("--no-cache", "-", cwd=project, stdin=NO_COLON)
    assert from_stdin.returncode == 1 and "error: -:5:25: cannot parse: expected ':'" in from_stdin.stderr


def test_a_folder_walk_keeps_the_word_screen_for_files_that_cannot_hold_a_finding(project):
    # Documented: a walk parses only files whose words could lead to a finding, as the speed needs.
    (project / "broken.py").write_text(NO_COLON)
    (project / "model.py").write_text(CLEAN)
    result = run("--no-cache", ".", cwd=project)
    assert result.returncode == 0 and "broken.py" not in result.stderr


def test_fix_keeps_the_file_mode(project):
    target = project / "model.py"
    target.chmod(0o751)
    assert run("--fix", "--unsafe-fixes", "model.py", cwd=project).returncode == 0
    assert oct(target.stat().st_mode & 0o777) == "0o751"
    assert not [p.name for p in project.iterdir() if p.name.startswith(".dp-rnn-lint-")]


def test_fifo_and_overlong_names_get_an_error_line_not_a_hang(project):
    import os

    os.mkfifo(project / "pipe.py")
    result = run("pipe.py", "x" * 5000 + ".py", "model.py", cwd=project)
    assert "error: pipe.py: not a regular file" in result.stderr
    assert "File name too long" in result.stderr
    assert "Traceback" not in result.stderr
    assert "model.py:12:18" in result.stdout


def test_closed_output_pipe_ends_quietly(project):
    completed = subprocess.run(
        f"{sys.executable} -m dp_rnn_lint . | head -c 10", shell=True, cwd=project, capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in completed.stderr and "BrokenPipe" not in completed.stderr


def test_explicitly_named_file_is_linted_even_when_excluded(project):
    result = run("--exclude", "model.py", "model.py", cwd=project)
    assert "model.py:12:18" in result.stdout


def test_diff_shows_a_latin1_file_in_its_own_encoding(project):
    source = "# -*- coding: latin-1 -*-\n" + BUGGY.replace("lengths):", "lengths):  # modèle")
    (project / "model.py").write_bytes(source.encode("latin-1"))
    result = run("--diff", "model.py", cwd=project)
    assert "def forward(self, x, lengths):  # modèle" in result.stdout


def test_verify_runs_the_model_and_reports(project):
    (project / "runnable.py").write_text(
        BUGGY
        + "\n\ndef make_model():\n    import torch\n    torch.manual_seed(0)\n    return Encoder().eval()\n\n\n"
        "def make_inputs():\n    import torch\n    torch.manual_seed(0)\n"
        "    return torch.randn(5, 7, 8), torch.tensor([7, 6, 5, 3, 2])\n"
    )
    result = run("verify", "runnable.py", cwd=project)
    assert result.returncode == 1, result.stderr
    assert "RNN submodule `lstm` (LSTM)" in result.stdout
    assert "Gather got an input of invalid size" in result.stdout
    run("--fix", "--unsafe-fixes", "runnable.py", cwd=project)
    fixed_run = run("verify", "runnable.py", cwd=project)
    assert fixed_run.returncode == 0, fixed_run.stdout
    assert fixed_run.stdout.strip().endswith("ok")


@pytest.mark.parametrize(
    "args, message",
    [
        (["verify", "nowhere.py"], "error: nowhere.py: no such file"),
        (["verify", "model.py"], "error: model.py: defines no function make_model()"),
        (["verify", "model.py", "--model-factory", "Encoder", "--inputs-factory", "missing"], "defines no function missing()"),
    ],
)
def test_verify_problems_are_one_line_and_exit_2(project, args, message):
    result = run(*args, cwd=project)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_verify_help_says_it_runs_user_code(project):
    assert "IMPORTS AND RUNS" in run("verify", "--help", cwd=project).stdout


RUNNABLE_TAIL = (
    "\n\ndef make_model():\n    import torch\n    torch.manual_seed(0)\n    return Encoder().eval()\n\n\n"
    "def make_inputs():\n    import torch\n    torch.manual_seed(0)\n"
    "    return torch.randn(5, 7, 8), torch.tensor([7, 6, 5, 3, 2])\n"
)


@pytest.mark.parametrize(
    "extra, message",
    [
        ("\nraise SystemExit(0)\n", "importing it raised SystemExit: 0"),
        ("\nimport argparse\nargparse.ArgumentParser().parse_args()\nraise SystemExit(0)\n", "importing it raised SystemExit"),
        ("\nraise ValueError('one\\nfake.py: DataParallel check: ok')\n", "importing it raised ValueError: one"),
    ],
    ids=["sys-exit", "argparse", "multi-line-error"],
)
def test_verify_never_passes_a_file_it_could_not_check(project, extra, message):
    (project / "runnable.py").write_text(BUGGY + RUNNABLE_TAIL + extra)
    result = run("verify", "runnable.py", cwd=project)
    assert result.returncode == 2
    assert message in result.stderr
    assert "fake.py" not in result.stderr and result.stderr.count("\n") == 1
    assert result.stdout == ""


def test_verify_device_cuda_without_a_gpu_is_one_line_and_runs_nothing(project):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("checks what happens on a machine without CUDA")
    (project / "runnable.py").write_text("print('the file ran')\n" + BUGGY + RUNNABLE_TAIL)
    result = run("verify", "runnable.py", "--device", "cuda", cwd=project)
    assert result.returncode == 2
    assert result.stderr.startswith("dp-rnn-lint verify: error: --device cuda: no CUDA device (torch ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_verify_device_cpu_runs_the_emulation(project):
    (project / "runnable.py").write_text(BUGGY + RUNNABLE_TAIL)
    result = run("verify", "runnable.py", "--device", "cpu", cwd=project)
    assert result.returncode == 1, result.stderr
    assert "DataParallel check (cpu emulation, 2 replicas)" in result.stdout


def test_verify_loads_files_as_python_would(project):
    (project / "helpers.py").write_text("def seed():\n    import torch\n    torch.manual_seed(0)\n")
    source = (
        "from __future__ import annotations\n"
        + BUGGY
        + "\n\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Sizes:\n    hidden: int = 16\n\n\n"
        + RUNNABLE_TAIL.replace("    import torch\n    torch.manual_seed(0)\n    return Encoder()",
                                "    from helpers import seed\n    seed()\n    Sizes()\n    return Encoder()")
    )
    (project / "runnable.py").write_text(source)
    result = run("verify", "runnable.py", cwd=project)
    assert result.returncode == 1, result.stderr
    assert "RNN submodule `lstm`" in result.stdout


def write_model_package(project: Path, init: str) -> None:
    """models/encoder.py, runnable, taking make_inputs from its package's inputs.py (a relative import)."""
    package = project / "models"
    package.mkdir()
    (package / "__init__.py").write_text(init)
    (package / "inputs.py").write_text(RUNNABLE_TAIL.split("def make_inputs")[1].join(["def make_inputs", ""]))
    (package / "encoder.py").write_text(BUGGY + RUNNABLE_TAIL.split("def make_inputs")[0] + "from .inputs import make_inputs  # noqa: E402\n")


def test_verify_imports_package_modules_with_relative_imports(project):
    write_model_package(project, "")
    result = run("verify", "models/encoder.py", cwd=project)
    assert result.returncode == 1, result.stderr
    assert "RNN submodule `lstm`" in result.stdout


def test_verify_escapes_a_forging_file_name(project):
    name = "esc\x1b[2J\nFAKE: ok.py"
    (project / name).write_text(BUGGY + RUNNABLE_TAIL)
    result = run("verify", name, cwd=project)
    assert "\x1b" not in result.stdout
    assert not any(line.startswith("FAKE") for line in result.stdout.splitlines())


def run_stdin(args, data: bytes, cwd):
    return subprocess.run([sys.executable, "-m", "dp_rnn_lint", *args], cwd=cwd, input=data, capture_output=True, timeout=60)


def test_stdin_is_linted_under_the_given_name(project):
    result = run_stdin(["-", "--stdin-filename", "pkg/model.py"], BUGGY.encode(), project)
    assert result.returncode == 1
    assert result.stdout.decode().startswith("pkg/model.py:12:18: DPR001")


def test_stdin_fix_writes_the_fixed_source_to_stdout_and_no_file(project):
    result = run_stdin(["-", "--fix", "--unsafe-fixes", "--stdin-filename", "model.py"], BUGGY.encode(), project)
    assert result.returncode == 0, result.stderr
    assert b"        self.lstm.flatten_parameters()\n" in result.stdout
    assert b"total_length=x.size(1)" in result.stdout
    assert (project / "model.py").read_text() == BUGGY


def test_stdin_cannot_be_mixed_with_paths(project):
    assert run_stdin(["-", "model.py"], b"", project).returncode == 2


def test_statistics_count_findings_per_code(project):
    result = run("--statistics", "model.py", cwd=project)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["1", "DPR001", "*"]
    assert lines[1].split()[:2] == ["1", "DPR002"] and lines[1].split()[2] != "*"  # unsafe: not applied by --fix
    with_unsafe = run("--statistics", "--unsafe-fixes", "model.py", cwd=project).stdout.splitlines()
    assert with_unsafe[1].split()[:3] == ["1", "DPR002", "*"]


def test_exit_zero_and_quiet(project):
    result = run("--exit-zero", "--quiet", "--format", "concise", "model.py", cwd=project)
    assert result.returncode == 0
    assert len(result.stdout.splitlines()) == 2 and "Found" not in result.stdout


def test_show_fixes_lists_what_fix_changed_per_file_and_code(project):
    (project / "second.py").write_text(BUGGY.replace("out, _ = pad_packed_sequence(out, batch_first=True)", "pass"))
    result = run("--fix", "--unsafe-fixes", "--show-fixes", "model.py", "second.py", "head.py", cwd=project)
    assert result.returncode == 0
    assert result.stdout.splitlines()[:6] == [
        "Fixed 3 errors:",
        "- model.py:",
        "    1 \u00d7 DPR001 (rnn-without-flatten-parameters)",
        "    1 \u00d7 DPR002 (pad-packed-sequence-without-total-length)",
        "- second.py:",
        "    1 \u00d7 DPR001 (rnn-without-flatten-parameters)",
    ]


def test_show_fixes_keeps_json_output_parseable(project):
    result = run("--fix", "--unsafe-fixes", "--show-fixes", "--format", "json", "model.py", cwd=project)
    assert json.loads(result.stdout) == []
    assert "Fixed 2 errors:" in result.stderr


def test_verify_template_filled_with_a_model_fails_before_the_fix_and_passes_after(tmp_path):
    # The template, filled in as a user would: the model's import and constructor, nothing else. The
    # model's package runs code in its __init__.py that the check cannot import (an optional dependency).
    template = run("verify", "--template", cwd=tmp_path)
    assert template.returncode == 0 and template.stderr == ""
    compile(template.stdout, "check_my_model.py", "exec")
    package = tmp_path / "my_project"
    package.mkdir()
    (package / "__init__.py").write_text("import an_optional_dependency_nobody_installed  # noqa: F401\n")
    (package / "models.py").write_text((FIXTURES / "DPR002" / "faq_lstm_batch_first.py").read_text()
                                       + "\n\nMyModel = PackedLSTMRegressor\n")
    (tmp_path / "check_my_model.py").write_text(template.stdout)
    blocked = run("verify", "check_my_model.py", cwd=tmp_path)
    assert blocked.returncode == 2 and "an_optional_dependency_nobody_installed" in blocked.stderr
    before = run("verify", "--skip-package-init", "check_my_model.py", cwd=tmp_path)
    assert before.returncode == 1, before.stdout + before.stderr
    assert "Gather got an input of invalid size" in before.stdout
    run("--fix", "--unsafe-fixes", "my_project/models.py", cwd=tmp_path)
    after = run("verify", "--skip-package-init", "check_my_model.py", cwd=tmp_path)
    assert after.returncode == 0, after.stdout + after.stderr
    assert after.stdout.strip().endswith("ok")


def test_verify_skips_the_init_of_the_package_a_file_is_in(project):
    write_model_package(project, "raise ImportError('this package needs a GPU build of something')\n")
    assert run("verify", "models/encoder.py", cwd=project).returncode == 2
    result = run("verify", "--skip-package-init", "models/encoder.py", cwd=project)
    assert result.returncode == 1, result.stderr
    assert "RNN submodule `lstm`" in result.stdout


def test_verify_without_a_file_asks_for_one_or_the_template(project):
    result = run("verify", cwd=project)
    assert result.returncode == 2
    assert "give FILE, or --template to write one" in result.stderr and "Traceback" not in result.stderr
