"""The SARIF and GitHub Actions formats, run through the command line on the fixtures and on small projects.

tests/schemas/sarif-schema-2.1.0.json is the OASIS SARIF 2.1.0 (errata 01) JSON schema, vendored unchanged
from Schemata/sarif-schema-2.1.0.json of the oasis-tcs/sarif-spec repository; its own id is
https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json. It refers to
nothing outside itself, so validating against it needs no network.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import jsonschema
import pytest

from dp_rnn_lint.engine import decode
from dp_rnn_lint.reporters.github import escape_data, escape_property
from dp_rnn_lint.reporters.sarif import artifact_uri
from dp_rnn_lint.rules import ALL_RULES

from .conftest import FIXTURES
from .test_cli import BUGGY, CLEAN, run

SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def sarif_validator():
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


@pytest.fixture(scope="module")
def fixtures_copy(tmp_path_factory) -> Path:
    """A folder holding a copy of the fixtures as `fixtures/`, so that paths and URIs read `fixtures/DPR001/...`."""
    root = tmp_path_factory.mktemp("linted")
    shutil.copytree(FIXTURES, root / "fixtures")
    return root


@pytest.fixture(scope="module")
def fixtures_sarif(fixtures_copy) -> dict:
    completed = run("--format", "sarif", "fixtures", cwd=fixtures_copy)
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr == ""
    return json.loads(completed.stdout)


@pytest.fixture(scope="module")
def fixtures_json(fixtures_copy) -> list:
    return json.loads(run("--format", "json", "fixtures", cwd=fixtures_copy).stdout)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(BUGGY)
    (tmp_path / "head.py").write_text(CLEAN)
    return tmp_path


def sarif_of(*args: str, cwd: Path) -> dict:
    return json.loads(run("--format", "sarif", *args, cwd=cwd).stdout)


def location(result: dict) -> tuple:
    physical = result["locations"][0]["physicalLocation"]
    return physical["artifactLocation"]["uri"], physical["region"]["startLine"], physical["region"]["startColumn"]


# -- SARIF ----------------------------------------------------------------------------------------------


def test_sarif_of_the_fixtures_is_valid_against_the_official_schema(fixtures_sarif, sarif_validator):
    errors = sorted(sarif_validator.iter_errors(fixtures_sarif), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def test_schema_check_rejects_what_is_not_sarif(sarif_validator):
    assert not sarif_validator.is_valid({"version": "2.1.0", "runs": [{"results": []}]})  # a run needs its tool
    assert not sarif_validator.is_valid({"version": "2.0.0", "runs": []})


def test_sarif_has_one_result_per_finding_at_the_positions_json_reports(fixtures_sarif, fixtures_json):
    [run_object] = fixtures_sarif["runs"]
    assert len(fixtures_json) > 20
    assert [(r["ruleId"], *location(r)) for r in run_object["results"]] == [
        (item["code"], item["path"], item["line"], item["col"]) for item in fixtures_json
    ]
    assert run_object["columnKind"] == "unicodeCodePoints"


def test_sarif_region_spans_the_flagged_code(project):
    results = sarif_of("model.py", cwd=project)["runs"][0]["results"]
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in results]
    assert regions == [
        {"startLine": 12, "startColumn": 18, "endLine": 12, "endColumn": 18 + len("self.lstm(packed)")},
        {"startLine": 13, "startColumn": 18, "endLine": 13, "endColumn": 18 + len("pad_packed_sequence(out, batch_first=True)")},
    ]


def test_sarif_results_name_their_rule_and_end_with_the_code(fixtures_sarif, fixtures_json):
    [run_object] = fixtures_sarif["runs"]
    rules = run_object["tool"]["driver"]["rules"]
    for result, item in zip(run_object["results"], fixtures_json):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == "error"
        assert result["message"]["text"] == f"{item['message']} ({item['code']})"


def test_every_fixable_finding_has_a_sarif_fix_and_no_other(fixtures_sarif, fixtures_json):
    [run_object] = fixtures_sarif["runs"]
    fixable = [item["fixable"] for item in fixtures_json]
    assert any(fixable) and not all(fixable)
    assert ["fixes" in result for result in run_object["results"]] == fixable


def _apply_replacements(text: str, replacements) -> str:
    lines = text.split("\n")

    def offset(line: int, column: int) -> int:
        return sum(len(each) + 1 for each in lines[: line - 1]) + column - 1

    spans = [
        (offset(r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]),
         offset(r["deletedRegion"]["endLine"], r["deletedRegion"]["endColumn"]), order, r["insertedContent"]["text"])
        for order, r in enumerate(replacements)
    ]
    # From the end, so earlier offsets stay right; of two insertions at one place the first listed ends up first.
    for start, end, _, content in sorted(spans, reverse=True):
        text = text[:start] + content + text[end:]
    return text


def test_sarif_fixes_applied_to_each_file_give_what_fix_writes(fixtures_copy, fixtures_sarif, tmp_path):
    replacements = defaultdict(list)
    for result in fixtures_sarif["runs"][0]["results"]:
        for fix in result.get("fixes", []):
            for change in fix["artifactChanges"]:
                assert change["artifactLocation"]["uri"] == location(result)[0]
                replacements[change["artifactLocation"]["uri"]].extend(change["replacements"])
    assert len(replacements) > 10
    fixed_copy = tmp_path / "fixed"
    shutil.copytree(fixtures_copy / "fixtures", fixed_copy / "fixtures")
    run("--fix", "--unsafe-fixes", "fixtures", cwd=fixed_copy)
    for uri, file_replacements in sorted(replacements.items()):
        original = decode((fixtures_copy / uri).read_bytes())
        assert _apply_replacements(original, file_replacements) == decode((fixed_copy / uri).read_bytes()), uri


def test_sarif_labels_unsafe_fixes(project):
    [dpr001, dpr002] = sarif_of("model.py", cwd=project)["runs"][0]["results"]
    safe, unsafe = dpr001["fixes"][0], dpr002["fixes"][0]
    assert safe["properties"] == {"applicability": "safe"}
    assert safe["description"]["text"] == "Insert `self.lstm.flatten_parameters()`"
    assert unsafe["properties"] == {"applicability": "unsafe"}
    assert unsafe["description"]["text"] == "Pass `total_length=x.size(1)` (unsafe)"
    insertion = safe["artifactChanges"][0]["replacements"][0]
    assert insertion == {
        "deletedRegion": {"startLine": 11, "startColumn": 1, "endLine": 11, "endColumn": 1},
        "insertedContent": {"text": "        self.lstm.flatten_parameters()\n"},
    }


def test_sarif_rules_are_every_rule_with_its_documentation(fixtures_sarif):
    driver = fixtures_sarif["runs"][0]["tool"]["driver"]
    assert driver["name"] == "dp-rnn-lint"
    assert driver["informationUri"].startswith("https://")
    assert [rule["id"] for rule in driver["rules"]] == [rule.code for rule in ALL_RULES]
    for descriptor, rule in zip(driver["rules"], ALL_RULES):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"].startswith("Flags ")
        assert descriptor["help"]["text"] == rule.documentation()
        assert "## Why is this bad?" in descriptor["help"]["markdown"]
        assert descriptor["defaultConfiguration"]["level"] == "error"
        assert descriptor["properties"]["tags"]


def test_sarif_lists_rules_even_when_nothing_is_found(project, sarif_validator):
    log = sarif_of("head.py", cwd=project)
    assert sarif_validator.is_valid(log)
    [run_object] = log["runs"]
    assert run_object["results"] == []
    assert len(run_object["tool"]["driver"]["rules"]) == len(ALL_RULES)
    assert run_object["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]


def test_files_that_cannot_be_linted_become_error_notifications(project, sarif_validator):
    (project / "broken.py").write_text("import torch.nn as nn\nclass LSTMish(nn.Module:\n    pass\n")
    (project / "latin.py").write_bytes(b"# lstm model\nname = '\xe9t\xe9'\n")
    completed = run("--format", "sarif", "broken.py", "latin.py", "nowhere.py", "model.py", cwd=project)
    assert completed.returncode == 1
    log = json.loads(completed.stdout)
    assert sarif_validator.is_valid(log)
    [run_object] = log["runs"]
    [invocation] = run_object["invocations"]
    assert invocation["executionSuccessful"] is False
    notifications = invocation["toolExecutionNotifications"]
    assert [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notifications] == [
        "broken.py", "latin.py", "nowhere.py"
    ]
    assert {n["level"] for n in notifications} == {"error"}
    assert notifications[0]["message"]["text"].startswith("broken.py:2:")
    assert "cannot parse" in notifications[0]["message"]["text"]
    assert notifications[1]["message"]["text"].startswith("latin.py: cannot decode")
    assert notifications[2]["message"]["text"] == "nowhere.py: no such file or directory"
    assert [location(r)[0] for r in run_object["results"]] == ["model.py", "model.py"]


def test_a_skipped_file_is_a_note_and_the_run_still_succeeds(project, sarif_validator):
    (project / "generated_lstm.py").write_text("# lstm weights\n" + "x = 1\n" * 200_000)
    log = sarif_of("generated_lstm.py", "head.py", cwd=project)
    assert sarif_validator.is_valid(log)
    [invocation] = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "note"
    assert note["message"]["text"].startswith("generated_lstm.py: skipped: 1.1 MiB")


def test_fingerprints_survive_code_moving_down_and_tell_findings_apart(project):
    before = [r["partialFingerprints"] for r in sarif_of("model.py", cwd=project)["runs"][0]["results"]]
    (project / "model.py").write_text('"""An encoder."""\n\n' + BUGGY)
    moved = sarif_of("model.py", cwd=project)["runs"][0]["results"]
    assert [location(r)[1] for r in moved] == [14, 15]
    assert [r["partialFingerprints"] for r in moved] == before
    assert len({value for fingerprints in before for value in fingerprints.values()}) == 2


@pytest.mark.parametrize(
    "path, uri",
    [
        ("model.py", "model.py"),
        ("pkg/sub dir/model v2.py", "pkg/sub%20dir/model%20v2.py"),
        ("models/a,b:c%d#e?.py", "models/a%2Cb%3Ac%25d%23e%3F.py"),
        ("./models/model.py", "models/model.py"),
        ("../other/model.py", "../other/model.py"),
        ("modèle.py", "mod%C3%A8le.py"),
        ("/srv/project/my model.py", "file:///srv/project/my%20model.py"),
    ],
)
def test_artifact_uris_are_relative_and_percent_encoded_or_file_uris(path, uri):
    assert artifact_uri(path) == uri


def test_sarif_uri_of_a_file_with_odd_characters_in_its_name(project):
    (project / "model,v2 100%.py").write_text(BUGGY)
    results = sarif_of("model,v2 100%.py", cwd=project)["runs"][0]["results"]
    assert {location(r)[0] for r in results} == {"model%2Cv2%20100%25.py"}


# -- GitHub Actions ---------------------------------------------------------------------------------------


def test_github_format_prints_one_error_annotation_per_finding(project):
    completed = run("--format", "github", "model.py", "head.py", cwd=project)
    assert completed.returncode == 1
    # The title names the code and the properties the place: the message is the message alone. The end
    # is the column after the call's closing parenthesis, as the start is its first character's.
    lines = BUGGY.splitlines()
    lstm_end, pad_end = lines[11].rindex(")") + 2, lines[12].rindex(")") + 2
    assert completed.stdout.splitlines() == [
        f"::error title=dp-rnn-lint (DPR001),file=model.py,line=12,col=18,endLine=12,endColumn={lstm_end}::self.lstm "
        "(nn.LSTM) runs in the forward pass without self.lstm.flatten_parameters() before it: under DataParallel every "
        "replica's RNN weights are non-contiguous and get copied on every call",
        f"::error title=dp-rnn-lint (DPR002),file=model.py,line=13,col=18,endLine=13,endColumn={pad_end}::"
        + json.loads(run("--format", "json", "model.py", cwd=project).stdout)[1]["message"],
    ]


def test_github_format_prints_nothing_for_a_clean_file(project):
    completed = run("--format", "github", "head.py", cwd=project)
    assert completed.returncode == 0
    assert completed.stdout == ""


@pytest.mark.parametrize(
    "text, data, value",
    [
        ("plain text", "plain text", "plain text"),
        ("100% sure", "100%25 sure", "100%25 sure"),
        ("a\nb\r\nc", "a%0Ab%0D%0Ac", "a%0Ab%0D%0Ac"),
        ("dir/a,b:c.py", "dir/a,b:c.py", "dir/a%2Cb%3Ac.py"),
        ("%0A is not a newline", "%250A is not a newline", "%250A is not a newline"),
        ("::error::forged", "::error::forged", "%3A%3Aerror%3A%3Aforged"),
    ],
)
def test_workflow_command_escaping(text, data, value):
    assert escape_data(text) == data
    assert escape_property(text) == value


def test_github_annotation_escapes_a_file_name_with_comma_and_percent(project):
    (project / "model,v2 100%.py").write_text(BUGGY)
    lines = run("--format", "github", "model,v2 100%.py", cwd=project).stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(
        "::error title=dp-rnn-lint (DPR001),file=model%2Cv2 100%25.py,line=12,col=18,endLine=12,"
    )


def test_github_annotation_for_a_file_named_with_a_newline_stays_one_line(project):
    name = "forged\n::error file=x.py::fake.py"
    (project / name).write_text(BUGGY)
    lines = run("--format", "github", name, cwd=project).stdout.splitlines()
    assert len(lines) == 2
    assert all(line.startswith("::error title=dp-rnn-lint (DPR00") for line in lines)
    assert "file=forged%0A%3A%3Aerror file=x.py%3A%3Afake.py,line=12," in lines[0]


def test_github_format_gives_a_skipped_file_a_notice(project):
    (project / "generated_lstm.py").write_text("# lstm weights\n" + "x = 1\n" * 200_000)
    lines = run("--format", "github", "generated_lstm.py", cwd=project).stdout.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("::notice title=dp-rnn-lint,file=generated_lstm.py::generated_lstm.py: skipped: 1.1 MiB")


def test_github_format_annotates_files_that_cannot_be_linted(project):
    (project / "broken.py").write_text("import torch.nn as nn\nclass LSTMish(nn.Module:\n    pass\n")
    completed = run("--format", "github", "broken.py", "model.py", cwd=project)
    assert completed.returncode == 1
    lines = completed.stdout.splitlines()
    assert lines[0].startswith("::error title=dp-rnn-lint,file=broken.py::broken.py:2:")
    assert "cannot parse" in lines[0]
    titles = [line.split("::")[1].split(",")[0] for line in lines[1:]]
    assert titles == ["error title=dp-rnn-lint (DPR001)", "error title=dp-rnn-lint (DPR002)"]
