"""SARIF 2.1.0, as GitHub code scanning and other SARIF viewers read it: one run, every rule with its
documentation, one result per finding (with its fix as replacements), and the files that could not be
linted as the invocation's notifications.

Lines and columns are 1-based and columns count characters (`columnKind` says so: SARIF has no default).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, TextIO
from urllib.parse import quote

from .. import __version__, docs, rules
from ..findings import FileResult, Finding, TextEdit
from .text import located_problem

if TYPE_CHECKING:
    from ..rules.base import Rule

TOOL_NAME = "dp-rnn-lint"
INFORMATION_URI = "https://github.com/dp-rnn-lint/dp-rnn-lint"
SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
RULE_TAGS = ("pytorch", "data-parallel", "rnn")
# Versioned, so that a change of what goes into the fingerprint does not silently match old alerts.
FINGERPRINT_KEY = "dpRnnLint/v1"


def artifact_uri(path: str) -> str:
    """The file as a URI: a relative path stays relative (forward slashes, percent-encoded, as code
    scanning resolves it against the repository root); an absolute one becomes a file:// URI."""
    pure = PurePath(path)
    if pure.is_absolute():
        return Path(path).as_uri()
    # From the file name's bytes, so that names that are not valid UTF-8 still give a valid URI.
    return quote(os.fsencode(pure.as_posix()), safe="/")


def _section(documentation: str, title: str) -> str:
    """One section of a rule's page (`## What it does` ...), as one line of text."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", documentation, re.MULTILINE | re.DOTALL)
    return " ".join(match.group(1).split()) if match else ""


def rule_descriptor(rule: Rule) -> dict:
    documentation = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _section(documentation, "What it does") or rule.summary},
        "help": {"text": documentation, "markdown": docs.rule_page(rule)},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": list(RULE_TAGS)},
    }


def _region(line: int, col: int, end_line: Optional[int] = None, end_col: Optional[int] = None) -> dict:
    region = {"startLine": line, "startColumn": col}
    if end_line is not None and end_col is not None:
        region.update(endLine=end_line, endColumn=end_col)
    return region


def _replacement(edit: TextEdit) -> dict:
    # SARIF's endColumn is exclusive like ours; a pure insertion is an empty region (start == end).
    return {
        "deletedRegion": _region(edit.line, edit.col, edit.end_line, edit.end_col),
        "insertedContent": {"text": edit.content},
    }


def fix_object(finding: Finding, uri: str) -> Optional[dict]:
    """The fix as replacements on the file as read; an unsafe fix says so in its description and
    carries ruff's applicability in its properties."""
    if finding.fix is None or not finding.edits:
        return None
    description = finding.fix.description + ("" if finding.fix.safe else " (unsafe)")
    return {
        "description": {"text": description},
        "artifactChanges": [{"artifactLocation": {"uri": uri}, "replacements": [_replacement(e) for e in finding.edits]}],
        "properties": {"applicability": finding.fix.applicability},
    }


def _fingerprints(findings: Sequence[Finding]) -> List[str]:
    """For each finding, a hash of its code, path and message, plus its occurrence number among equal
    hashes: it stays the same when code above the finding moves it to another line."""
    seen: Counter = Counter()
    fingerprints = []
    for finding in findings:
        identity = "\0".join((finding.code, finding.path, finding.message)).encode("utf-8", "surrogateescape")
        digest = hashlib.sha256(identity).hexdigest()[:32]
        seen[digest] += 1
        fingerprints.append(f"{digest}:{seen[digest]}")
    return fingerprints


def result_object(finding: Finding, rule_index: int, fingerprint: str) -> dict:
    uri = artifact_uri(finding.path)
    region = _region(finding.line, finding.col, finding.end_line, finding.end_col)
    result = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": "error",
        "message": {"text": f"{finding.message} ({finding.code})"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
    }
    if finding.cell is not None:
        # A notebook's lines count within a cell, which SARIF has no field for (ruff's JSON names it `cell`).
        result["properties"] = {"cell": finding.cell}
    fix = fix_object(finding, uri)
    if fix is not None:
        result["fixes"] = [fix]
    return result


def _notification(path: str, text: str, level: str) -> dict:
    return {
        "level": level,
        "message": {"text": located_problem(path, text)},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri(path)}}}],
    }


def invocation_object(results: Sequence[FileResult]) -> dict:
    """Files that could not be linted are errors, files skipped (too large) are notes; the run counts
    as successful only when every file was linted, as the exit status does."""
    notifications = []
    for result in results:
        if result.problem is not None:
            notifications.append(_notification(result.path, result.problem, "error"))
        if result.note:
            notifications.append(_notification(result.path, result.note, "note"))
    return {
        "executionSuccessful": all(r.problem is None for r in results),
        "toolExecutionNotifications": notifications,
    }


def unused_noqa_descriptor() -> dict:
    from ..noqa import UNUSED_NOQA, UNUSED_NOQA_NAME, UNUSED_NOQA_PAGE, UNUSED_NOQA_SUMMARY

    return {
        "id": UNUSED_NOQA,
        "name": UNUSED_NOQA_NAME,
        "shortDescription": {"text": UNUSED_NOQA_SUMMARY},
        "fullDescription": {"text": _section(UNUSED_NOQA_PAGE, "What it does")},
        "help": {"text": UNUSED_NOQA_PAGE, "markdown": UNUSED_NOQA_PAGE},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": list(RULE_TAGS)},
    }


def sarif_log(results: Sequence[FileResult]) -> dict:
    from ..noqa import UNUSED_NOQA

    descriptors = [rule_descriptor(rule) for rule in rules.ALL_RULES]
    findings = [finding for result in results for finding in result.findings]
    if any(finding.code == UNUSED_NOQA for finding in findings):
        descriptors.append(unused_noqa_descriptor())
    rule_index: Dict[str, int] = {descriptor["id"]: index for index, descriptor in enumerate(descriptors)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": descriptors,
                    }
                },
                "invocations": [invocation_object(results)],
                "columnKind": "unicodeCodePoints",
                "results": [
                    result_object(finding, rule_index[finding.code], fingerprint)
                    for finding, fingerprint in zip(findings, _fingerprints(findings))
                ],
            }
        ],
    }


def report_sarif(results: Sequence[FileResult], out: TextIO) -> None:
    json.dump(sarif_log(results), out, indent=2)
    out.write("\n")
