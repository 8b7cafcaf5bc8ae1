"""model_classifier through `curator run` on each device: the bundled tiny FineWeb-Edu-preset
model over the bundled crawl + wiki samples; scores per device compared with CPU float32."""
import json, os, subprocess, sys, time
import orjson

devs = sys.argv[1].split(",")
res = {}
scores = {}
for dev in devs:
    name, _, dtype = dev.partition(":")
    w = f"/tmp/clfrun-{name}-{dtype or 'auto'}"
    y = f"{w}.yaml"
    open(y, "w").write(
        f"name: c\nwork_dir: {w}\nexecutor: {{type: local, workers: 1}}\nprogress: 'off'\n"
        "stages:\n  - read_jsonl: {paths: [data/sample/filters/crawl.jsonl, data/sample/filters/wiki.jsonl]}\n"
        f"  - model_classifier: {{model: data/models/tiny-edu-classifier, preset: fineweb-edu, "
        f"device: {name}, dtype: {dtype or 'auto'}}}\n"
        "  - write_jsonl: {path: output, compression: none}\n")
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "curator", "run", y], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode:
        res[dev] = {"rc": p.returncode, "err": p.stderr[-1500:]}
        continue
    rep = json.load(open(f"{w}/report.json"))
    st = next(s for s in rep["stages"] if s["id"].startswith("model_classifier"))
    sc = {}
    for root, _, files in os.walk(f"{w}/output"):
        for f in files:
            if f.endswith(".jsonl"):
                for line in open(os.path.join(root, f), "rb"):
                    d = orjson.loads(line)
                    sc[d["id"]] = d["edu_score"]
    scores[dev] = sc
    res[dev] = {"docs": len(sc), "stage_s": st["seconds"], "process_wall_s": round(wall, 2),
                "counters": st.get("counters")}
base = scores.get(devs[0])
for dev in devs[1:]:
    if base and dev in scores:
        ids = sorted(base)
        res[dev]["max_abs_diff_vs_" + devs[0]] = max(abs(base[i] - scores[dev][i]) for i in ids)
        res[dev]["same_int_score_share"] = sum(round(base[i]) == round(scores[dev][i]) for i in ids) / len(ids)
print(json.dumps(res, indent=1))
