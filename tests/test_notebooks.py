"""Jupyter notebooks are linted and fixed like Python files: findings per cell, fixes that rewrite only the
changed cells' sources, magics masked, and the notebook's JSON kept byte for byte elsewhere. The notebooks
are written by nbformat, as Jupyter writes them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dp_rnn_lint import notebooks
from dp_rnn_lint.cli import main

nbformat = pytest.importorskip("nbformat", reason="nbformat (in the `test` extra) writes the notebooks")
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402

IMPORTS = ("%matplotlib inline\n"
           "import torch\n"
           "import torch.nn as nn\n"
           "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence")
# Cell 4; DPR001 on its line 8 (self.rnn(packed)) and DPR002 on line 9 (pad_packed_sequence).
MODEL = ("class Tagger(nn.Module):\n"
         "    def __init__(self):\n"
         "        super().__init__()\n"
         "        self.rnn = nn.GRU(8, 16, batch_first=True)  # the encoder\n"
         "\n"
         "    def forward(self, x, lengths):\n"
         "        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)\n"
         "        out, _ = self.rnn(packed)\n"
         "        out, _ = pad_packed_sequence(out, batch_first=True)\n"
         "        return out")
WRAP = "model = nn.DataParallel(Tagger())\nmodel.forward?"


def write_notebook(path: Path, *cells, language: str = "python") -> bytes:
    notebook = new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": language}
    notebook.metadata["language_info"] = {"name": language}
    notebook.cells = list(cells)
    nbformat.write(notebook, str(path))
    return path.read_bytes()


def tutorial(path: Path) -> bytes:
    """Markdown, imports behind a magic, a shell escape, the model (with an output), and the wrap."""
    return write_notebook(
        path,
        new_markdown_cell("# A GRU tagger\nWe `pack_padded_sequence` the batch."),
        new_code_cell(IMPORTS),
        new_code_cell("!pip install -q torch"),
        new_code_cell(MODEL, execution_count=3, outputs=[new_output("stream", name="stdout", text="r\u00e9sum\u00e9\n")]),
        new_code_cell(WRAP),
    )


def lint(capsys, *args: str):
    status = main(["--no-cache", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_findings_are_reported_per_cell_with_the_cells_own_lines(tmp_path, capsys):
    tutorial(tmp_path / "tutorial.ipynb")
    status, out, _ = lint(capsys, "--format", "concise", str(tmp_path / "tutorial.ipynb"))
    assert status == 1
    lines = [line.split(": ")[0].split("tutorial.ipynb:")[1] for line in out.splitlines() if "DPR" in line]
    assert lines == ["cell 4:8:18", "cell 4:9:18"]
    assert "Checked 1 file." in out


def test_the_text_excerpt_shows_the_cells_own_line(tmp_path, capsys):
    tutorial(tmp_path / "tutorial.ipynb")
    _, out, _ = lint(capsys, str(tmp_path / "tutorial.ipynb"))
    assert "8 |         out, _ = self.rnn(packed)\n" in out
    assert "9 |         out, _ = pad_packed_sequence(out, batch_first=True)\n" in out


def test_machine_formats_name_the_cell(tmp_path, capsys):
    path = tmp_path / "tutorial.ipynb"
    tutorial(path)
    _, out, _ = lint(capsys, "--format", "json", str(path))
    items = json.loads(out)
    assert [(item["cell"], item["line"], item["code"]) for item in items] == [(4, 8, "DPR001"), (4, 9, "DPR002")]
    insert = items[0]["fix"]["edits"][0]
    assert insert["location"]["row"] == 7  # the flatten_parameters() line goes before the cell's line 7

    _, out, _ = lint(capsys, "--format", "sarif", str(path))
    results = json.loads(out)["runs"][0]["results"]
    assert [(r["properties"]["cell"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] \
        == [(4, 8), (4, 9)]

    _, out, _ = lint(capsys, "--format", "github", str(path))
    # The diff cannot show a cell's line, so the message starts with the cell and the place in it.
    assert "title=dp-rnn-lint (DPR001),file=" in out and ",line=8,col=18," in out and "::cell 4:8:18: self.rnn" in out


def test_fix_rewrites_only_the_changed_cells_source(tmp_path, capsys):
    path = tmp_path / "tutorial.ipynb"
    before = tutorial(path)
    status, out, _ = lint(capsys, "--fix", "--unsafe-fixes", str(path))
    assert status == 0, out
    after = path.read_bytes()
    start = len(os.path.commonprefix([before, after]))
    end = len(os.path.commonprefix([before[::-1], after[::-1]]))
    changed_before, changed_after = before[start:len(before) - end], after[start:len(after) - end]
    # Everything outside the model cell's source list is byte for byte what nbformat wrote: the other
    # cells, the outputs (with their non-ASCII text), the execution counts, the metadata.
    assert b"class Tagger" in before[:start] and b"return out" in before[len(before) - end:]
    for untouched in (b'"outputs"', b'"metadata"', b'"cell_type"', b'"execution_count"'):
        assert untouched not in changed_before and untouched not in changed_after
    notebook = nbformat.reads(after.decode("utf-8"), as_version=4)
    nbformat.validate(notebook)
    model = notebook.cells[3].source
    assert "        self.rnn.flatten_parameters()\n        packed" in model
    assert "pad_packed_sequence(out, batch_first=True, total_length=x.size(1))" in model
    assert notebook.cells[3].outputs[0].text == "r\u00e9sum\u00e9\n"
    assert notebook.cells[1].source == IMPORTS and notebook.cells[4].source == WRAP  # magics as written
    for cell in notebook.cells:
        if cell.cell_type == "code" and not cell.source.lstrip().startswith(("%", "!")) and "?" not in cell.source:
            compile(cell.source, "cell", "exec")
    assert lint(capsys, "--fix", "--unsafe-fixes", str(path))[0] == 0
    assert path.read_bytes() == after  # a second fix changes nothing


def test_a_fix_in_a_cell_with_magics_keeps_them(tmp_path, capsys):
    path = tmp_path / "magic.ipynb"
    cell = ("import torch.nn as nn\n"
            "%load_ext autoreload\n"
            "class Encoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lstm = nn.LSTM(4, 4)\n"
            "    def forward(self, x):\n"
            "        !echo forward\n"
            "        files = !ls\n"
            "        return self.lstm(x)\n")
    write_notebook(path, new_code_cell(cell), new_code_cell("%%bash\n  echo self.lstm(x)\n"))
    status, out, _ = lint(capsys, "--format", "concise", str(path))
    assert [line.split(": ")[0].rsplit(":", 3)[-3:] for line in out.splitlines() if "DPR" in line] == \
        [["cell 1", "10", "16"]]
    lint(capsys, "--fix", str(path))
    fixed = nbformat.read(str(path), as_version=4)
    assert fixed.cells[0].source == cell.replace("    def forward(self, x):\n",
                                                 "    def forward(self, x):\n        self.lstm.flatten_parameters()\n")
    assert fixed.cells[1].source == "%%bash\n  echo self.lstm(x)\n"


def test_diff_shows_each_changed_cell_as_written(tmp_path, capsys):
    path = tmp_path / "tutorial.ipynb"
    before = tutorial(path)
    status, out, err = lint(capsys, "--diff", str(path))
    assert status == 1
    assert out.startswith(f"--- {path}:cell 4\n+++ {path}:cell 4\n")
    assert "+        self.rnn.flatten_parameters()\n" in out
    assert "notebook cell" not in out and "masked" not in out
    assert "Would fix 1 error" in err
    assert path.read_bytes() == before


def test_noqa_in_a_cell_and_add_noqa(tmp_path, capsys):
    path = tmp_path / "tutorial.ipynb"
    tutorial(path)
    assert lint(capsys, "--add-noqa", str(path))[0] == 0
    sources = [cell.source for cell in nbformat.read(str(path), as_version=4).cells]
    assert "        out, _ = self.rnn(packed)  # noqa: DPR001\n" in sources[3]
    assert sources[1] == IMPORTS
    once = path.read_bytes()
    assert lint(capsys, str(path))[0] == 0
    lint(capsys, "--add-noqa", str(path))
    assert path.read_bytes() == once


def test_layouts_other_than_nbformats_are_kept(tmp_path, capsys):
    """Two-space indents, string sources, CRLF, a byte-order mark and \\u escapes all survive a fix."""
    path = tmp_path / "tutorial.ipynb"
    tutorial(path)
    document = json.loads(path.read_text(encoding="utf-8"))
    document["cells"][3]["source"] = MODEL  # a string, not a list of lines
    text = json.dumps(document, indent=2, ensure_ascii=True).replace("\n", "\r\n")
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("ascii"))
    lint(capsys, "--fix", str(path))
    after = path.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf") and after[3:].isascii()
    fixed = json.loads(after.decode("utf-8-sig"))
    assert fixed["cells"][3]["source"] == MODEL.replace(
        "    def forward(self, x, lengths):\n", "    def forward(self, x, lengths):\n        self.rnn.flatten_parameters()\n")
    document["cells"][3]["source"] = fixed["cells"][3]["source"]
    expected = json.dumps(document, indent=2, ensure_ascii=True).replace("\n", "\r\n")
    assert after == b"\xef\xbb\xbf" + expected.encode("ascii")


def test_a_list_source_keeps_its_spacing(tmp_path, capsys):
    path = tmp_path / "tutorial.ipynb"
    tutorial(path)
    document = json.loads(path.read_text(encoding="utf-8"))
    text = json.dumps(document, indent=4, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    lint(capsys, "--fix", str(path))
    document["cells"][3]["source"] = nbformat.read(str(path), as_version=4).cells[3].source.splitlines(keepends=True)
    assert path.read_text(encoding="utf-8") == json.dumps(document, indent=4, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("content, problem", [
    (b'{"cells": [', "notebook is not valid JSON"),
    (b"[1, 2]", "not a Jupyter notebook"),
    (b'{"cells": [{"cell_type": "code", "source": 3}]}', "cell 1"),
    (b"\xff\xfe{}", "notebook is not UTF-8"),
    # Older notebooks are told what they are, with or without cells in the v4 place.
    (b'{"nbformat": 3, "cells": []}', "an nbformat 3 notebook: only nbformat 4 is read"),
    (b'{"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": []}], "metadata": {}}',
     "an nbformat 3 notebook: only nbformat 4 is read"),
    (b'{"nbformat": 2, "worksheets": []}', "an nbformat 2 notebook"),
])
def test_a_broken_notebook_gets_one_error_line(tmp_path, capsys, content, problem):
    path = tmp_path / "broken.ipynb"
    path.write_bytes(content)
    status, out, err = lint(capsys, "--fix", str(path))
    assert status == 1
    [line] = err.splitlines()
    assert line.startswith(f"error: {path}: ") and problem in line
    assert path.read_bytes() == content


def test_a_notebook_of_another_language_is_not_linted_as_python(tmp_path, capsys):
    write_notebook(tmp_path / "r.ipynb", new_code_cell(MODEL), language="R")
    assert lint(capsys, str(tmp_path / "r.ipynb"))[0] == 0


def test_folders_are_walked_for_notebooks_and_the_index_reads_them(tmp_path, capsys):
    """In the wrapped scope the wrap must be found: the index reads the notebook's cells too."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "notes").mkdir()
    tutorial(tmp_path / "notes" / "tutorial.ipynb")
    status, out, _ = lint(capsys, "--scope", "wrapped", "--format", "concise", str(tmp_path))
    assert status == 1
    assert sum("tutorial.ipynb:cell 4:" in line for line in out.splitlines()) == 2


