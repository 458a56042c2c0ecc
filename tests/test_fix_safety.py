"""Cases where a fix would have written wrong code: each is now fixed correctly or left unfixed."""

from __future__ import annotations

import time

import pytest

from dp_rnn_lint.engine import lint_source

from .helpers import findings, fixed, messages

HEADER = "import torch.nn as nn\nfrom torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n\n"


def encoder(forward_body: str, init: str = "self.rnn = nn.GRU(4, 4)") -> str:
    return HEADER + (
        "class Encoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        {init}\n"
        "\n"
        "    def forward(self, x, lengths):\n"
        f"{forward_body}"
    )


def test_getattr_of_a_non_rnn_name_is_not_an_rnn():
    source = encoder("        self.rnn.flatten_parameters()\n        return self.act(self.rnn(x)[0])\n",
                     init="self.rnn = nn.GRU(4, 4)\n        self.act = getattr(nn, activation)()")
    assert findings(source) == []


def test_method_shared_with_a_class_where_the_attribute_is_not_an_rnn_gets_no_fix():
    source = """\
    import torch.nn as nn

    class Base(nn.Module):
        def forward(self, x):
            return self.rnn(x)

    class Recurrent(Base):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(8, 8)

    class Linear(Base):
        def __init__(self):
            super().__init__()
            self.rnn = nn.Linear(8, 8)
    """
    assert [code for _, code in findings(source)] == ["DPR001"]
    assert "flatten_parameters" not in fixed(source)


def test_pack_with_keyword_unpacking_is_not_fixed():
    body = (
        "        self.rnn.flatten_parameters()\n"
        "        packed = pack_padded_sequence(x, lengths, **self.options)\n"
        "        out, _ = self.rnn(packed)\n"
        "        return pad_packed_sequence(out, batch_first=True)[0]\n"
    )
    source = encoder(body)
    [message] = messages(source)
    assert "**kwargs" in message and fixed(source) == source


@pytest.mark.parametrize(
    "pack_line",
    [
        "        x = x.transpose(0, 1); x = pack_padded_sequence(x, lengths)\n",
        "        if lengths is None:\n            pass\n        elif self.pack: x = pack_padded_sequence(x, lengths)\n",
    ],
    ids=["shared-line", "elif-suite"],
)
def test_no_local_is_inserted_where_it_would_measure_the_wrong_value(pack_line):
    body = (
        "        self.rnn.flatten_parameters()\n"
        f"{pack_line}"
        "        x, _ = self.rnn(x)\n"
        "        x, _ = pad_packed_sequence(x)\n"
        "        return x\n"
    )
    source = encoder(body)
    assert [code for _, code in findings(source, code="DPR002")] == ["DPR002"]
    assert fixed(source, code="DPR002") == source


def test_deleted_name_counts_as_rebound():
    body = (
        "        self.rnn.flatten_parameters()\n"
        "        packed = pack_padded_sequence(x, lengths, batch_first=True)\n"
        "        del x  # free memory\n"
        "        out, _ = self.rnn(packed)\n"
        "        return pad_packed_sequence(out, batch_first=True)[0]\n"
    )
    result = fixed(encoder(body))
    assert "        total_length = x.size(1)\n        packed = pack_padded_sequence(" in result
    assert "pad_packed_sequence(out, batch_first=True, total_length=total_length)[0]" in result


@pytest.mark.parametrize(
    "line",
    ["        self.rnn.weight_hh_l0 = w; out, _ = self.rnn(x)\n", "        if self.training: self.rnn.weight_hh_l0 = w; out, _ = self.rnn(x)\n"],
)
def test_weight_replacement_on_the_rnn_line_is_reported_without_a_fix(line):
    source = encoder(line + "        return out\n").replace("def forward(self, x, lengths)", "def forward(self, x, w)")
    result = lint_source(source.encode(), "model.py", fix=True)
    assert result.fixed is None
    assert [(f.code, f.fixable) for f in result.findings] == [("DPR001", False)]


