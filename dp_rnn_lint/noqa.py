"""`# noqa` comments, read the way flake8 reads them so that the CLI and the plugin agree; file-level
suppression; what `--add-noqa` writes; and which of our codes a directive lists in vain (DPR100)."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .findings import Finding

# flake8's own pattern: `# noqa`, `# noqa: DPR001`, `# NOQA:DPR001,DPR002` (codes or prefixes).
NOQA_PATTERN = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
# A line that starts with it silences the whole file. flake8's form as flake8 7 matches it: whatever
# follows (even codes) it silences every code, and after code on the line it is no directive. Ours
# is a line of its own and may list codes, as ruff's `# ruff: noqa: F401` does.
_FLAKE8_FILE_NOQA = re.compile(r"^[ \t]*# flake8[:=][ \t]*noqa", re.IGNORECASE | re.MULTILINE)
_OWN_FILE_NOQA = re.compile(r"^[ \t]*#[ \t]*dp-rnn-lint:[ \t]*noqa(?:[ \t]*:[ \t]*(?P<codes>[A-Z0-9, \t]+?))?[ \t]*$",
                            re.IGNORECASE | re.MULTILINE)

UNUSED_NOQA = "DPR100"
UNUSED_NOQA_NAME = "unused-noqa"
UNUSED_NOQA_SUMMARY = "noqa comment listing a code that silences nothing on its line"
UNUSED_NOQA_PAGE = f"""# {UNUSED_NOQA}: `noqa` comment listing a code that silences nothing on its line.

Name: `{UNUSED_NOQA_NAME}`. Opt-in, as ruff's RUF100: `--extend-select {UNUSED_NOQA}` (or `extend-select =
["{UNUSED_NOQA}"]` in `[tool.dp-rnn-lint]`); selecting `DPR` alone does not enable it. The command line only: flake8
applies `noqa` comments itself and does not tell a plugin which ones it used.

## What it does
Reports a `# noqa: DPRnnn` comment that lists one of this tool's enabled rule codes for which nothing on
its line is reported.

## Why is this bad?
A suppression left behind after the code was fixed hides the next real finding on that line. Only this
tool's codes are checked: a bare `# noqa` and other tools' codes (`E501`) may silence findings this
tool cannot see, so they are never reported. Under `--scope wrapped`, a class outside the scope has no
findings, so its comments count as unused there.

## Example
```python
out = self.rnn(x)  # noqa: DPR001
```
where `forward` already calls `self.rnn.flatten_parameters()`.

Use instead:
```python
out = self.rnn(x)
```