def test_a_cached_notebook_result_is_reported_per_cell_again(tmp_path, capsys):
    path = tmp_path / "tutorial.ipynb"
    tutorial(path)
    runs = [main(["--cache-dir", str(tmp_path / "cache"), "--format", "concise", str(path)]) for _ in range(2)]
    findings = [line.split(": ")[0] for line in capsys.readouterr().out.splitlines() if ": DPR" in line]
    assert runs == [1, 1] and findings == [f"{path}:cell 4:8:18", f"{path}:cell 4:9:18"] * 2


def test_standard_input_notebook_is_fixed_to_standard_output(tmp_path):
    path = tmp_path / "tutorial.ipynb"
    before = tutorial(path)
    done = subprocess.run([sys.executable, "-m", "dp_rnn_lint", "--no-cache", "--fix", "-", "--stdin-filename", str(path)],
                          input=before, capture_output=True, timeout=60, cwd=tmp_path)
    fixed = nbformat.reads(done.stdout.decode("utf-8"), as_version=4)
    assert "self.rnn.flatten_parameters()" in fixed.cells[3].source
    assert path.read_bytes() == before


def test_the_view_maps_back_to_the_cells():
    raw = json.dumps({"cells": [{"cell_type": "code", "source": ["%time x = 1\n", "y = 2"]},
                                {"cell_type": "markdown", "source": "text"},
                                {"cell_type": "code", "source": "z = 3\n"}], "metadata": {}}).encode()
    view = notebooks.view_of(raw).decode()
    assert notebooks.cell_starts(view) == [(3, 1), (6, 3)]
    assert notebooks.in_cell(7, notebooks.cell_starts(view)) == (3, 2)
    assert [notebooks.unmasked(text) for _, _, text in notebooks.cell_texts(view)] == ["%time x = 1\ny = 2\n", "z = 3\n"]
    assert notebooks.with_fixed_view(notebooks.parse_notebook(raw), view.encode(), view.encode()) == raw