def test_comments_in_an_exploded_call_stay_on_their_arguments():
    body = (
        "        self.rnn.flatten_parameters()\n"
        "        out, _ = self.rnn(pack_padded_sequence(x, lengths, batch_first=True))\n"
        "        out, _ = pad_packed_sequence(\n"
        "            out,  # the packed output\n"
        "            batch_first=True,  # batch dimension first\n"
        "        )\n"
        "        return out\n"
    )
    assert (
        "            out,  # the packed output\n"
        "            batch_first=True,  # batch dimension first\n"
        "            total_length=x.size(1),\n"
        "        )\n"
    ) in fixed(encoder(body))


def test_a_statement_libcst_cannot_reproduce_exactly_is_not_rewritten():
    source = encoder("        return self.rnn(x)[0]\n")
    data = source.replace("    def forward", "\x0c    def forward")  # a form feed inside the class
    result = lint_source(data.encode(), "model.py", fix=True)
    assert result.fixed is None
    assert "cannot be fixed safely" in result.problem


def test_cr_only_line_endings_are_kept_where_the_fixed_statement_reproduces_exactly():
    # libcst does not write the whole of this module back as it was, but the class it fixes it does:
    # only that statement is regenerated, so every other byte stays.
    source = encoder("        return self.rnn(x)[0]\n").replace("\n", "\r")
    result = lint_source(source.encode(), "model.py", fix=True)
    assert result.problem is None
    assert result.fixed == source.replace(
        "    def forward(self, x, lengths):\r",
        "    def forward(self, x, lengths):\r        self.rnn.flatten_parameters()\r",
    ).encode()


def test_docstring_sharing_its_line_with_code_gets_no_fix():
    source = encoder('        """Run the GRU."""; out, _ = self.rnn(x)\n        return out\n')
    assert [code for _, code in findings(source)] == ["DPR001"]
    assert fixed(source) == source


def test_nested_helpers_called_twice_stay_linear():
    levels = 40
    lines = [HEADER, "class Deep(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.rnn = nn.GRU(4, 4)\n"]
    lines.append("    def forward(self, x):\n        return self.h0(x) + self.h0(x)\n")
    for level in range(levels):
        following = f"self.h{level + 1}(x) + self.h{level + 1}(x)" if level + 1 < levels else "self.rnn(x)[0]"
        lines.append(f"    def h{level}(self, x):\n        return {following}\n")
    start = time.perf_counter()
    assert [code for _, code in findings("".join(lines))] == ["DPR001"]
    assert time.perf_counter() - start < 5


def test_flatten_through_named_modules_counts():
    body = (
        "        for _, module in self.named_modules():\n"
        "            if isinstance(module, nn.RNNBase):\n"
        "                module.flatten_parameters()\n"
        "        return self.rnn(x)[0]\n"
    )
    assert findings(encoder(body)) == []


def test_rnn_subclass_that_flattens_itself_needs_nothing():
    source = HEADER + (
        "class SelfFlatteningGRU(nn.GRU):\n"
        "    def forward(self, x):\n"
        "        self.flatten_parameters()\n"
        "        return super().forward(x)\n\n"
    ) + encoder("        return self.rnn(x)[0]\n", init="self.rnn = SelfFlatteningGRU(4, 4)")[len(HEADER):]
    assert findings(source) == []


def test_method_taking_the_packed_sequence_second_is_not_traced_through():
    body = (
        "        self.rnn.flatten_parameters()\n"
        "        packed = pack_padded_sequence(x, lengths, batch_first=True)\n"
        "        out, _ = self.combine(lengths, packed)\n"
        "        return pad_packed_sequence(out, batch_first=True)[0]\n"
        "\n"
        "    def combine(self, lengths, packed):\n"
        "        return self.rnn(packed)\n"
    )
    source = encoder(body)
    assert [code for _, code in findings(source, code="DPR002")] == ["DPR002"]
    assert fixed(source, code="DPR002") == source
