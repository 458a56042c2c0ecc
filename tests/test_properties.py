"""Property tests: any input is survived, and on generated models a fix is exactly the intended edit.

The default run is deterministic and quick; DP_RNN_LINT_EXAMPLES raises the number of examples
(for example DP_RNN_LINT_EXAMPLES=5000 for a long run). Counts are printed in pytest's summary.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

import pytest

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dp_rnn_lint.engine import Selection, check_source, lint_source  # noqa: E402
from .helpers import unscreened_findings  # noqa: E402

EXAMPLES = int(os.environ.get("DP_RNN_LINT_EXAMPLES", "60"))
PROPERTY_SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# Read by conftest's terminal summary: how many inputs each property saw, and how many failed.
COUNTS: dict = {}


def count(name: str, failed: bool = False) -> None:
    seen, failures = COUNTS.get(name, (0, 0))
    COUNTS[name] = (seen + 1, failures + (1 if failed else 0))


def survives(data: bytes) -> None:
    result = lint_source(data, "generated.py", fix=True, unsafe_fixes=True)
    assert result.problem is None or "\n" not in result.problem
    if result.fixed is not None:
        compile(result.fixed, "generated.py", "exec", dont_inherit=True)


@PROPERTY_SETTINGS
@given(hypothesmith.from_grammar())
def test_any_valid_program_is_linted_without_raising(source):
    # The comment makes every program pass the pre-filter, so the parser and analysis really run.
    try:
        survives(("# an rnn\n" + source).encode("utf-8", "surrogatepass"))
    except BaseException:
        count("valid programs (hypothesmith)", failed=True)
        raise
    count("valid programs (hypothesmith)")


# A module class that holds an LSTM, with a place for generated code in forward, in a helper forward
# calls, and at module level: the screens let it through, so the model and every rule read the code.
_HOST = """\
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Host(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4, batch_first=True)

    def forward(self, x, lengths):
        out, _ = self.rnn(x)
{forward}
        return self.helper(out)

    def helper(self, out):
{helper}
        return out


