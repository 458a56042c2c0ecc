"""dp-rnn-lint: find and fix the recurrent-network traps of torch.nn.DataParallel."""

import time as _time

# When the package began to load: `--stats` counts start-up and imports from here.
IMPORT_STARTED = _time.perf_counter()

__version__ = "0.1.0"
