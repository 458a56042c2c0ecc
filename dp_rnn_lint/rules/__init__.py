"""Every rule, in code order, with what each needs from the cheap stages and the project index, and the
Selection of them a run turns on.

A new rule is a new module here plus its entry in REGISTRY: the screen, the engine, the CLI and the tests
loop over this data and name no code. What a rule needs is declared in its entry rather than in its module
because every run reads it before libcst is loaded, and the rule modules import libcst: the rules (and
libcst) are loaded on first use of ALL_RULES or RULES_BY_CODE, so a run whose files never reach the
analysis, and option checking, need only this file.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Tuple, Union

from ..analysis.screen import FORWARD_PASS, RNN_CLASS, CallSeed, ScreenNeeds
from ..noqa import UNUSED_NOQA

if TYPE_CHECKING:
    from .base import Rule

# Parts of the project index a rule may need. Every rule asks which classes are modules (their bases may
# live in other files); DPR004-like rules also need the classes DataParallel wraps directly.
MODULE_CLASSES = "module classes"
WRAP_TARGETS = "wrap targets"
ROOT_MODULES = "root modules"  # module classes no other module holds (checked in the default scope)
FIX_SAFETIES = ("safe", "unsafe", "safe or unsafe", "none")  # "safe or unsafe": decided per finding


@dataclass(frozen=True)
class RuleNeeds:
    # What the rule's findings start from, as the cheap screen looks for it: screen.RNN_CLASS (a class
    # holding a torch RNN), screen.FORWARD_PASS (any forward) or a CallSeed (a call of a torch function,
    # perhaps missing an argument).
    starts_from: Tuple[Union[str, CallSeed], ...]
    index: Tuple[str, ...] = (MODULE_CLASSES,)
    fix: str = "none"  # one of FIX_SAFETIES; the rule's page says why
    # A rule whose precision on reviewed real findings is below 0.9 runs only in preview mode (`--preview`,
    # `preview = true`), as ruff keeps its unstable rules, until it gets there (benchmarks/review.tsv).
    preview: bool = False


@dataclass(frozen=True)
class RuleEntry:
    module: str  # a module of this package (relative name) or any importable module (absolute name)
    needs: RuleNeeds


REGISTRY: Tuple[RuleEntry, ...] = (
    RuleEntry("dpr001_flatten_parameters", RuleNeeds((RNN_CLASS,), fix="safe")),
    RuleEntry("dpr002_pad_packed_total_length",
              RuleNeeds((CallSeed("pad_packed_sequence", missing=("total_length", 3)),), fix="unsafe")),
    RuleEntry("dpr003_pack_lengths_on_gpu", RuleNeeds((CallSeed("pack_padded_sequence"),), fix="safe or unsafe")),
    RuleEntry("dpr004_hidden_state_crosses_data_parallel",
              RuleNeeds((RNN_CLASS,), (MODULE_CLASSES, WRAP_TARGETS, ROOT_MODULES))),
    RuleEntry("dpr005_data_parallel_wraps_rnn",
              RuleNeeds((CallSeed("DataParallel", in_forward=False, given_rnn=True),
                         CallSeed("data_parallel", in_forward=False, given_rnn=True)))),
    RuleEntry("dpr006_module_state_lost_on_replicas", RuleNeeds((FORWARD_PASS,), preview=True)),
    RuleEntry("dpr007_pads_to_replica_length",
              RuleNeeds((CallSeed("pad_sequence"),
                         # Padding by hand: a tensor of zeros (or a fill value) sized to the longest sequence.
                         *(CallSeed(name, sized_by_max=True) for name in ("zeros", "new_zeros", "full", "new_full"))),
                        (MODULE_CLASSES, WRAP_TARGETS))),
    RuleEntry("dpr008_packed_sequence_crosses_data_parallel",
              RuleNeeds((RNN_CLASS, CallSeed("pad_packed_sequence"), CallSeed("pack_padded_sequence"),
                         CallSeed("pack_sequence"), CallSeed("PackedSequence")), (MODULE_CLASSES, WRAP_TARGETS))),
)


def _code_of(module: str) -> str:
    # Each module is named after its rule's code (a test checks that the classes agree).
    return module.rsplit(".", 1)[-1].split("_", 1)[0].upper()


RULE_MODULES: Tuple[str, ...] = tuple(entry.module for entry in REGISTRY)
RULE_CODES: Tuple[str, ...] = tuple(_code_of(entry.module) for entry in REGISTRY)
NEEDS_BY_CODE: Dict[str, RuleNeeds] = {_code_of(entry.module): entry.needs for entry in REGISTRY}


def register(entry: RuleEntry) -> None:
    """Add a rule from another package (`entry.module` an absolute module name), before any run reads
    the registry: the test of a new rule's journey through every stage uses it."""
    global REGISTRY, RULE_MODULES, RULE_CODES
    REGISTRY += (entry,)
    RULE_MODULES += (entry.module,)
    RULE_CODES += (_code_of(entry.module),)
    NEEDS_BY_CODE[_code_of(entry.module)] = entry.needs
    for name in _LAZY[:2]:
        globals().pop(name, None)
    _screen_needs.cache_clear()
    candidate_words.cache_clear()


