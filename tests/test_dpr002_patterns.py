"""DPR002 on the spellings of pad_packed_sequence, the traces its fix follows, and what it leaves alone."""

from __future__ import annotations

import pytest

from .helpers import findings, fixed, messages

TEMPLATE = """\
import torch.nn as nn
{imports}

class Encoder(nn.Module):
    def forward(self, x, lengths):
        packed = {pack}(x, lengths, batch_first=True)
        out, _ = self.rnn(packed)
        out, _ = {pad}(out, batch_first=True)
        return out
"""


@pytest.mark.parametrize(
    "imports, pack, pad",
    [
        ("from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence", "pack_padded_sequence", "pad_packed_sequence"),
        ("from torch.nn.utils.rnn import pack_padded_sequence as pack, pad_packed_sequence as unpack", "pack", "unpack"),
        ("import torch.nn.utils.rnn as rnn_utils", "rnn_utils.pack_padded_sequence", "rnn_utils.pad_packed_sequence"),
        ("", "nn.utils.rnn.pack_padded_sequence", "nn.utils.rnn.pad_packed_sequence"),
        ("import torch", "torch.nn.utils.rnn.pack_padded_sequence", "torch.nn.utils.rnn.pad_packed_sequence"),
        ("from torch.nn.utils import rnn", "rnn.pack_padded_sequence", "rnn.pad_packed_sequence"),
    ],
)
def test_spellings_are_found_and_fixed(imports, pack, pad):
    source = TEMPLATE.format(imports=imports, pack=pack, pad=pad)
    assert findings(source, code="DPR002") == [(8, "DPR002")]
    assert f"out, _ = {pad}(out, batch_first=True, total_length=x.size(1))" in fixed(source, code="DPR002")


def test_import_inside_forward_counts():
    source = """\
    import torch.nn as nn

    class Encoder(nn.Module):
        def forward(self, x, lengths):
            from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
            out, _ = self.rnn(pack_padded_sequence(x, lengths))
            return pad_packed_sequence(out)[0]
    """
    assert findings(source, code="DPR002") == [(7, "DPR002")]
    assert "pad_packed_sequence(out, total_length=x.size(0))[0]" in fixed(source, code="DPR002")


@pytest.mark.parametrize(
    "call",
    [
        "pad_packed_sequence(out, batch_first=True, total_length=x.size(1))",
        "pad_packed_sequence(out, True, 0.0, x.size(1))",
        "pad_packed_sequence(out, **options)",
        "pad_packed_sequence(*arguments)",
    ],
)
def test_total_length_given_or_possibly_given_is_not_flagged(call):
    source = f"""\
    import torch.nn as nn
    from torch.nn.utils.rnn import pad_packed_sequence

    class Encoder(nn.Module):
        def forward(self, out, x, options, arguments):
            return {call}
    """
    assert findings(source, code="DPR002") == []


def test_calls_off_the_forward_path_are_not_flagged():
    source = """\
    import torch.nn as nn
    from torch.nn.utils.rnn import pad_packed_sequence

    def collate(batch):
        return pad_packed_sequence(batch)

    class Decoder(nn.Module):
        def forward(self, x):
            return x

        def decode_greedy(self, packed):
            return pad_packed_sequence(packed)

    class Loader:
        def forward(self, packed):
            return pad_packed_sequence(packed)
    """
    assert findings(source, code="DPR002") == []


def test_projects_own_function_is_not_torchs():
    source = """\
    import torch.nn as nn

    def pad_packed_sequence(sequence):
        return sequence

    class Encoder(nn.Module):
        def forward(self, packed):
            return pad_packed_sequence(packed)
    """
    assert findings(source, code="DPR002") == []


def test_local_variable_shadowing_the_import_is_not_torchs():
    source = """\
    import torch.nn as nn
    from torch.nn.utils.rnn import pad_packed_sequence

    class Encoder(nn.Module):
        def forward(self, packed, pad_packed_sequence):
            return pad_packed_sequence(packed)
    """
    assert findings(source, code="DPR002") == []


