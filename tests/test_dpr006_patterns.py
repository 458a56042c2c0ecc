"""DPR006 on state that a later call reads back, in any module class, and on the writes it must leave alone:
scratch written on every path before it is read, tests that come out the same on every call, writes of
`__init__`'s own value, and a value moved to another device."""

from __future__ import annotations

import pytest

from .helpers import findings

CELL = """\
import torch
import torch.nn as nn


class Cell(nn.Module):
    def __init__(self, size, keep=True):
        super().__init__()
        self.gate = nn.Linear(size, size)
        self.keep = keep
        self.mode = "dep_gating"
        self.count = 0
        self.state = None

    def set_mode(self, mode):
        self.mode = mode

    def helper(self, x, fresh=False):
        {helper}
        return x

    def forward(self, x):
        {body}
        return self.gate(x)
"""


def cell(body: str, helper: str = "pass") -> str:
    return CELL.format(body=body, helper=helper)


def lines(source: str):
    return [line for line, code in findings(source, code="DPR006")]


@pytest.mark.parametrize("body, helper", [
    # A step counter read before the increment, in a module holding no torch RNN at all.
    ("if self.count > 3:\n            x = x * 0\n        self.count = self.count + 1", "pass"),
    # Read inside a helper forward calls, then advanced there.
    ("x = self.helper(x)", "x = x + self.count\n        self.count = self.count + 1"),
    # A hidden state kept for the next batch: read as the initial state, then replaced.
    ("x = x + (0 if self.state is None else self.state)\n        self.state = x.detach()", "pass"),
    # Written only on some calls (a test on the input), read on every call.
    ("if x.dim() > 2:\n            self.state = x.sum()\n        x = x + self.state", "pass"),
    # The mode a method outside forward may change is no steady test.
    ("if self.mode == 'dep':\n            self.state = x.sum()\n        x = x + self.state", "pass"),
    # Nor is training, which model.eval() changes between calls.
    ("if self.training:\n            self.state = x.sum()\n        x = x + self.state", "pass"),
    # A helper parameter the call sets from the input decides.
    ("x = self.helper(x, fresh=x.dim() > 2)\n        x = x + self.state", "if not fresh:\n            self.state = x.sum()"),
])
def test_state_a_later_call_reads_back_is_flagged_in_any_module(body, helper):
    assert lines(cell(body, helper)), cell(body, helper)


@pytest.mark.parametrize("body, helper", [
    # Both arms write before the read.
    ("if x.dim() > 2:\n            self.state = x.sum()\n        else:\n            self.state = x.mean()\n        x = x + self.state", "pass"),
    ("if x.dim() > 3:\n            self.state = x.sum()\n        elif x.dim() > 2:\n            self.state = x.max()\n"
     "        else:\n            self.state = x.mean()\n        x = x + self.state", "pass"),
    # The arm that does not write leaves forward.
    ("if x.dim() > 2:\n            return x\n        self.state = x.sum()\n        x = x + self.state", "pass"),
    ("if x.dim() > 2:\n            self.state = x.sum()\n        else:\n            raise ValueError(x)\n        x = x + self.state", "pass"),
    # A setting only __init__ sets: every call takes the same arm.
    ("if self.keep:\n            self.state = x.sum()\n        x = x + self.state", "pass"),
    ("if self.keep and self.count == 0:\n            self.state = x.sum()\n        x = x + self.state", "pass"),
    ("if not isinstance(self.keep, bool):\n            self.state = x.sum()\n        x = x + self.state", "pass"),
    # A helper's parameter left at its constant default, or passed a constant.
    ("x = self.helper(x)\n        x = x + self.state", "if not fresh:\n            self.state = x.sum()"),
    ("x = self.helper(x, fresh=False)\n        x = x + self.state", "if not fresh:\n            self.state = x.sum()"),
])
def test_state_written_on_every_path_before_it_is_read_is_scratch(body, helper):
    assert lines(cell(body, helper)) == [], cell(body, helper)


def test_a_setting_queried_through_a_method_is_a_steady_test():
    source = cell("if self.config.attnnet.startswith('dep'):\n            self.state = x.sum()\n        x = x + self.state")
    source = source.replace('self.mode = "dep_gating"', 'self.config = config')
    source = source.replace("def __init__(self, size, keep=True):", "def __init__(self, size, config, keep=True):")
    assert lines(source) == []


