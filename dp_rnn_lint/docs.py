"""The rule pages under docs/rules/, written from each rule's docstring (one source for docs, CLI, tests).

    python -m dp_rnn_lint.docs      # rewrite docs/rules/*.md after changing a rule's docstring
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Dict

from . import rules

if TYPE_CHECKING:
    from .rules.base import Rule

DOCS_FOLDER = Path(__file__).resolve().parent.parent / "docs" / "rules"


def rule_page(rule: Rule) -> str:
    doc = rule.documentation()
    title, _, body = doc.partition("\n")
    return f"# {title}\n\nName: `{rule.name}`\n{body.rstrip()}\n"


def rule_pages() -> Dict[str, str]:
    return {f"{rule.code}.md": rule_page(rule) for rule in rules.ALL_RULES}


def main() -> int:
    DOCS_FOLDER.mkdir(parents=True, exist_ok=True)
    for name, text in rule_pages().items():
        (DOCS_FOLDER / name).write_text(text, encoding="utf-8")
        sys.stdout.write(f"wrote docs/rules/{name}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
