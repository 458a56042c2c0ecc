"""Keep what the user's files contain from forging output lines or terminal escapes."""

from __future__ import annotations


def printable(text: str, keep_newlines: bool = False) -> str:
    """`text` with control characters (newlines, ESC...) and unpaired surrogates written as escapes."""
    if keep_newlines:
        return "\n".join(printable(line) for line in text.split("\n"))
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else char.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for char in text)