def test_time_first_uses_size_0_and_expression_batch_first_follows_it():
    source = TEMPLATE.format(
        imports="from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence",
        pack="pack_padded_sequence",
        pad="pad_packed_sequence",
    )
    time_first = source.replace("(x, lengths, batch_first=True)", "(x, lengths)")
    assert "total_length=x.size(0)" in fixed(time_first, code="DPR002")
    expression = source.replace("(x, lengths, batch_first=True)", "(x, lengths, batch_first=self.batch_first)")
    assert "total_length=x.size(1 if self.batch_first else 0)" in fixed(expression, code="DPR002")
    positional = source.replace("(x, lengths, batch_first=True)", "(x, lengths, True)")
    assert "total_length=x.size(1)" in fixed(positional, code="DPR002")


def test_name_rebound_by_the_pack_statement_is_measured_before_it():
    source = """\
    import torch.nn as nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    class Encoder(nn.Module):
        def forward(self, x, lengths):
            x = x.transpose(0, 1)
            # pack the time-major batch
            x = pack_padded_sequence(x, lengths)
            x, _ = self.rnn(x)
            x, _ = pad_packed_sequence(x)
            return x
    """
    result = fixed(source, code="DPR002")
    assert (
        "        x = x.transpose(0, 1)\n"
        "        # pack the time-major batch\n"
        "        total_length = x.size(0)\n"
        "        x = pack_padded_sequence(x, lengths)\n"
    ) in result
    assert "x, _ = pad_packed_sequence(x, total_length=total_length)" in result
    assert findings(result, code="DPR002") == []


def test_new_local_does_not_collide_with_existing_names():
    source = """\
    import torch.nn as nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    class Encoder(nn.Module):
        def forward(self, x, lengths, total_length):
            x = pack_padded_sequence(x, lengths)
            x, _ = self.rnn(x)
            return pad_packed_sequence(x)[0][:total_length]
    """
    result = fixed(source, code="DPR002")
    assert "        total_length_1 = x.size(0)\n        x = pack_padded_sequence(x, lengths)\n" in result
    assert "pad_packed_sequence(x, total_length=total_length_1)[0][:total_length]" in result


def test_stacked_rnns_in_a_loop_are_traced():
    source = """\
    import torch.nn as nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    class Encoder(nn.Module):
        def forward(self, feats, lengths):
            packed = pack_padded_sequence(feats, lengths, batch_first=True, enforce_sorted=False)
            for rnn in self.rnns:
                packed, _ = rnn(packed)
            out, _ = pad_packed_sequence(packed, batch_first=True)
            return out
    """
    assert "pad_packed_sequence(packed, batch_first=True, total_length=feats.size(1))" in fixed(source, code="DPR002")


@pytest.mark.parametrize(
    "body, reason",
    [
        ("out, _ = self.rnn(packed)\n        return pad_packed_sequence(out)[0]",
         "the parameter `packed` and nothing here measures the padded input: pass total_length from the caller, "
         "or pack inside the wrapped forward"),
        (
            "packed = pack_padded_sequence(lengths=lengths, input=self.embed(x))\n        out, _ = self.rnn(packed)\n"
            "        return pad_packed_sequence(out)[0]",
            "cannot be moved to a line of its own",
        ),

        ("packed = self._pack(x)\n        return pad_packed_sequence(packed)[0]", "cannot follow"),
    ],
)
def test_untraceable_sequences_are_reported_without_a_fix(body, reason):
    source = f"""\
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

class Encoder(nn.Module):
    def forward(self, x, lengths, packed):
        {body}
"""
    assert [code for _, code in findings(source, code="DPR002")] == ["DPR002"]
    [message] = messages(source, code="DPR002")
    assert reason in message and "no fix is offered" in message
    assert fixed(source, code="DPR002") == source


