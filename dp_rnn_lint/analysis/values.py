"""The typed abstract values the evaluator computes: what an expression can be, as data, never as text.

An expression evaluates to a frozenset of these values (every value it may take on some path). English
appears only when a rule writes a message (`describe_kinds`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import FrozenSet, Iterable, Optional, Tuple, Union

from .torch_names import rnn_kind


class RnnKind(enum.Enum):
    """A torch recurrent layer that has `flatten_parameters()`."""

    RNN = "RNN"
    LSTM = "LSTM"
    GRU = "GRU"


class Why(enum.Enum):
    """Why a value is unknown."""

    PARAMETER = "a parameter whose callers are not followed"
    # Callers elsewhere hand this parameter an RNN; others may hand it something else.
    OTHER_CALLERS = "a parameter other callers may pass something else to"
    EXTERNAL_CALL = "the result of a call into another package"
    UNRESOLVED = "a name that is neither defined nor imported"
    TOO_DEEP = "too many steps to follow"
    RUNTIME_STRING = "a string known only at run time"
    UNSUPPORTED = "an expression the evaluator does not model"


@dataclass(frozen=True)
class External:
    """A name outside the project (`torch.nn.LSTM`, `numpy`), canonical where torch re-exports it.
    `guess`: only one of several classes a run-time string may name (`getattr(nn, name)`): the spellings
    that chose it (the string's expression, the function it is in), empty for a class the code names."""

    qualname: str
    guess: Tuple[str, ...] = ()


@dataclass(frozen=True)
class ProjectClass:
    path: str
    qualname: str


@dataclass(frozen=True)
class ProjectFunction:
    path: str
    qualname: str
    # The class whose instance a bound method runs on (`self.build()`): decides overrides and `self`.
    receiver: Optional[ProjectClass] = None


@dataclass(frozen=True)
class ProjectModule:
    path: str


@dataclass(frozen=True)
class Instance:
    """An object of a class (a torch class or one of the project's)."""

    of: Union[External, ProjectClass]


@dataclass(frozen=True)
class Container:
    """A list, tuple, dict, set or nn.ModuleList/ModuleDict: the union of its members, and for a literal tuple
    or list the members by position (so `rnn, proj = make()` takes the right one)."""

    kind: str
    members: FrozenSet["Value"] = frozenset()
    positions: Optional[Tuple[FrozenSet["Value"], ...]] = None


@dataclass(frozen=True)
class Constant:
    value: Union[str, int, float, bool, None, bytes]


@dataclass(frozen=True)
class Unknown:
    why: Why


Value = Union[External, ProjectClass, ProjectFunction, ProjectModule, Instance, Container, Constant, Unknown]
Values = FrozenSet[Value]
NOTHING: Values = frozenset()


def external(qualname: str, guess: Tuple[str, ...] = ()) -> External:
    """A name outside the project, as the code spells it (`torch.nn.modules.rnn.LSTM`): predicates compare
    canonical names, so a module path is never mistaken for one of torch's re-exported classes."""
    return External(qualname, guess)


def torch_rnn_kind(value: Value) -> Optional[RnnKind]:
    """The kind of a torch RNN class value (`torch.nn.LSTM`), None for anything else."""
    if isinstance(value, External):
        found = rnn_kind(value.qualname)
        return RnnKind(found) if found else None
    return None


@dataclass(frozen=True)
class RnnFact:
    """What an attribute of a module class can hold, as far as RNNs go.

    `kinds`: the torch RNN kinds among its values; `sometimes`: some of its values are something else (a
    custom module, None, a value the evaluator cannot know), so a fix must check before it calls;
    `is_list`: a list or nn.ModuleList of them; `guess`: a kind comes only from a run-time string, and
    `guessed_from` the spellings of the strings that chose it."""

    kinds: FrozenSet[RnnKind]
    sometimes: bool = False
    is_list: bool = False
    guess: bool = False
    maybe_none: bool = False
    reasons: FrozenSet[Why] = field(default_factory=frozenset)
    guessed_from: FrozenSet[str] = field(default_factory=frozenset)
    # Some values are something other than a torch RNN for certain (not only maybe, as a guess's string):
    # a custom module, an unknown.
    other_modules: bool = False


def describe_kinds(kinds: Iterable[RnnKind]) -> str:
    """`nn.LSTM`, `nn.LSTM or nn.GRU`: the kinds as a message names them."""
    ordered = [kind for kind in RnnKind if kind in set(kinds)]
    return " or ".join(f"nn.{kind.value}" for kind in ordered)
