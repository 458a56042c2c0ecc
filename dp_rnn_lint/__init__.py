"""dp-rnn-lint: find and fix the recurrent-network traps of torch.nn.DataParallel."""

__version__ = "0.1.0"