def test_exploded_call_gets_the_argument_on_its_own_line():
    source = """\
    import torch.nn as nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    class Encoder(nn.Module):
        def forward(self, x, lengths):
            out, _ = self.rnn(pack_padded_sequence(x, lengths, batch_first=True))
            out, _ = pad_packed_sequence(
                out,
                batch_first=True,
            )
            again, _ = self.rnn(pack_padded_sequence(x, lengths, batch_first=True))
            again, _ = pad_packed_sequence(again,
                                           batch_first=True)
            return out, again
    """
    result = fixed(source, code="DPR002")
    assert (
        "        out, _ = pad_packed_sequence(\n"
        "            out,\n"
        "            batch_first=True,\n"
        "            total_length=x.size(1),\n"
        "        )\n"
    ) in result
    assert "pad_packed_sequence(again,\n                                       batch_first=True, total_length=x.size(1))\n" in result


def test_total_length_none_is_the_same_trap_and_is_replaced():
    source = TEMPLATE.format(
        imports="from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence",
        pack="pack_padded_sequence",
        pad="pad_packed_sequence",
    ).replace("(out, batch_first=True)", "(out, batch_first=True, total_length=None)")
    assert findings(source, code="DPR002") == [(8, "DPR002")]
    assert "pad_packed_sequence(out, batch_first=True, total_length=x.size(1))" in fixed(source, code="DPR002")
    positional = source.replace("(out, batch_first=True, total_length=None)", "(out, True, 0.0, None)")
    assert findings(positional, code="DPR002") == [(8, "DPR002")]
    assert fixed(positional, code="DPR002") == positional


HOISTED = """\
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

class Encoder(nn.Module):
    def forward(self, tokens, lengths):
        # embed, then pack
        packed = pack_padded_sequence(self.embed(tokens), lengths, batch_first=True)  # keep me
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        return out
"""


def test_an_expression_packed_is_stored_in_a_local_first():
    assert fixed(HOISTED, code="DPR002") == HOISTED.replace(
        "        # embed, then pack\n        packed = pack_padded_sequence(self.embed(tokens), lengths",
        "        # embed, then pack\n        padded = self.embed(tokens)\n        packed = pack_padded_sequence(padded, lengths",
    ).replace("pad_packed_sequence(out, batch_first=True)", "pad_packed_sequence(out, batch_first=True, total_length=padded.size(1))")


def test_the_hoisted_local_does_not_collide_and_keeps_crlf_line_endings():
    source = HOISTED.replace("return out", "return out, padded").replace("self, tokens", "self, tokens, padded")
    source = source.replace("\n", "\r\n")
    result = fixed(source, code="DPR002")
    assert "padded_1 = self.embed(tokens)\r\n" in result
    assert "pack_padded_sequence(padded_1, lengths" in result and "total_length=padded_1.size(1)" in result
    assert "\n" not in result.replace("\r\n", "")


def test_an_expression_over_several_lines_is_parenthesised_and_a_pack_inside_the_rnn_call_is_hoisted():
    source = """\
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

class Encoder(nn.Module):
    def forward(self, tokens, lengths):
        out, _ = self.rnn(pack_padded_sequence(self.embed(tokens) +
                                               self.position(tokens), lengths))
        return pad_packed_sequence(out)[0]
"""
    result = fixed(source, code="DPR002")
    assert "        padded = (self.embed(tokens) +\n                                               self.position(tokens))\n" in result
    assert "self.rnn(pack_padded_sequence(padded, lengths))" in result
    assert "pad_packed_sequence(out, total_length=padded.size(0))[0]" in result


def test_the_input_given_by_keyword_is_traced():
    source = HOISTED.replace("pack_padded_sequence(self.embed(tokens), lengths, batch_first=True)",
                             "pack_padded_sequence(input=tokens, lengths=lengths, batch_first=True)")
    assert "pad_packed_sequence(out, batch_first=True, total_length=tokens.size(1))" in fixed(source, code="DPR002")


