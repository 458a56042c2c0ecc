#!/usr/bin/env bash
# The one short script to run on a machine with a CUDA GPU: versions, the CUDA tests, then benchmarks/gpu.py.
#
#     bash benchmarks/gpu_check.sh        # from the repository root; about 4 minutes on an H100 (under 9 in the worst case: each part has a timeout)
#
# Assumptions: the machine has no network, so this installs nothing. The Python it uses ($PYTHON, else
# python3) must already have torch built with CUDA. benchmarks/gpu.py needs torch alone (without libcst it
# takes the fixtures' golden .fixed.py files for `--fix`); the tests need pytest and the linter's
# dependencies (libcst, flake8) too, and are reported as not run without them. The checkout is used as it
# is (PYTHONPATH), not installed. Where $OUT names a folder (the device machine's folder that comes back),
# GPU.md and the test log are copied there.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT_DIR=${OUT:-}

"$PY" - <<'EOF'
import importlib.util
import platform
import sys

print("python", platform.python_version(), sys.executable)
try:
    import torch
except ImportError as error:
    sys.exit(f"no torch here ({error}): nothing to run")
print("torch", torch.__version__, "| CUDA", torch.version.cuda, "| available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("GPU", torch.cuda.get_device_name(), "| devices", torch.cuda.device_count())
print("cuDNN", torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else "not available")
for name in ("pytest", "libcst", "flake8", "numpy"):
    print(name, "present" if importlib.util.find_spec(name) else "MISSING")
EOF
[ $? -eq 0 ] || exit 2
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv

status=0
if "$PY" -c "import pytest, libcst, flake8" 2>/dev/null; then
    log=$(mktemp)
    timeout 240 "$PY" -m pytest -q -p no:cacheprovider -rs tests/test_harness_cuda.py 2>&1 | tee "$log" | tail -40
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    [ -n "$OUT_DIR" ] && cp "$log" "$OUT_DIR/test_harness_cuda.log"
else
    echo "pytest, libcst or flake8 is missing: tests/test_harness_cuda.py not run"
fi

timeout 300 "$PY" benchmarks/gpu.py || status=1
[ -n "$OUT_DIR" ] && [ -f benchmarks/GPU.md ] && cp benchmarks/GPU.md "$OUT_DIR/GPU.md"
exit $status