## Fix
None automatic: remove the listed code (or the comment) by hand.
"""


def noqa_lines(source: str) -> Dict[int, str]:
    """Map each line number to the text searched for `noqa`: the physical line, or every line of a
    token that spans several (a multi-line string), as flake8 does."""
    return {number: joined for number, (joined, _) in _line_groups(source).items()}


def _line_groups(source: str) -> Dict[int, Tuple[str, int]]:
    """Each line number to (the text of its group of lines, the group's last line)."""
    lines = source.splitlines(keepends=True)
    mapping: Dict[int, Tuple[str, int]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {number: (line, number) for number, line in enumerate(lines, start=1)}
    low, high = len(lines) + 2, -1
    for token in tokens:
        if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        low, high = min(low, token.start[0]), max(high, token.end[0])
        if token.type in (tokenize.NL, tokenize.NEWLINE):
            joined = "".join(lines[low - 1:high])
            for number in range(low, high + 1):
                mapping[number] = (joined, high)
            low, high = len(lines) + 2, -1
    for number, line in enumerate(lines, start=1):
        mapping.setdefault(number, (line, number))
    return mapping


def _listed(codes: str) -> List[str]:
    return [c.upper() for c in re.split(r"[,\s]+", codes.strip()) if c]


def is_suppressed(code: str, text: str) -> bool:
    match = NOQA_PATTERN.search(text)
    if match is None:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    listed = _listed(codes)
    return code in listed or code.startswith(tuple(listed))


def file_suppression(text: str) -> Optional[Tuple[str, ...]]:
    """What a file-level directive silences: None (nothing), () (every code), or the codes and prefixes
    `# dp-rnn-lint: noqa: DPR001` lists."""
    if "noqa" not in text.lower():
        return None
    if _FLAKE8_FILE_NOQA.search(text):
        return ()
    codes: List[str] = []
    for match in _OWN_FILE_NOQA.finditer(text):
        if match.group("codes") is None:
            return ()
        codes += _listed(match.group("codes"))
    return tuple(codes) if codes else None


def without_file_suppressed(findings: Iterable[Finding], text: str) -> List[Finding]:
    findings = list(findings)
    silenced = file_suppression(text) if findings else None
    if silenced is None:
        return findings
    return [f for f in findings if silenced and not f.code.startswith(silenced)]


def without_suppressed(findings: Iterable[Finding], text: str) -> List[Finding]:
    """The findings no `# noqa` comment (on their line, or for the whole file) silences."""
    findings = list(findings)
    if not findings or "noqa" not in text.lower():
        return findings  # nothing to tokenize for
    findings = without_file_suppressed(findings, text)
    lines = noqa_lines(text)
    return [f for f in findings if not is_suppressed(f.code, lines.get(f.line, ""))]


@dataclass(frozen=True)
class _Directive:
    line: int
    col: int  # 1-based column of the `#`
    end_col: int  # exclusive
    codes: Tuple[str, ...]  # () for a bare `# noqa`


def _directives(text: str) -> List[_Directive]:
    """The `# noqa` comments of the text (comments only: a `# noqa` inside a string is not one to report)."""
    found = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = NOQA_PATTERN.search(token.string)
        if match is None:
            continue
        codes = tuple(_listed(match.group("codes"))) if match.group("codes") else ()
        start = token.start[1] + match.start()
        found.append(_Directive(token.start[0], start + 1, token.start[1] + match.end() + 1, codes))
    return found


def unused_directives(findings: Sequence[Finding], text: str, path: str, enabled: Sequence[str]) -> List[Finding]:
    """DPR100 findings: a `# noqa: DPRnnn` listing one of our enabled codes that silences no finding of it
    on its line. `findings`: the file's findings before any noqa applied. Other tools' codes and bare
    `# noqa` are never reported: this tool cannot know what they silence."""
    if "noqa" not in text.lower():
        return []
    if file_suppression(text) == ():
        return []  # the whole file is silenced: line directives in it say nothing
    groups = _line_groups(text)
    reported = []
    for directive in _directives(text):
        ours = [code for code in directive.codes if code in enabled]
        if not ours:
            continue
        # A finding is on the directive's line when its line's group ends where the directive's does.
        _, last = groups.get(directive.line, ("", directive.line))
        used = {f.code for f in findings if groups.get(f.line, ("", f.line))[1] == last}
        unused = [code for code in ours if code not in used]
        if unused:
            listed = ", ".join(f"`{code}`" for code in unused)
            reported.append(Finding(path, directive.line, directive.col, UNUSED_NOQA,
                                    f"unused `noqa` directive (unused: {listed}): nothing on this line is reported as "
                                    f"{'that code' if len(unused) == 1 else 'those codes'}; remove "
                                    f"{'it' if len(unused) == 1 else 'them'} from the comment",
                                    end_line=directive.line, end_col=directive.end_col))
    return reported


def with_noqa_added(text: str, findings: Sequence[Finding]) -> Tuple[str, int]:
    """The text with `# noqa: CODE` for every finding, merged into a `# noqa: ...` comment already there,
    and how many comments were added or extended. A comment goes at the end of the finding's logical
    line when a token (a multi-line string, a backslash continuation) carries it past its own line, so
    no line is ever broken; a finding already silenced there adds nothing (a second run changes nothing)."""
    if not findings:
        return text, 0
    lines = text.splitlines(keepends=True)
    groups = _line_groups(text)
    wanted: Dict[int, List[str]] = {}
    for finding in findings:
        joined, last = groups.get(finding.line, (lines[finding.line - 1] if finding.line <= len(lines) else "", finding.line))
        if is_suppressed(finding.code, joined):
            continue
        codes = wanted.setdefault(last, [])
        if finding.code not in codes:
            codes.append(finding.code)
    changed = 0
    for number, codes in sorted(wanted.items()):
        if number > len(lines):
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        match = NOQA_PATTERN.search(body)
        if match is not None and match.group("codes"):
            listed = _listed(match.group("codes"))
            merged = ", ".join(listed + [code for code in codes if code not in listed])
            rest = body[match.end():].lstrip(", \t")
            body = body[:match.start()] + f"# noqa: {merged}" + (f"  {rest}" if rest else "")
        else:
            body = body.rstrip() + f"  # noqa: {', '.join(codes)}"
        lines[number - 1] = body + ending
        changed += 1
    return "".join(lines), changed