{module}
"""


def _hosted(source: str, place: str) -> str:
    body = source if source.strip() else "pass\n"
    indented = "".join(f"        {line}" if line.strip() else line for line in body.splitlines(keepends=True))
    blocks = {"forward": "        pass", "helper": "        pass", "module": ""}
    blocks[place] = body if place == "module" else indented.rstrip("\n")
    return _HOST.format(**blocks)


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # hypothesmith's escapes, compiled here
@PROPERTY_SETTINGS
@given(hypothesmith.from_grammar(), st.sampled_from(["forward", "helper", "module"]))
def test_any_valid_program_inside_a_model_reaches_the_rules_without_raising(source, place):
    from hypothesis import assume

    from dp_rnn_lint import engine

    hosted = _hosted(source, place)
    try:
        compile(hosted, "hosted.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        assume(False)  # `return` at module level, a `from __future__` import indented...
    reached = []
    original = engine._violations
    engine._violations = lambda *args, **kwargs: reached.append(1) or original(*args, **kwargs)
    try:
        survives(hosted.encode("utf-8", "surrogatepass"))
    except BaseException:
        count("valid programs inside a model", failed=True)
        raise
    finally:
        engine._violations = original
    count("valid programs inside a model")
    # The host runs an LSTM in forward: no screen may take the file away from the rules.
    count("valid programs inside a model that reached the rules", failed=not reached)
    assert reached


@PROPERTY_SETTINGS
@given(st.binary(max_size=400).map(lambda data: b"lstm " + data))
def test_any_byte_string_is_linted_without_raising(data):
    try:
        survives(data)
    except BaseException:
        count("byte strings", failed=True)
        raise
    count("byte strings")


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # hypothesmith compiles what it generates
@PROPERTY_SETTINGS
@given(st.one_of(hypothesmith.from_grammar(), st.text(max_size=200)))
def test_the_cheap_parse_accepts_only_what_pythons_parser_accepts(source):
    # Files the text screen rules out are only checked with symtable: a yes there must be ast's yes too,
    # or a file that Python cannot parse would lose its error line.
    from dp_rnn_lint.parse import parses as _parses, python_verdict as _python_verdict

    failed = _parses(source) and _python_verdict(source)[0] is None
    count("cheap parse vs ast.parse", failed=failed)
    assert not failed


# -- generated models ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Spelling:
    imports: str
    rnn: str  # format with the kind: "nn.{kind}"
    pack: str
    pad: str


SPELLINGS = [
    Spelling("import torch.nn as nn\nfrom torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence",
             "nn.{kind}", "pack_padded_sequence", "pad_packed_sequence"),
    Spelling("import torch\nimport torch.nn as nn", "torch.nn.{kind}",
             "torch.nn.utils.rnn.pack_padded_sequence", "torch.nn.utils.rnn.pad_packed_sequence"),
    Spelling("from torch import nn\nimport torch.nn.utils.rnn as rnn_utils", "nn.modules.rnn.{kind}",
             "rnn_utils.pack_padded_sequence", "rnn_utils.pad_packed_sequence"),
    Spelling("import torch.nn as nn\nfrom torch.nn import {kind} as Recurrent\n"
             "from torch.nn.utils.rnn import pack_padded_sequence as pack, pad_packed_sequence as unpack",
             "Recurrent", "pack", "unpack"),
]


@st.composite
def models(draw) -> str:
    spelling = draw(st.sampled_from(SPELLINGS))
    kind = draw(st.sampled_from(["LSTM", "GRU", "RNN"]))
    attr = draw(st.sampled_from(["rnn", "encoder", "lstm", "total_length", "layers"]))
    as_list = draw(st.booleans())
    via_helper = draw(st.booleans())
    already_flattened = draw(st.booleans())
    docstring = draw(st.booleans())
    decorated = draw(st.booleans())
    comment = draw(st.sampled_from(["", "        # run the recurrent encoder\n"]))
    pipeline = draw(st.sampled_from(["none", "pack", "pack-rebinding", "pack-with-total-length"]))
    batch_first = draw(st.sampled_from(["True", "False", "self.batch_first"]))
    collision = draw(st.sampled_from(["", "rnn", "total_length"]))
    indent = draw(st.sampled_from(["    ", "  ", "\t"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    final_newline = draw(st.booleans())
    lengths = draw(st.sampled_from(["lengths", "lengths.cpu()"]))

    rnn = spelling.rnn.format(kind=kind)
    build = (
        f"nn.ModuleList([{rnn}(4, 4, batch_first={batch_first}) for _ in range(2)])"
        if as_list
        else f"{rnn}(4, 4, batch_first={batch_first})"
    )
    run_lines = []
    if collision:
        run_lines.append(f"{collision} = lengths.max()")
    if already_flattened:
        run_lines.append(f"for member in self.{attr}:" if as_list else f"self.{attr}.flatten_parameters()")
        if as_list:
            run_lines.append("    member.flatten_parameters()")
    if pipeline == "none":
        if as_list:
            run_lines += [f"for layer in self.{attr}:", "    x, _ = layer(x)"]
        else:
            run_lines.append(f"x, _ = self.{attr}(x)")
    else:
        packed = "x" if pipeline == "pack-rebinding" else "packed"
        run_lines.append(f"{packed} = {spelling.pack}(x, {lengths}, batch_first={batch_first}, enforce_sorted=False)")
        if as_list:
            run_lines += [f"for layer in self.{attr}:", f"    {packed}, _ = layer({packed})"]
        else:
            run_lines.append(f"{packed}, _ = self.{attr}({packed})")
        total = ", total_length=lengths.size(0) + 0" if pipeline == "pack-with-total-length" else ""
        run_lines.append(f"out, _ = {spelling.pad}({packed}, batch_first={batch_first}{total})")
        run_lines.append("x = out")
    if collision:
        run_lines.append(f"x = x + 0 * {collision}")
    run_lines.append("return x")

    def block(lines, level):
        return "".join(f"{indent * level}{line.replace('    ', indent)}{newline}" for line in lines)

    forward_lines = ['"""Encode a padded batch."""'] if docstring else []
    if via_helper:
        forward_lines.append("return self._encode(x, lengths)")
    else:
        forward_lines += run_lines
    source = spelling.imports.format(kind=kind) + newline * 3
    source += f"def traced(function):{newline}{indent}return function{newline * 3}"
    source += f"class Encoder(nn.Module):{newline}"
    source += block(["def __init__(self, batch_first=True):", "    super().__init__()",
                     "    self.batch_first = batch_first", f"    self.{attr} = {build}"], 1)
    source += newline
    if decorated:
        source += block(["@traced"], 1)
    source += block(["def forward(self, x, lengths):"], 1)
    source += comment.replace("        ", indent * 2).replace("\n", newline)
    source += block(forward_lines, 2)
    if via_helper:
        source += newline + block(["def _encode(self, x, lengths):"], 1) + block(run_lines, 2)
    if not final_newline:
        source = source[: -len(newline)]
    return source


INSERTED_NAMES = ("total_length",)


class _WithoutInsertions(ast.NodeTransformer):
    """Removes what the fixes may add, so the rest of the two trees can be compared."""

    def __init__(self):
        self.removed_statements = 0
        self.removed_arguments = 0
        self.removed_cpu_calls = 0
        self.bound_names = set()  # names the removed statements bind (loop variables, new locals)

    def _inserted(self, node) -> bool:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            return isinstance(func, ast.Attribute) and func.attr == "flatten_parameters"
        if isinstance(node, (ast.For, ast.If)) and all(self._inserted(child) for child in node.body) and not node.orelse:
            return bool(node.body)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            return (
                node.targets[0].id.startswith(INSERTED_NAMES)
                and isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr == "size"
            )
        return False

    def generic_visit(self, node):
        # Top-down, so an inserted loop is recognised before its own body is looked at.
        for field in ("body", "orelse"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                kept = [s for s in statements if not self._inserted(s)]
                for removed in statements:
                    if removed not in kept:
                        self.bound_names |= {n.id for n in ast.walk(removed) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                self.removed_statements += len(statements) - len(kept)
                setattr(node, field, kept or [ast.Pass()])
        if isinstance(node, ast.Call):
            kept = [k for k in node.keywords if k.arg != "total_length"]
            self.removed_arguments += len(node.keywords) - len(kept)
            node.keywords = kept
            # `lengths.cpu()` as an argument reads as `lengths`.
            for index, arg in enumerate(node.args):
                if (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "cpu"
                        and not arg.args and not arg.keywords):
                    node.args[index] = arg.func.value
                    self.removed_cpu_calls += 1
        return super().generic_visit(node)


def stripped(source: bytes):
    transformer = _WithoutInsertions()
    tree = transformer.visit(ast.parse(source))
    return (ast.dump(tree), transformer.removed_statements, transformer.removed_arguments, transformer.bound_names,
            transformer.removed_cpu_calls)


def names_in(source: bytes) -> set:
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}


@PROPERTY_SETTINGS
@given(models())
def test_generated_models_are_fixed_with_exactly_the_intended_edits(source):
    try:
        check_generated_model(source)
    except BaseException:
        count("generated models", failed=True)
        raise
    count("generated models")


def check_generated_model(source: str) -> None:
    data = source.encode()
    compile(data, "model.py", "exec", dont_inherit=True)
    first = lint_source(data, "model.py", Selection(preview=True), fix=True, unsafe_fixes=True)
    assert first.problem is None, first.problem
    before = lint_source(data, "model.py", Selection(preview=True))
    # The cheap screen never hides a finding the analysis makes.
    assert [(f.line, f.col, f.code) for f in check_source(data, "model.py", Selection(preview=True))] == unscreened_findings(data)
    fixable = [f for f in before.findings if f.fixable]
    if first.fixed is None:
        assert not fixable
        return
    fixed = first.fixed
    compile(fixed, "model.py", "exec", dont_inherit=True)

    # The fixed tree is the original tree plus exactly one statement per DPR001 fix, one argument
    # (with, for a rebound name, one statement) per DPR002 fix and one `.cpu()` per DPR003 fix.
    original_tree, original_statements, original_arguments, original_bound, original_cpu = stripped(data)
    fixed_tree, fixed_statements, fixed_arguments, fixed_bound, fixed_cpu = stripped(fixed)
    assert fixed_tree == original_tree
    assert fixed_cpu - original_cpu == sum(1 for f in fixable if f.code == "DPR003")
    flatten_fixes = sum(1 for f in fixable if f.code == "DPR001")
    pad_fixes = sum(1 for f in fixable if f.code == "DPR002")
    pad_fixes_with_a_local = sum(1 for f in fixable if f.code == "DPR002" and "measured before it is packed" in f.message)
    assert fixed_arguments - original_arguments == pad_fixes
    assert fixed_statements - original_statements == flatten_fixes + pad_fixes_with_a_local
    # A name the fix introduces (loop variable, new local) never collides with one the code already uses.
    introduced = fixed_bound - original_bound
    assert not introduced & names_in(data), introduced & names_in(data)

    # Layout survives: line endings, indentation, final newline.
    assert (b"\r\n" in fixed) == (b"\r\n" in data)
    assert fixed.endswith(b"\n") == data.endswith(b"\n")

    again = lint_source(fixed, "model.py", Selection(preview=True), fix=True, unsafe_fixes=True)
    assert again.fixed is None, "a second fix changed the file again"
    # The fixing run checks its edited tree without parsing the new text: it must report what a run
    # over the fixed file reports.
    assert [(f.line, f.col, f.code, f.message) for f in first.findings] == [
        (f.line, f.col, f.code, f.message) for f in again.findings]
    assert all(not f.fixable for f in again.findings)