def test_every_write_of_lost_state_is_reported():
    source = cell("x = x + self.count\n        self.count = self.count + 1\n        if self.count > 9:\n"
                  "            self.count = 5")
    assert len(lines(source)) == 2


@pytest.mark.parametrize("reset, other_method, flagged", [
    ("self.count = 0", "", False),  # __init__'s value again: losing it leaves what __init__ left
    ("self.count, self.state = 0, None", "", False),
    ("self.reset()", "", False),  # the same through a method __init__ runs too
    # Another method moves the attribute away from __init__'s value: losing forward's reset matters.
    ("self.count = 0", "def report(self):\n        self.count += 1\n", True),
])
def test_a_write_of_the_initial_value_is_lost_harmlessly(reset, other_method, flagged):
    source = f"""\
import torch.nn as nn


class Meter(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.reset()

    def reset(self):
        self.count, self.state = 0, None

    {other_method}
    def forward(self, x, start=False):
        if start:
            {reset}
        return self.fc(x) * self.count
"""
    assert bool(lines(source)) == flagged, source


@pytest.mark.parametrize("move", [
    "self.window = self.window.to(x.device)",
    "self.window = self.window.cuda()",
    "self.window = self.window.float().to(x.device)",
    "self.window = self.window.type_as(x)",
])
def test_moving_its_own_value_to_another_device_loses_nothing(move):
    source = cell(f"{move}\n        x = x * self.window.sum()").replace("self.state = None", "self.window = torch.ones(4)")
    assert lines(source) == [], source


def test_a_replaced_value_is_not_a_move():
    source = cell("self.window = self.window * 0.5\n        x = x * self.window.sum()").replace(
        "self.state = None", "self.window = torch.ones(4)")
    assert lines(source)


@pytest.mark.parametrize("last, flagged", [
    ("self.steps = []", False),  # put back to __init__'s value before returning: nothing carries over
    ("self.steps = [0]", True),
    ("", True),
])
def test_state_put_back_before_forward_returns_carries_nothing(last, flagged):
    source = f"""\
import torch.nn as nn


class Stepper(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.steps = []

    def forward(self, xs):
        for x in xs:
            if len(self.steps) == 0:
                self.steps = [x]
            self.steps.append(self.fc(self.steps[-1]))
        out = self.steps[-1]
        {last}
        return out
"""
    assert bool(lines(source)) == flagged, source


@pytest.mark.parametrize("body, reported", [
    # Set when missing, then always replaced before the call ends: only the last write carries state.
    ("if self.state is None:\n            self.state = x.sum()\n        x = x + self.state\n        self.state = x.mean()", [2]),
    # The replacement happens on one path only: the first write may be what the next call finds.
    ("if self.state is None:\n            self.state = x.sum()\n        x = x + self.state\n"
     "        if x.dim() > 2:\n            self.state = x.mean()", [1, 2]),
    # An early return keeps the first write as the call's last.
    ("if self.state is None:\n            self.state = x.sum()\n        if x.dim() > 2:\n            return x\n"
     "        x = x + self.state\n        self.state = x.mean()", [1, 2]),
])
def test_only_writes_that_can_outlive_the_call_are_reported(body, reported):
    source = cell(body)
    found = lines(source)
    writes = [number for number, text in enumerate(source.splitlines(), start=1) if "self.state = x." in text]
    assert found == [writes[index - 1] for index in reported], source


ATTENTION = """\
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.query_layer = nn.Linear(size, size)
        self.proj_query = None

    def compute_proj_query(self, query):
        self.proj_query = self.query_layer(query)

    def forward(self, query, keys):
        self.compute_proj_query(query)
        return torch.tanh(self.proj_query + keys)
{other}

model = nn.DataParallel(Attention(4))
"""


@pytest.mark.parametrize("other, flagged", [
    ("", False),  # set up in __init__, read only by the call that wrote it: scratch of the call
    ("\n    def reset(self):\n        self.proj_query = None\n", False),  # set again elsewhere: still no read
    ("\n    def reset(self):\n        self.proj_query: torch.Tensor = None\n", False),
    ("\n    def last_query(self):\n        return self.proj_query\n", True),  # read after the call: lost
])
def test_in_a_wrapped_class_only_a_read_outside_the_call_makes_a_write_state(other, flagged):
    source = ATTENTION.format(other=other)
    line = source.splitlines().index("        self.proj_query = self.query_layer(query)") + 1
    assert lines(source) == ([line] if flagged else [])
