"""Every rule, in code order. A new rule is a new module here plus its name in RULE_MODULES.

The rules (and libcst, which they import) are loaded on first use of ALL_RULES or RULES_BY_CODE: a run
whose files never reach the analysis, and option checking, need only RULE_CODES.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Dict, Tuple

RULE_MODULES = (
    "dpr001_flatten_parameters",
    "dpr002_pad_packed_total_length",
    "dpr003_pack_lengths_on_gpu",
    "dpr004_hidden_state_crosses_data_parallel",
)
# Each module is named after its rule's code (a test checks that the classes agree).
RULE_CODES: Tuple[str, ...] = tuple(name.split("_", 1)[0].upper() for name in RULE_MODULES)

_LAZY = ("ALL_RULES", "RULES_BY_CODE", "Rule", "Example")


def _load() -> None:
    from .base import Example, Rule

    rules = []
    for name in RULE_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        [rule_class] = [value for value in vars(module).values()
                        if inspect.isclass(value) and issubclass(value, Rule) and value.__module__ == module.__name__]
        rules.append(rule_class())
    globals().update(ALL_RULES=tuple(rules), RULES_BY_CODE={rule.code: rule for rule in rules}, Rule=Rule, Example=Example)


def __getattr__(name: str) -> Any:  # PEP 562
    if name in _LAZY:
        _load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


RULES_BY_CODE: Dict[str, Any]
__all__ = ["ALL_RULES", "RULES_BY_CODE", "RULE_CODES", "RULE_MODULES", "Example", "Rule"]