def raw_notebook(path: Path, *sources) -> None:
    """A notebook of code cells written as JSON directly: layouts nbformat would not write."""
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
             for source in sources]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))


SMALL_MODEL = ("import torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
               "        self.rnn = nn.LSTM(4, 4)\n    def forward(self, x):\n        return self.rnn(x)[0]\n")
FLATTEN = "        self.rnn.flatten_parameters()\n"


@pytest.mark.parametrize("before", [
    "await warm_up()\n",  # IPython runs top-level await: the fixed cell must still count as compiling
    "!pip install \\\n    torch\n",  # a shell escape continued on an indented line
    "%time x = 1\nprint('%d'\n      % 3)\ny = (1\n     != 2)\n",  # Python lines inside brackets, not magics
    "%%time\n",  # a cell magic whose body IPython runs as Python
], ids=["top-level-await", "continued-shell-escape", "operators-in-brackets", "time-cell-magic"])
def test_ipython_cells_are_linted_and_fixed_with_their_ipython_lines_kept(tmp_path, capsys, before):
    path = tmp_path / "cells.ipynb"
    raw_notebook(path, before + SMALL_MODEL)
    status, out, _ = lint(capsys, "--format", "concise", str(path))
    assert f"cells.ipynb:cell 1:{before.count(chr(10)) + 7}:16: DPR001" in out, out
    assert lint(capsys, "--fix", str(path))[0] == 0
    fixed = json.loads(path.read_text())["cells"][0]["source"]
    assert fixed == before + SMALL_MODEL.replace("    def forward(self, x):\n", "    def forward(self, x):\n" + FLATTEN)


