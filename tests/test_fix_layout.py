"""A fix inserts its code and changes nothing else: indentation, line endings, encoding, comments."""

from __future__ import annotations

import pytest

from dp_rnn_lint.engine import lint_source

MODEL = (
    "import torch.nn as nn\n"
    "\n"
    "\n"
    "class Encoder(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.rnn = nn.GRU(4, 4)  # the recurrent layer\n"
    "\n"
    "    def forward(self, x):\n"
    "        # run it\n"
    "        out, _ = self.rnn(x)\n"
    "        return out\n"
)
FIXED = MODEL.replace("    def forward(self, x):\n", "    def forward(self, x):\n        self.rnn.flatten_parameters()\n")


def fix(data: bytes) -> bytes:
    result = lint_source(data, "model.py", fix=True, unsafe_fixes=True)
    assert result.problem is None, result.problem
    assert result.fixed is not None
    return result.fixed


def test_plain_file_gets_one_inserted_line_before_the_comment():
    assert fix(MODEL.encode()) == FIXED.encode()


def test_crlf_line_endings_are_kept():
    assert fix(MODEL.replace("\n", "\r\n").encode()) == FIXED.replace("\n", "\r\n").encode()


def test_tab_indentation_is_kept():
    tabbed = MODEL.replace("        ", "\t\t").replace("    ", "\t")
    expected = FIXED.replace("        ", "\t\t").replace("    ", "\t")
    assert fix(tabbed.encode()) == expected.encode()


def test_byte_order_mark_is_kept():
    assert fix(b"\xef\xbb\xbf" + MODEL.encode()) == b"\xef\xbb\xbf" + FIXED.encode()


def test_latin1_file_with_a_coding_cookie_is_kept_in_latin1():
    header = "# -*- coding: latin-1 -*-\n# modèle de séquence\n"
    data = (header + MODEL).encode("latin-1")
    assert fix(data) == (header + FIXED).encode("latin-1")


def test_missing_final_newline_stays_missing():
    assert fix(MODEL.rstrip("\n").encode()) == FIXED.rstrip("\n").encode()


def test_docstring_stays_first():
    source = MODEL.replace("        # run it\n", '        """Encode a batch."""\n')
    expected = source.replace('        """Encode a batch."""\n', '        """Encode a batch."""\n        self.rnn.flatten_parameters()\n')
    assert fix(source.encode()) == expected.encode()


def test_one_line_forward_becomes_a_block_and_keeps_its_comment():
    source = MODEL.replace(
        "    def forward(self, x):\n        # run it\n        out, _ = self.rnn(x)\n        return out\n",
        "    def forward(self, x): return self.rnn(x)[0]  # one liner\n",
    )
    expected = source.replace(
        "    def forward(self, x): return self.rnn(x)[0]  # one liner\n",
        "    def forward(self, x):\n        self.rnn.flatten_parameters()\n        return self.rnn(x)[0]  # one liner\n",
    )
    assert fix(source.encode()) == expected.encode()


def test_two_rnns_in_one_method_are_flattened_in_order_of_use():
    source = MODEL.replace(
        "        self.rnn = nn.GRU(4, 4)  # the recurrent layer\n",
        "        self.word = nn.LSTM(4, 4)\n        self.char = nn.LSTM(4, 4)\n",
    ).replace("        out, _ = self.rnn(x)\n", "        x, _ = self.char(x)\n        out, _ = self.word(x)\n")
    result = fix(source.encode()).decode()
    assert "    def forward(self, x):\n        self.char.flatten_parameters()\n        self.word.flatten_parameters()\n" in result


@pytest.mark.parametrize("indent", ["  ", "    ", "\t"])
def test_inserted_line_matches_a_class_indented_differently_from_the_file(indent):
    source = (
        "import torch.nn as nn\n"
        "def unrelated():\n"
        "        return 1\n"
        "class Encoder(nn.Module):\n"
        f"{indent}def forward(self, x):\n"
        f"{indent}{indent}return self.rnn(x)\n"
        f"{indent}def __init__(self):\n"
        f"{indent}{indent}super().__init__()\n"
        f"{indent}{indent}self.rnn = nn.GRU(4, 4)\n"
    )
    expected = source.replace(
        f"{indent}def forward(self, x):\n", f"{indent}def forward(self, x):\n{indent}{indent}self.rnn.flatten_parameters()\n"
    )
    assert fix(source.encode()).decode() == expected


def test_mixed_line_endings_are_kept_line_by_line():
    lines = MODEL.splitlines(keepends=True)
    mixed = "".join(line.replace("\n", "\r\n") if index % 2 else line for index, line in enumerate(lines))
    result = fix(mixed.encode()).decode()
    original_lines = mixed.splitlines(keepends=True)
    fixed_lines = result.splitlines(keepends=True)
    inserted = [line for line in fixed_lines if "flatten_parameters" in line]
    assert len(inserted) == 1
    fixed_lines.remove(inserted[0])
    assert fixed_lines == original_lines


def _fixable_sources():
    from .conftest import FIXTURES, golden_path

    return [path for path in sorted(FIXTURES.glob("DPR*/*.py"))
            if not path.name.endswith(".fixed.py") and golden_path(path).exists()]


@pytest.mark.parametrize("path", _fixable_sources(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_splicing_the_touched_statements_writes_what_regenerating_the_module_writes(path):
    # --fix rebuilds only the nodes on the way to each edit, in the statements that hold one: the same
    # code as libcst's transformer over the whole module, wherever the splice is possible at all.
    from dp_rnn_lint import engine, parse
    from dp_rnn_lint.engine import Selection
    from dp_rnn_lint.fixes import apply_edits, spliced_text

    source = path.read_bytes()
    module = parse.parse(source, str(path))
    context = engine.own_context(source, str(path))
    violations, _ = parse.run_with_deep_stack(engine._violations, module, str(path), Selection(preview=True).rules(), context)
    edits = [edit for violation in violations if violation.fix is not None for edit in violation.fix.edits]
    assert edits
    spliced, edited = spliced_text(module, edits, module.code)
    assert spliced == apply_edits(module, edits).code == edited.code


HOISTING = (
    "import torch.nn as nn\n"
    "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n"
    "\n"
    "\n"
    "class Tagger(nn.Module):\n"
    "    def forward(self, tokens, lengths):\n"
    "        # embed and pack\n"
    "        packed = pack_padded_sequence(self.embed(tokens),  # the embeddings\n"
    "                                      lengths.cpu(), batch_first=True)\n"
    "        out, _ = self.rnn(packed)\n"
    "        out, _ = pad_packed_sequence(out, batch_first=True)  # unpack\n"
    "        return out\n"
)
HOISTED = (HOISTING
           .replace("        # embed and pack\n", "        # embed and pack\n        padded = self.embed(tokens)\n")
           .replace("pack_padded_sequence(self.embed(tokens),", "pack_padded_sequence(padded,")
           .replace("batch_first=True)  # unpack", "batch_first=True, total_length=padded.size(1))  # unpack"))


@pytest.mark.parametrize("layout", ["plain", "crlf", "tabs", "bom"])
def test_the_hoisting_fix_changes_only_the_lines_it_writes(layout):
    def shaped(text: str) -> bytes:
        if layout == "crlf":
            text = text.replace("\n", "\r\n")
        if layout == "tabs":
            text = text.replace("        ", "\t\t").replace("    ", "\t")
        return (b"\xef\xbb\xbf" if layout == "bom" else b"") + text.encode()

    assert fix(shaped(HOISTING)) == shaped(HOISTED)
