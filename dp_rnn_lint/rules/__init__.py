"""Every rule, in code order. A new rule is a new module here plus its entry in ALL_RULES."""

from __future__ import annotations

from typing import Dict, Tuple

from .base import Example, Rule
from .dpr001_flatten_parameters import FlattenParameters
from .dpr002_pad_packed_total_length import PadPackedTotalLength

ALL_RULES: Tuple[Rule, ...] = (FlattenParameters(), PadPackedTotalLength())
RULES_BY_CODE: Dict[str, Rule] = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "Example", "Rule"]
