"""The shape every rule has: a code, documentation, examples that drive tests and docs, a check."""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from typing import ClassVar, Iterator, Optional, Tuple

from ..analysis import FileAnalysis
from ..findings import Violation


@dataclass(frozen=True)
class Example:
    """A snippet the rule must flag, and what its fix must turn it into (None: no fix offered)."""

    source: str
    fixed: Optional[str]


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    # Whether the rule's modes still in preview run too (`--preview`): a rule asks it of itself.
    preview_modes: bool = False
    # Code that must not be flagged, and code that must be (with its fixed form).
    valid_examples: ClassVar[Tuple[str, ...]] = ()
    invalid_examples: ClassVar[Tuple[Example, ...]] = ()

    def check(self, analysis: FileAnalysis) -> Iterator[Violation]:
        raise NotImplementedError

    def with_preview_modes(self) -> "Rule":
        """The same rule with its preview modes on."""
        if self.preview_modes:
            return self
        rule = copy.copy(self)
        rule.preview_modes = True
        return rule

    @classmethod
    def documentation(cls) -> str:
        """The rule's page: its module's docstring, written in ruff's sections."""
        return inspect.getdoc(inspect.getmodule(cls)) or ""