@functools.lru_cache(maxsize=64)
def _screen_needs(codes: Tuple[str, ...]) -> ScreenNeeds:
    seeds = [seed for code in codes if code in NEEDS_BY_CODE for seed in NEEDS_BY_CODE[code].starts_from]
    return ScreenNeeds(calls=frozenset(seed for seed in seeds if isinstance(seed, CallSeed)), rnn_class=RNN_CLASS in seeds,
                       forward_pass=FORWARD_PASS in seeds)


def screen_needs(codes: Iterable[str]) -> ScreenNeeds:
    """What the screen must look for on behalf of these codes."""
    return _screen_needs(tuple(codes))


@functools.lru_cache(maxsize=8)
def candidate_words(codes: Tuple[str, ...] = ()) -> Tuple[Tuple[bytes, ...], ...]:
    """Groups of lower-case words: a file that holds every word of no group is one in which no rule can
    find anything, and it is never parsed. The stable rules count whatever is selected (a file that
    mentions an RNN gets its syntax checked); a preview rule only when selected (DPR006 looks at every
    forward)."""
    counted = tuple(_code_of(entry.module) for entry in REGISTRY if not entry.needs.preview) + tuple(codes)
    return _screen_needs(tuple(sorted(set(counted)))).words()


def needing_index_part(codes: Iterable[str], part: str) -> Tuple[str, ...]:
    """The codes among these whose rules need that part of the project index."""
    return tuple(code for code in codes if code in NEEDS_BY_CODE and part in NEEDS_BY_CODE[code].index)


def needs_index(codes: Iterable[str]) -> bool:
    return any(code in NEEDS_BY_CODE and NEEDS_BY_CODE[code].index for code in codes)


@dataclass(frozen=True)
class Selection:
    """Which codes are on: the longest matching prefix of --select and --ignore decides."""

    select: Tuple[str, ...] = ("DPR",)
    ignore: Tuple[str, ...] = ()
    preview: bool = False  # the rules still in preview run too (ruff's --preview)
    # Words besides rnn, lstm, gru and cell that mark a class chosen by a run-time name as an RNN's
    # (`getattr(nn, recurrent_kind)`): the `extend-rnn-words` setting. Part of the selection because it
    # changes what is found, and so the cache key.
    rnn_words: Tuple[str, ...] = ()

    def enabled(self, code: str) -> bool:
        needs = NEEDS_BY_CODE.get(code)
        if needs is not None and needs.preview and not self.preview:
            return False
        # DPR100 (unused noqa) is opt-in, as ruff's RUF100: `DPR` alone does not turn it on.
        opt_in = code == UNUSED_NOQA
        selected = max((len(p) for p in self.select
                        if p == "ALL" or (code.startswith(p) and not (opt_in and len(p) <= len("DPR")))), default=-1)
        ignored = max((len(p) for p in self.ignore if p == "ALL" or code.startswith(p)), default=-1)
        return selected >= 0 and selected > ignored

    def codes(self) -> List[str]:
        """The enabled codes, known without loading the rules."""
        return [code for code in RULE_CODES if self.enabled(code)]

    def rules(self) -> List["Rule"]:
        return [rule.with_preview_modes() if self.preview else rule for rule in _loaded("ALL_RULES")
                if self.enabled(rule.code)]

    @property
    def reports_unused_noqa(self) -> bool:
        return self.enabled(UNUSED_NOQA)


_LAZY = ("ALL_RULES", "RULES_BY_CODE", "Rule", "Example")


def _load() -> None:
    from .base import Example, Rule

    rules = []
    for name in RULE_MODULES:
        module = importlib.import_module(name if "." in name else f"{__name__}.{name}")
        [rule_class] = [value for value in vars(module).values()
                        if inspect.isclass(value) and issubclass(value, Rule) and value.__module__ == module.__name__]
        rules.append(rule_class())
    globals().update(ALL_RULES=tuple(rules), RULES_BY_CODE={rule.code: rule for rule in rules}, Rule=Rule, Example=Example)


def _loaded(name: str) -> Any:
    if name not in globals():
        _load()
    return globals()[name]


def __getattr__(name: str) -> Any:  # PEP 562
    if name in _LAZY:
        return _loaded(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


RULES_BY_CODE: Dict[str, Any]
__all__ = ["ALL_RULES", "FIX_SAFETIES", "MODULE_CLASSES", "NEEDS_BY_CODE", "REGISTRY", "RULES_BY_CODE", "RULE_CODES",
           "RULE_MODULES", "ROOT_MODULES", "WRAP_TARGETS", "Example", "Rule", "RuleEntry", "RuleNeeds", "candidate_words",
           "needing_index_part", "needs_index", "register", "screen_needs"]
