"""What a file's code means, computed once and shared by every rule.

`FileAnalysis` (libcst) is imported on first use: the cheap `screen` must not bring libcst with it.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:  # PEP 562
    if name == "FileAnalysis":
        from .file_analysis import FileAnalysis

        return FileAnalysis
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FileAnalysis"]