CONDITIONAL = """\
import torch.nn as nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

class PackedLSTM(nn.Module):
    def forward(self, input, lengths, hx=None):
        if not isinstance(input, PackedSequence):
            input = pack_padded_sequence(input, lengths, batch_first=True)
        res = self.lstm(input, hx)
        if self.pad:
            res = (pad_packed_sequence(res[0], batch_first=True)[0], res[1])
        return res
"""


def test_a_conditional_pack_is_measured_in_its_branch_and_none_elsewhere():
    result = fixed(CONDITIONAL, code="DPR002")
    assert result == CONDITIONAL.replace(
        "        if not isinstance(input, PackedSequence):\n",
        "        total_length = None\n        if not isinstance(input, PackedSequence):\n"
        "            total_length = input.size(1)\n",
    ).replace("pad_packed_sequence(res[0], batch_first=True)", "pad_packed_sequence(res[0], batch_first=True, total_length=total_length)")


def test_a_rebuilt_packed_sequence_is_traced_through_its_batch_sizes():
    source = """\
import torch
import torch.nn as nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

class Highway(nn.Module):
    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True)
        h, _ = self.lstm(packed)
        mixed = PackedSequence(h.data + torch.sigmoid(self.gate(packed.data)), packed.batch_sizes)
        return pad_packed_sequence(mixed, batch_first=True)[0]
"""
    assert "pad_packed_sequence(mixed, batch_first=True, total_length=x.size(1))[0]" in fixed(source, code="DPR002")


def test_a_helper_that_packs_its_parameter_is_measured_at_the_call():
    source = """\
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

class CharClassifier(nn.Module):
    def encode(self, enc_inputs, lens):
        packed_inputs = pack_padded_sequence(enc_inputs, lens, batch_first=True)
        packed_h_in, _ = self.encoder(packed_inputs)
        return packed_h_in

    def forward(self, src, lens):
        enc_inputs = self.embedding(src)
        encoded = self.encode(enc_inputs, lens)
        encoded, _ = pad_packed_sequence(encoded, batch_first=True)
        return self.out(encoded)
"""
    assert "pad_packed_sequence(encoded, batch_first=True, total_length=enc_inputs.size(1))" in fixed(source, code="DPR002")


FLOW = """\
import torch
import torch.nn as nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pack_sequence, pad_packed_sequence

class Encoder(nn.Module):
    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True)
        out, _ = self.rnn(packed)
        out, lens = pad_packed_sequence(out, batch_first=True{padding})
        {body}
"""


@pytest.mark.parametrize("body", [
    "return pack_padded_sequence(self.norm(out), lens, batch_first=True)",
    "out = torch.cat([out, self.proj(out)], dim=2)\n        again, _ = self.rnn2(pack_padded_sequence(out, lens, batch_first=True))\n"
    "        return again",
    "steps = []\n        for t in range(out.size(1)):\n            steps.append(self.cell(out[:, t]))\n"
    "        return pack_padded_sequence(torch.stack(steps, 1), lens, batch_first=True)",
    "return PackedSequence(self.proj(out).data, packed.batch_sizes)",
    "return pack_sequence([row[:n] for row, n in zip(out, lens)], enforce_sorted=False)",
    "return self.classify(out.sum(1) / lens.unsqueeze(1))",
    "return self.classify(torch.sum(out, dim=1))",
    "return self.mlp(out[torch.arange(out.size(0)), lens - 1])",
    "print(out.shape)\n        return lens",
    # Padded back out to the input's length with zeros (AllenNLP's wrapper): the same on every replica.
    "steps = x.size(1) - out.size(1)\n        out = torch.cat([out, out.new_zeros(out.size(0), steps, out.size(2))], 1)\n"
    "        return out",
    "batch, total, _ = x.shape\n        missing = total - out.size(1)\n        if missing > 0:\n"
    "            zeros = torch.zeros((batch, missing, out.size(2)))\n            out = torch.cat([out, zeros], dim=1)\n"
    "        return out",
    # ... with the zeros cast or moved to the output's type or device first.
    "full = x.size(1)\n        b, steps, d = out.size()\n        if steps != full:\n"
    "            pad = torch.zeros(b, full - steps, d).type(out.data.type())\n            out = torch.cat([out, pad], 1)\n"
    "        return out",
    "pad = torch.zeros(out.size(0), x.size(1) - out.size(1), 4).to(out.device).float()\n"
    "        return torch.cat([out, pad], 1)",
    # Read at the steps an index names (each word's last character): as many steps as the index has.
    "return torch.gather(out, 1, lengths.unsqueeze(2).expand(-1, -1, out.size(2)) - 1)",
    "return out.gather(1, x.long())",
])
def test_a_padded_tensor_that_never_leaves_is_not_flagged(body):
    assert findings(FLOW.format(padding="", body=body), code="DPR002") == []


