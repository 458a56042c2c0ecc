"""Turn findings into output. Each reporter gets every file's result and writes one stream."""

from __future__ import annotations

from ..escaping import printable
from .github import report_github
from .json import report_json
from .sarif import report_sarif
from .text import report_concise, report_text

REPORTERS = {"text": report_text, "concise": report_concise, "json": report_json, "sarif": report_sarif, "github": report_github}
# Formats that carry each fix's edits: the engine computes them only for these.
FORMATS_WITH_EDITS = frozenset({"json", "sarif"})

__all__ = ["FORMATS_WITH_EDITS", "REPORTERS", "printable"]
