-- Headless Neovim as an editor uses dp-rnn-lint server: open a model, attach the built-in LSP client,
-- wait for diagnostics, print them (line:col code message), quit. Run by tests/test_server.py.
local file, python = os.getenv("SMOKE_FILE"), os.getenv("SMOKE_PYTHON")
vim.cmd("edit " .. file)
local client = vim.lsp.start_client({ name = "dp-rnn-lint", cmd = { python, "-m", "dp_rnn_lint", "server" },
                                      root_dir = vim.fn.fnamemodify(file, ":p:h") })
vim.lsp.buf_attach_client(0, client)
vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 100)
for _, d in ipairs(vim.diagnostic.get(0)) do
  io.stdout:write(string.format("%d:%d %s %s\n", d.lnum + 1, d.col + 1, tostring(d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)), d.message))
end
vim.cmd("qa!")
