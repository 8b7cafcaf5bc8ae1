#!/usr/bin/env bash
# Create .venv-triton: a separate virtualenv holding NVIDIA's Triton server (shipped inside the
# nvidia-pytriton wheel) and what our python-backend models import. It is separate because
# nvidia-pytriton pins numpy<2 while the main environment uses numpy 2.
# Usage: scripts/setup_triton.sh [VENV_DIR] [PYTHON]
set -euo pipefail
VENV="${1:-$(cd "$(dirname "$0")/.." && pwd)/.venv-triton}"
PY="${2:-python3.11}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
pip_install() {  # quiet unless it fails
  if ! "$VENV/bin/pip" install --quiet "$@" >"$VENV/pip.log" 2>&1; then
    grep -v "is ignored" "$VENV/pip.log" >&2
    echo "setup_triton: pip install $* failed" >&2
    exit 1
  fi
}
pip_install --upgrade pip
pip_install "nvidia-pytriton==0.7.0" "numpy<2" "onnxruntime>=1.18,<1.21" \
  "tokenizers>=0.19" "sentencepiece>=0.2"
TS=$("$VENV/bin/python" -c 'import pytriton, os; print(os.path.join(os.path.dirname(pytriton.__file__), "tritonserver", "bin", "tritonserver"))')
test -x "$TS" || { echo "setup_triton: no tritonserver binary at $TS" >&2; exit 1; }
echo "$TS"
