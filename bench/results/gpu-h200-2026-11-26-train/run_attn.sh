#!/bin/bash
# device call 3: SdpaAttention (curator/train/attention.py) against megatron's local attention on CUDA
export PYTHONUNBUFFERED=1
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
[ -d /tmp/site/megatron ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .dev3/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
[ -f /tmp/td/blend.json ] || python3 -m curator.train.demo /tmp/td >/dev/null 2>&1 || exit 3
el bench; for att in sdpa local; do timeout 60 python3 bench/train_step.py --device cuda --layers 12 --hidden 768 --heads 12 --seq 1024 --batch 8 --vocab 32000 --steps 20 --bf16 --attention $att 2>&1 | grep -E "tokens/s|ratio"; done
TR="python3 -m curator.cli train --blend /tmp/td/blend.json"
for att in sdpa local; do el "small fp32 $att"; timeout 60 $TR --save /tmp/a_$att --train-iters 60 --log-interval 20 --eval-interval 20 --device cuda --attention $att 2>&1 | grep -E "^iteration (20|40|60)|^trained"; done
el "big bf16 sdpa"; timeout 90 $TR --save /tmp/b_sdpa --device cuda --precision bf16 --num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --micro-batch-size 8 --global-batch-size 64 --train-iters 30 --log-interval 10 --eval-interval 0 --lr 6e-4 --min-lr 6e-5 2>&1 | grep -E "^iteration|^trained"
el done
