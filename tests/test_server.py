"""`dp-rnn-lint server` driven end to end as an editor drives it: JSON-RPC over the server's stdio."""

from __future__ import annotations

import json
import os
import shutil
import queue
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the language server needs pygls (the `server` extra, in `test` too)")

BASE = textwrap.dedent("""\
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(8, 8, batch_first=True)
""")
# The RNN is built by the base class, in another file: only the project index says what self.rnn is.
MODEL = textwrap.dedent("""\
    from base import Encoder


    class Tagger(Encoder):
        def forward(self, x):
            out, _ = self.rnn(x)
            return out
""")


class Client:
    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "dp_rnn_lint", "server"], cwd=cwd,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: "queue.Queue[dict]" = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = stream.read(1)
                if not byte:
                    return
                header += byte
            length = int(next(line for line in header.decode().split("\r\n") if line.lower().startswith(
                "content-length")).split(":")[1])
            self.messages.put(json.loads(stream.read(length)))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.wait(lambda message: message.get("id") == self.next_id and "method" not in message)["result"]

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def wait(self, wanted, timeout: float = 60) -> dict:
        while True:
            message = self.messages.get(timeout=timeout)
            if wanted(message):
                return message

    def diagnostics(self, uri: str) -> list:
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == uri)["params"]["diagnostics"]


def apply(text: str, edits: list) -> str:
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]), reverse=True):
        start, end = edit["range"]["start"], edit["range"]["end"]
        offset = lambda p: sum(map(len, lines[:p["line"]])) + p["character"]  # noqa: E731 (ASCII text)
        joined = "".join(lines)
        joined = joined[:offset(start)] + edit["newText"] + joined[offset(end):]
        lines = joined.splitlines(keepends=True)
    return "".join(lines)


@pytest.fixture
def session(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "base.py").write_text(BASE)
    (tmp_path / "model.py").write_text(MODEL)
    client = Client(tmp_path)
    client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
                                  "initializationOptions": {"select": ["DPR"], "unsafeFixes": False}})
    client.notify("initialized", {})
    yield client, (tmp_path / "model.py").as_uri()
    if client.process.poll() is None:
        client.process.kill()


def test_the_server_diagnoses_fixes_survives_and_shuts_down(session):
    client, uri = session
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                            "text": MODEL}})
    [diagnostic] = client.diagnostics(uri)
    assert diagnostic["code"] == "DPR001" and diagnostic["source"] == "dp-rnn-lint"
    assert diagnostic["range"]["start"] == {"line": 5, "character": 17}

    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diagnostic["range"], "context": {"diagnostics": [diagnostic]}})
    titles = [action["title"] for action in actions]
    assert any(title.startswith("DPR001: ") and "noqa" not in title for title in titles)
    assert "DPR001: add `# noqa: DPR001`" in titles
    [fix] = [action for action in actions if action["title"].startswith("DPR001: ") and "noqa" not in action["title"]]
    fixed = apply(MODEL, fix["edit"]["changes"][uri])
    assert "        self.rnn.flatten_parameters()\n        out, _ = self.rnn(x)" in fixed

    # The edited text is diagnosed again: clean.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]})
    assert client.diagnostics(uri) == []

    # A syntax error mid-edit: no new diagnostics, and the server still answers.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                             "contentChanges": [{"text": MODEL + "\ndef broken(:\n"}]})
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diagnostic["range"], "context": {"diagnostics": []}}) is not None

    # fixAll on the buggy text: the safe fixes, as one edit.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": MODEL}]})
    assert [d["code"] for d in client.diagnostics(uri)] == ["DPR001"]
    [fix_all] = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diagnostic["range"],
        "context": {"diagnostics": [], "only": ["source.fixAll.dp-rnn-lint"]}})
    assert "self.rnn.flatten_parameters()" in apply(MODEL, fix_all["edit"]["changes"][uri])

    assert client.request("shutdown", None) is None
    client.notify("exit", None)
    assert client.process.wait(timeout=30) == 0


def test_the_server_without_pygls_is_one_line_and_exit_2(tmp_path):
    # Hidden pygls: the command says what to install instead of a traceback.
    blocker = tmp_path / "pygls.py"
    blocker.write_text("raise ImportError('No module named pygls (hidden by the test)')\n")
    done = subprocess.run([sys.executable, "-m", "dp_rnn_lint", "server"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(tmp_path), "PATH": ""})
    assert done.returncode == 2
    assert "pip install 'dp-rnn-lint[server]'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("pyproject, options, codes", [
    ("[tool.dp-rnn-lint]\nignore = [\"DPR001\"]\n", {}, []),  # the project's settings apply
    ("[tool.dp-rnn-lint]\nignore = [\"DPR001\"]\n", {"ignore": []}, ["DPR001"]),  # the client's options win
    ("", {"select": ["DPR002"]}, []),
])
def test_the_server_reads_the_projects_settings_under_the_clients_options(tmp_path, pyproject, options, codes):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n" + pyproject)
    (tmp_path / "base.py").write_text(BASE)
    (tmp_path / "model.py").write_text(MODEL)
    client = Client(tmp_path)
    try:
        client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
                                      "initializationOptions": options})
        client.notify("initialized", {})
        uri = (tmp_path / "model.py").as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": MODEL}})
        assert [d["code"] for d in client.diagnostics(uri)] == codes
    finally:
        client.process.kill()


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim is not installed (Debian's `neovim` package; .ci/run "
                    "installs it where apt-get can)")
def test_headless_neovim_shows_the_servers_diagnostics(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "base.py").write_text(BASE)
    (tmp_path / "model.py").write_text(MODEL)
    script = Path(__file__).parent / "editors" / "neovim_smoke.lua"
    done = subprocess.run(["nvim", "--headless", "-u", "NONE", "-c", f"luafile {script}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SMOKE_FILE": str(tmp_path / "model.py"), "SMOKE_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("6:18 DPR001 self.rnn (nn.LSTM) runs in the forward pass"), done.stdout + done.stderr


def test_a_notebook_documents_cells_get_their_own_diagnostics(session, tmp_path):
    client, _ = session
    notebook = (tmp_path / "analysis.ipynb").as_uri()
    cells = ["# Training the tagger\n", "import torch.nn as nn\n",
             "class Tagger(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.rnn = nn.GRU(4, 4)\n\n    def forward(self, x):\n        return self.rnn(x)[0]\n"]
    kinds = [1, 2, 2]  # markdown, code, code
    uris = [f"{notebook}#cell{number}" for number in range(len(cells))]
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1,
                             "cells": [{"kind": kind, "document": uri} for kind, uri in zip(kinds, uris)]},
        "cellTextDocuments": [{"uri": uri, "languageId": "markdown" if kind == 1 else "python", "version": 1,
                               "text": text} for uri, kind, text in zip(uris, kinds, cells)]})
    published = {}
    while len(published) < len(cells):
        message = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        published[message["params"]["uri"]] = message["params"]["diagnostics"]
    assert published[uris[0]] == [] and published[uris[1]] == []
    [diagnostic] = published[uris[2]]
    assert diagnostic["code"] == "DPR001"
    # Placed in the third cell's own lines, where its call of the GRU is.
    [(line, text)] = [(number, text) for number, text in enumerate(cells[2].splitlines()) if "self.rnn(x)" in text]
    assert diagnostic["range"]["start"] == {"line": line, "character": text.index("self.rnn(x)")}