@pytest.mark.parametrize("body, words", [
    ("return out", "gathering the outputs fails"),
    ("return {'states': self.proj(out)}", "gathering the outputs fails"),
    ("self.last = out\n        return lens", "stored beyond the call"),
    ("self.cache.append(out)\n        return lens", "stored beyond the call"),
    ("return self.classify(out.mean(1))", "pooled over time with mean()"),
    ("return self.classify(out.max(dim=1)[0])", "pooled over time with max()"),
    ("return self.classify(torch.mean(out, 1))", "pooled over time with mean()"),
    ("return self.classify(out[:, -1])", "gathering the outputs fails"),
    ("return self.classify(out.sum(2))", "gathering the outputs fails"),
    # A negative dimension may be time or not, by the tensor's rank: the message says both.
    ("return self.classify(out.mean(-1))", "reduced with mean() over dimension -1"),
    ("return self.classify(torch.amax(out, dim=-2))", "if -2 is the time dimension, the amax counts"),
    ("self.remember(out)\n        return lens", "gathering the outputs fails"),
    ("def later():\n            return out\n        return later", "gathering the outputs fails"),
    ("yield out", "gathering the outputs fails"),
    # A matrix product may keep the time dimension or run over it (attention pooling): both readings.
    ("weights = torch.softmax(self.score(out), dim=1)\n        return torch.bmm(weights.transpose(1, 2), out).squeeze(1)",
     "goes through a matrix product (torch.bmm) that leaves forward"),
    ("return (self.query(lens) @ out).squeeze(1)", "if it runs over time (attention pooling), weighs"),
    ("self.summary = torch.einsum('bt,btd->bd', self.score(out).squeeze(2), out)\n        return lens",
     "(torch.einsum) that is stored beyond the call"),
    # Padded out with zeros, but not to an input's length: to the replica's own, or along the batch.
    ("steps = lens.max() - out.size(1)\n        return torch.cat([out, out.new_zeros(out.size(0), steps, 4)], 1)",
     "gathering the outputs fails"),
    ("steps = x.size(1) - out.size(1)\n        return torch.cat([out, out.new_zeros(steps, out.size(1), 4)], 0)",
     "gathering the outputs fails"),
    ("steps = out.size(1) - x.size(1)\n        return torch.cat([out, out.new_zeros(out.size(0), steps, 4)], 1)",
     "gathering the outputs fails"),
    ("pad = torch.zeros(out.size(0), int(lens.max()) - out.size(1), 4).type(out.data.type())\n"
     "        return torch.cat([out, pad], 1)", "gathering the outputs fails"),
    ("return torch.gather(out, 2, x.long())", "gathering the outputs fails"),  # along the features: time stays
    # ... or to the length of a mask this replica builds from its own lengths, not an input.
    ("mask = torch.arange(int(lens.max()))[None, :] < lens[:, None]\n"
     "        zeros = out.new_zeros(out.size(0), mask.size(1) - out.size(1), 4)\n        return torch.cat([out, zeros], 1)",
     "gathering the outputs fails"),
    ("full = x.size(1)\n        full: int = int(lens.max())\n"
     "        return torch.cat([out, out.new_zeros(out.size(0), full - out.size(1), 4)], 1)",
     "gathering the outputs fails"),
    # The message names the product that leaves, not the first one made.
    ("energy = torch.einsum('btd,bsd->bts', out, out)\n        proj = out.matmul(self.w)\n        return proj",
     "(.matmul()) that leaves forward"),
    # The padded tensor itself leaving is the plain case, whatever a product of it does.
    ("ctx = torch.bmm(self.score(out).transpose(1, 2), out)\n        h = out * 2\n        h += ctx\n        return h",
     "and gathering the outputs fails"),
    ("return torch.bmm(self.score(out).transpose(1, 2), out), out", "and gathering the outputs fails"),
])
def test_a_padded_tensor_that_leaves_is_flagged_and_says_how(body, words):
    source = FLOW.format(padding="", body=body)
    assert findings(source, code="DPR002") == [(9, "DPR002")]
    [message] = messages(source, code="DPR002")
    assert words in message


