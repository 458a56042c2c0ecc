"""Turn findings into output. Each reporter gets every file's result and writes one stream."""

from __future__ import annotations

import importlib
from typing import Callable

from ..escaping import printable

# Each format's module and function, imported when the format is asked for: the JSON and SARIF
# modules load json and hashlib, which a run printing text never needs.
_REPORTERS = {
    "text": ("text", "report_text"), "concise": ("text", "report_concise"), "json": ("json", "report_json"),
    "sarif": ("sarif", "report_sarif"), "github": ("github", "report_github"),
}
FORMATS = tuple(sorted(_REPORTERS))
# Formats that carry each fix's edits: the engine computes them only for these.
FORMATS_WITH_EDITS = frozenset({"json", "sarif"})


def reporter(name: str) -> Callable:
    module, function = _REPORTERS[name]
    return getattr(importlib.import_module(f".{module}", __name__), function)


__all__ = ["FORMATS", "FORMATS_WITH_EDITS", "printable", "reporter"]
