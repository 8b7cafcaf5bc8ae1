#!/bin/bash
# device call: curator's megatron-core training on CUDA (issue 27's last "not run" item).
export PYTHONUNBUFFERED=1
FINAL=$OUT; export OUT=/tmp/o; mkdir -p $OUT
T0=$(date +%s)
el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; python3 -V
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .dev3/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import torch, megatron.core as m, tokenizers, curator.cli; print('versions torch', torch.__version__, 'mcore', m.__version__, 'tokenizers', tokenizers.__version__, torch.cuda.get_device_name(0))" 2>&1 | grep -v Warn || exit 2
el demo; python3 -m curator.train.demo /tmp/td >/dev/null 2>&1 || { echo demo failed; exit 3; }
TR="python3 -m curator.cli train --blend /tmp/td/blend.json"
S="--train-iters 60 --log-interval 10 --eval-interval 20"
run() { local name=$1; shift; el "run $name: $*"; timeout 150 $TR --save /tmp/ck_$name "$@" > $OUT/$name.log 2>&1; echo "rc=$?"; grep -E "^iteration|^trained|error|Error" $OUT/$name.log | tail -6; cp /tmp/ck_$name/metrics.jsonl $OUT/$name.metrics.jsonl 2>/dev/null; cp /tmp/ck_$name/train_summary.json $OUT/$name.summary.json 2>/dev/null; }
run cpu $S --device cpu --num-threads 4
run cuda32 $S --device cuda
run cuda16 $S --device cuda --precision bf16
# resume after a crash at step 8 of 10 (checkpoint at 5), fp32 and bf16
el resume; for p in fp32 bf16; do timeout 120 python3 .dev3/resume.py /tmp/td/blend.json /tmp/res_$p $p 2>$OUT/resume_$p.err | tee $OUT/resume_$p.json | tail -c 400; echo; tail -2 $OUT/resume_$p.err; done
# ~125M-parameter shape for throughput, bf16, no eval
run big32 --device cuda --num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --micro-batch-size 8 --global-batch-size 64 --train-iters 30 --log-interval 10 --eval-interval 0 --lr 6e-4 --min-lr 6e-5
run big --device cuda --precision bf16 --num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --micro-batch-size 8 --global-batch-size 64 --train-iters 30 --log-interval 10 --eval-interval 0 --lr 6e-4 --min-lr 6e-5
python3 - <<'PY'
import json, os
out = os.environ["OUT"]
def losses(n):
    p = f"{out}/{n}.metrics.jsonl"
    if not os.path.exists(p): return {}
    d = {}
    for line in open(p):
        r = json.loads(line)
        if "loss" in r and "iteration" in r and r.get("split", "train") == "train": d[r["iteration"]] = r["loss"]
    return d
c, g, b = (losses(n) for n in ("cpu", "cuda32", "cuda16"))
for name, x in (("cuda32", g), ("cuda16", b)):
    common = sorted(set(c) & set(x))
    if common:
        print(name, "vs cpu: iterations", len(common), "max |loss diff|", max(abs(c[i] - x[i]) for i in common))
PY
el bench; for f in "" --bf16; do timeout 90 python3 bench/train_step.py --device cuda --layers 12 --hidden 768 --heads 12 --seq 1024 --batch 8 --vocab 32000 --steps 20 $f 2>&1 | grep -v -i warn | tail -3; done
cat > /tmp/tr.yaml <<'Y'
name: train-stage-gpu
work_dir: /tmp/wstage
executor: {type: local, workers: 1}
stages:
  - read_jsonl: {paths: /tmp/td/docs.jsonl}
  - train: {blend: /tmp/td/blend.json, save: train/checkpoints, train_iters: 40, eval_interval: 20, device: auto}
Y
el stage; timeout 120 python3 -m curator.cli run /tmp/tr.yaml > $OUT/stage.log 2>&1; echo "stage rc=$?"; tail -4 $OUT/stage.log; cat /tmp/wstage/train/checkpoints/train_summary.json 2>/dev/null | head -c 600; echo
el done; date -u
cp /tmp/wstage/train/checkpoints/train_summary.json $OUT/stage.summary.json; tar czf $FINAL/results.tgz -C /tmp o