def test_a_sum_over_padding_that_is_not_zero_is_flagged():
    source = FLOW.format(padding=", padding_value=-1.0", body="return self.classify(out.sum(1))")
    assert findings(source, code="DPR002") == [(9, "DPR002")]
    assert "pooled over time with sum()" in messages(source, code="DPR002")[0]


# -- where the padded tensor goes in the project's own functions --------------------------------------------
FOLLOWED = """\
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Scorer(nn.Module):
    def forward(self, states, mask):
        {scorer}


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 4, batch_first=True)
        self.scorer = Scorer()

    def features(self, x, lengths):
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        return out, lengths

    def forward(self, x, lengths, mask):
        {forward}
"""


@pytest.mark.parametrize("scorer, forward", [
    # A submodule that sums its input over time (zero padding adds nothing) returns no time dimension.
    ("return (states * mask.unsqueeze(-1)).sum(1)",
     "feats, _ = self.features(x, lengths)\n        return self.scorer(feats, mask)"),
    # ... reached through a keyword argument, and a method of the submodule doing the summing.
    ("return self.pool(states)\n\n    def pool(self, states):\n        return states.sum(dim=1)",
     "feats, _ = self.features(x, lengths)\n        scores = self.scorer(mask=mask, states=feats)\n        return scores"),
    # A helper's return consumed in forward: only the first step leaves (the last, `[:, -1]`, would be padding).
    ("return states",
     "feats, _ = self.features(x, lengths)\n        return feats[:, 0]"),
])
def test_a_padded_tensor_that_a_helper_or_submodule_consumes_is_not_flagged(scorer, forward):
    source = FOLLOWED.format(scorer=scorer, forward=forward)
    assert findings(source, code="DPR002") == []


@pytest.mark.parametrize("scorer, forward, words", [
    # The submodule hands the padded tensor back: forward returns it.
    ("return torch.tanh(states)", "feats, _ = self.features(x, lengths)\n        return self.scorer(feats, mask)",
     "gathering the outputs fails"),
    # The submodule averages over time: the mean counts the replica's own padding.
    ("return states.mean(1)", "feats, _ = self.features(x, lengths)\n        return self.scorer(feats, mask)",
     "mean"),
    # The submodule keeps it on the module.
    ("self.last = states\n        return mask", "feats, _ = self.features(x, lengths)\n        return self.scorer(feats, mask)",
     "stored"),
    # The helper is called twice; the second call's result leaves forward.
    ("return states.sum(1)",
     "feats, _ = self.features(x, lengths)\n        pooled = self.scorer(feats, mask)\n"
     "        again, _ = self.features(x, lengths)\n        return pooled, again",
     "gathering the outputs fails"),
    # Padded on one branch only: it may leave on that one.
    ("return states.sum(1)",
     "if mask is None:\n            feats = x\n        else:\n            feats, _ = self.features(x, lengths)\n"
     "        return feats", "gathering the outputs fails"),
])
def test_a_padded_tensor_that_a_helper_or_submodule_lets_out_is_flagged(scorer, forward, words):
    source = FOLLOWED.format(scorer=scorer, forward=forward)
    line = source.split("out, _ = pad_packed_sequence")[0].count("\n") + 1
    assert findings(source, code="DPR002") == [(line, "DPR002")]
    [message] = messages(source, code="DPR002")
    assert words in message


