"""DPR006 in a class DataParallel wraps: state set in forward is flagged when something outside the call
uses it, here a training script in another file of the project, and not when only the call itself does."""

from __future__ import annotations

import shutil

import pytest

from .conftest import FIXTURES
from .test_project_recall import expected, flake8, run
from .test_scope import located

SAMPLE = FIXTURES / "projects" / "tracker_project"


@pytest.fixture
def project(tmp_path):
    target = tmp_path / "tracker_project"
    shutil.copytree(SAMPLE, target)
    return target


def test_state_another_file_reads_is_flagged_by_the_cli_and_flake8_alike(project):
    want = expected(project, "any")
    assert want == {("tracker/model.py", 19, "DPR006")}
    whole = run(project, "--no-cache")
    assert located(whole.stdout) == want, whole.stdout
    one_file = run(project / "tracker", "--no-cache", "model.py")
    assert located(one_file.stdout) == {("model.py", 19, "DPR006")}, one_file.stdout
    plugin = flake8(project, "tracker/model.py")
    assert located(plugin.stdout) == want, plugin.stdout


def test_the_finding_goes_when_the_other_file_stops_reading_the_state(project):
    assert located(run(project).stdout) == {("tracker/model.py", 19, "DPR006")}
    train = project / "train.py"
    train.write_text(train.read_text().replace("tracker.module.last_loss", "0.0"))
    # The cached result of model.py, which did not change, must not survive the change elsewhere.
    result = run(project)
    assert located(result.stdout) == set(), result.stdout
