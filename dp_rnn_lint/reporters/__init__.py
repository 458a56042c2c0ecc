"""Turn findings into output. Each reporter gets every file's result and writes one stream."""

from __future__ import annotations

from ..escaping import printable
from .json import report_json
from .text import report_text

REPORTERS = {"text": report_text, "json": report_json}

__all__ = ["REPORTERS", "printable"]
