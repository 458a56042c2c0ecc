"""`# noqa` comments, read the way flake8 reads them so that the CLI and the plugin agree."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, List

# flake8's own pattern: `# noqa`, `# noqa: DPR001`, `# NOQA:DPR001,DPR002` (codes or prefixes).
NOQA_PATTERN = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)


def noqa_lines(source: str) -> Dict[int, str]:
    """Map each line number to the text searched for `noqa`: the physical line, or every line of a
    token that spans several (a multi-line string), as flake8 does."""
    lines = source.splitlines(keepends=True)
    mapping: Dict[int, str] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {number: line for number, line in enumerate(lines, start=1)}
    low, high = len(lines) + 2, -1
    for token in tokens:
        if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        low, high = min(low, token.start[0]), max(high, token.end[0])
        if token.type in (tokenize.NL, tokenize.NEWLINE):
            joined = "".join(lines[low - 1:high])
            for number in range(low, high + 1):
                mapping[number] = joined
            low, high = len(lines) + 2, -1
    return mapping


def is_suppressed(code: str, text: str) -> bool:
    match = NOQA_PATTERN.search(text)
    if match is None:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    listed: List[str] = [c for c in re.split(r"[,\s]+", codes.strip()) if c]
    return code in listed or code.startswith(tuple(listed))