def test_a_cell_with_lone_carriage_returns_stays_its_own_cell(tmp_path, capsys):
    path = tmp_path / "cr.ipynb"
    raw_notebook(path, ["import torch\rimport torch.nn as nn\r"], SMALL_MODEL.splitlines(keepends=True))
    _, out, _ = lint(capsys, "--format", "concise", str(path))
    assert "cr.ipynb:cell 2:7:16: DPR001" in out
    lint(capsys, "--fix", str(path))
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["source"] == ["import torch\rimport torch.nn as nn\r"]
    assert "".join(cells[1]["source"]).count("flatten_parameters") == 1


def test_fixed_cells_keep_their_crlf_line_endings(tmp_path, capsys):
    path = tmp_path / "crlf.ipynb"
    raw_notebook(path, [line.replace("\n", "\r\n") for line in SMALL_MODEL.splitlines(keepends=True)])
    lint(capsys, "--fix", str(path))
    assert "        self.rnn.flatten_parameters()\r\n" in json.loads(path.read_text())["cells"][0]["source"]


def test_a_notebooks_syntax_error_names_its_cell(tmp_path, capsys):
    path = tmp_path / "broken.ipynb"
    raw_notebook(path, ["x = 1\n"], ["def f(:\n", "    pass\n"])
    status, _, err = lint(capsys, str(path))
    assert status == 1 and f"error: {path}:cell 2:1:7: cannot parse" in err