@pytest.mark.parametrize("guard", [
    "if steps != mask.size(1):",
    "if mask.size(1) > steps:",
])
def test_padding_out_only_when_shorter_than_the_input_is_not_flagged(guard):
    # Otherwise the output is as long as the input already: the same on every replica.
    forward = (f"feats, _ = self.features(x, lengths)\n        batch, steps, dim = feats.size()\n        {guard}\n"
               "            zeros = feats.new_zeros(batch, mask.size(1) - steps, dim)\n"
               "            feats = torch.cat([feats, zeros], 1)\n        return feats")
    assert findings(FOLLOWED.format(scorer="return states", forward=forward), code="DPR002") == []


def test_a_fresh_tensor_sized_without_the_padded_length_holds_no_padding():
    forward = ("feats, _ = self.features(x, lengths)\n        state = feats.new_zeros(feats.size(0), 4)\n"
               "        steps = feats.new_zeros(feats.size(0), feats.size(1))\n        return state, steps.sum(1)")
    assert findings(FOLLOWED.format(scorer="return states", forward=forward), code="DPR002") == []
    leaking = forward.replace("steps.sum(1)", "steps")
    assert findings(FOLLOWED.format(scorer="return states", forward=leaking), code="DPR002") == [(20, "DPR002")]


def test_a_submodule_in_another_file_is_followed(tmp_path):
    from dp_rnn_lint.cli import main

    (tmp_path / "setup.cfg").write_text("")
    (tmp_path / "crf.py").write_text(
        "import torch.nn as nn\n\n\nclass CRF(nn.Module):\n    def forward(self, features, mask):\n"
        "        return self._decode(features, mask)\n\n    def _decode(self, features, mask):\n"
        "        return (features * mask.unsqueeze(-1)).sum(1)\n")
    source = FOLLOWED.format(scorer="return states", forward="feats, _ = self.features(x, lengths)\n"
                             "        return self.crf(feats, mask)")
    source = source.replace("self.scorer = Scorer()", "self.crf = CRF()").replace(
        "from torch.nn.utils.rnn", "from crf import CRF\nfrom torch.nn.utils.rnn")
    (tmp_path / "model.py").write_text(source)
    assert main(["--no-cache", "--select", "DPR002", "--quiet", str(tmp_path)]) == 0
    (tmp_path / "crf.py").write_text((tmp_path / "crf.py").read_text().replace(".sum(1)", ""))
    assert main(["--no-cache", "--select", "DPR002", "--quiet", str(tmp_path)]) == 1


@pytest.mark.parametrize("packed_input, measured", [
    ("x", "pass total_length=x.size(1)"),
    # An expression: the message names it as written, and says where the fix keeps it.
    ("self.embed(x)", "pass total_length=self.embed(x).size(1) (the fix first stores `self.embed(x)` in a new "
                      "local, `padded`)"),
])
def test_the_message_names_what_to_measure_in_the_users_own_code(packed_input, measured):
    source = f"""
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.lstm = nn.LSTM(4, 4, batch_first=True)

    def forward(self, x, lengths):
        self.lstm.flatten_parameters()
        packed = pack_padded_sequence({packed_input}, lengths.cpu(), batch_first=True)
        out, _ = self.lstm(packed)
        return pad_packed_sequence(out, batch_first=True)[0]
"""
    [message] = messages(source, "DPR002")
    assert message.endswith(measured)
    assert "padded.size" not in message
