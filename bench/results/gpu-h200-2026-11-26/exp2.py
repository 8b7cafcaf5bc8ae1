import importlib.util, os, sys, time, json as orjson, lzma, numpy as np, torch
spec = importlib.util.spec_from_file_location("embed", "curator/models/embed.py")
embed = importlib.util.module_from_spec(spec); spec.loader.exec_module(embed)
t = [orjson.loads(l)["text"] for l in lzma.open(".dev2/c10k.jsonl.xz").read().splitlines()]
enc = embed.TorchEncoder(".dev2/m", device="cuda", batch_size=256)
def old(x):
    return np.asarray(enc.model.encode(list(x), batch_size=256, convert_to_numpy=True, show_progress_bar=False), dtype=np.float32)
enc.encode(t[:256]); old(t[:256]); torch.cuda.synchronize()
res = {}
for name, f in [("per_batch_copy", old), ("one_copy", enc.encode)] * 2:
    a, c = time.perf_counter(), time.process_time(); e = f(t); w = time.perf_counter() - a
    res.setdefault(name, []).append((round(len(t) / w), round(time.process_time() - c, 1))); res[name + "_e"] = e
print(os.environ.get("TOKENIZERS_PARALLELISM"), len(t), {k: v for k, v in res.items() if not k.endswith("_e")},
      "max_abs_diff", float(np.abs(res["per_batch_copy_e"] - res["one_copy_e"]).max()), flush=True)