@pytest.mark.parametrize("content, problem", [
    ('{"cells": [], "x": ' + "[" * 5000 + "]" * 5000 + "}", "nested too deeply"),
    ('{"cells": [{"cell_type": "markdown", "source": "text"}], "cells": []}', 'two "cells" lists'),
])
def test_odd_json_gets_one_error_line_and_no_traceback(tmp_path, capsys, content, problem):
    path = tmp_path / "odd.ipynb"
    path.write_text(content)
    status, _, err = lint(capsys, "--fix", str(path))
    assert status == 1 and err.count("\n") == 1 and problem in err and "Traceback" not in err
    assert path.read_text() == content


def test_a_cell_ipython_dedents_is_linted_and_fixed_at_its_own_columns(tmp_path, capsys):
    # IPython strips the first line's indent from every line of a cell before running it, so a cell
    # pasted one space in (a shell escape, or a whole model) runs, and must not read as a syntax error.
    path = tmp_path / "pasted.ipynb"
    model = "".join(" " + line if line.strip() else line for line in (
        "import torch.nn as nn\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lstm = nn.LSTM(4, 4)\n"
        "\n"
        "    def forward(self, x):\n"
        "        return self.lstm(x)\n").splitlines(keepends=True))
    shell = ' !tts --text "hi" \\\n      --out_path out.wav'
    write_notebook(path, new_code_cell(shell), new_code_cell(model))
    status, out, err = lint(capsys, "--format", "concise", str(path))
    assert "cannot parse" not in out + err
    assert [line.split(": ")[0].rsplit(":", 3)[-3:] for line in out.splitlines() if "DPR" in line] == \
        [["cell 2", "8", "17"]]
    lint(capsys, "--fix", str(path))
    fixed = nbformat.read(str(path), as_version=4)
    assert fixed.cells[0].source == shell
    assert fixed.cells[1].source == model.replace("     def forward(self, x):\n",
                                                  "     def forward(self, x):\n         self.lstm.flatten_parameters()\n")


def test_wrap_and_root_sites_in_a_notebook_name_the_cell(tmp_path, capsys):
    # A message pointing at a line of the notebook's Python view would point nowhere the user can look.
    (tmp_path / "pyproject.toml").write_text("")
    model = ("class LM(nn.Module):\n"
             "    def __init__(self):\n"
             "        super().__init__()\n"
             "        self.lstm = nn.LSTM(4, 4, num_layers=2, batch_first=True)\n"
             "    def forward(self, x, state):\n"
             "        self.lstm.flatten_parameters()\n"
             "        return self.lstm(x, state)\n")
    path = tmp_path / "lm.ipynb"
    write_notebook(path, new_code_cell("import torch.nn as nn"), new_code_cell(model),
                   new_code_cell("# train\nmodel = nn.DataParallel(LM())"))
    _, out, _ = lint(capsys, "--format", "concise", str(tmp_path))
    assert out.count("lm.ipynb:cell 3:2)") == 1 and "DPR004" in out, out
    write_notebook(path, new_code_cell("import torch.nn as nn"), new_code_cell(model), new_code_cell("# train\nmodel = LM()"))
    _, out, _ = lint(capsys, "--format", "concise", str(tmp_path))
    assert out.count("lm.ipynb:cell 3:2 and no other module holds it") == 1, out
