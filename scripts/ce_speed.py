#!/usr/bin/env python3
"""hopbench's cross-encoder and sentence-transformers' side by side: pairs per second and agreement.

The model is the checkpoint of datasets/tests/fixtures/ce/minilm_goldens.json: the real
all-MiniLM-L6-v2 trunk (models/all-MiniLM-L6-v2, scripts/setup) with the committed seeded head,
assembled into a temporary directory as scripts/ce_goldens.py assembles it (a Hugging Face
cross-encoder layout, max length 512). The work is reranking: `--queries` questions of
HotpotQA (--data, default ../shared/datasets/hotpotqa-train100 beside the repository), each with
`--candidates` passages of its corpus (the question's own context paragraphs first, then others
drawn with a fixed seed), every list scored in one call: `CrossEncoder.predict(pairs)` (batch 32,
its default) and `CrossEncoder::score(query, passages)` (the `ce_speed` example of the datasets
crate, run as a subprocess with RAYON_NUM_THREADS).

Runs alternate (hopbench pass, sentence-transformers pass, `--repeat` times) on the same CPU with
the same thread count (torch.set_num_threads); each side has one untimed pass first. Printed:
pairs, mean tokens per pair (sentence-transformers' tokenizer, specials included), the median
pairs/s of each side and their ratio, and the largest |score difference|.

usage:
  cargo build --release -p hopbench-datasets --example ce_speed
  HF_HUB_OFFLINE=1 /work/venv-st/bin/python scripts/ce_speed.py [--binary PATH] [--threads 2]
      [--queries 20] [--candidates 100] [--repeat 3] [--data DIR]
(--binary defaults to $CARGO_TARGET_DIR or target/, then release/examples/ce_speed.)
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ce_goldens  # noqa: E402  (torch, sentence-transformers; the checkpoint's assembly)
import numpy as np  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import CrossEncoder  # noqa: E402


def reranking_lists(data, queries, candidates, seed=7):
    questions = json.loads((data / "hotpotqa_train.json").read_text(encoding="utf-8"))
    corpus = json.loads((data / "hotpotqa_train_corpus.json").read_text(encoding="utf-8"))
    titles = sorted(corpus)
    rng = random.Random(seed)
    lists = []
    for q in questions[:queries]:
        own = [t for t, _ in q["context"] if t in corpus]
        others = [t for t in rng.sample(titles, candidates + len(own)) if t not in own]
        chosen = (own + others)[:candidates]
        lists.append({"query": q["question"], "passages": ["".join(corpus[t]) for t in chosen]})
    return lists


def run_rust(binary, model_dir, lists_path, threads):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    out = subprocess.run(
        [str(binary), "--model", str(model_dir), "--input", str(lists_path), "--repeat", "1"],
        env=env, check=True, capture_output=True, text=True,
    )
    r = json.loads(out.stdout)
    assert r["threads"] == threads, r["threads"]
    return r["seconds"][0], r["scores"], r["model_id"]


def st_pass(model, lists):
    start = time.perf_counter()
    scores = [model.predict([(l["query"], p) for p in l["passages"]], batch_size=32, show_progress_bar=False) for l in lists]
    return time.perf_counter() - start, scores


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    ap.add_argument("--binary", type=Path, default=target / "release" / "examples" / "ce_speed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "datasets" / "hotpotqa-train100")
    a = ap.parse_args()
    if not a.binary.is_file():
        sys.exit(f"{a.binary}: build it with `cargo build --release -p hopbench-datasets --example ce_speed`")
    torch.set_num_threads(a.threads)
    golden = json.loads((ce_goldens.FIXTURES / "minilm_goldens.json").read_text(encoding="utf-8"))
    lists = reranking_lists(a.data, a.queries, a.candidates)
    pairs = sum(len(l["passages"]) for l in lists)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model_dir = tmp / "minilm-ce"
        ce_goldens.assemble_minilm(model_dir, golden["files"])
        lists_path = tmp / "lists.json"
        lists_path.write_text(json.dumps(lists), encoding="utf-8")
        model = CrossEncoder(str(model_dir), device="cpu")
        tokens = [len(model.tokenizer(l["query"], p, truncation="longest_first")["input_ids"]) for l in lists for p in l["passages"]]
        st_pass(model, lists)  # warm-up
        rust_s, st_s = [], []
        for _ in range(a.repeat):
            s, rust_scores, model_id = run_rust(a.binary, model_dir, lists_path, a.threads)
            rust_s.append(s)
            s, st_scores = st_pass(model, lists)
            st_s.append(s)
    diff = max(float(np.abs(np.asarray(r, dtype=np.float32) - np.asarray(s, dtype=np.float32)).max()) for r, s in zip(rust_scores, st_scores))
    rust_rate = pairs / statistics.median(rust_s)
    st_rate = pairs / statistics.median(st_s)
    print(f"model: {model_id} (sentence-transformers {ce_goldens.sentence_transformers.__version__}, torch {torch.__version__})")
    print(f"{len(lists)} queries x {a.candidates} candidates = {pairs} pairs, mean {statistics.mean(tokens):.1f} tokens per pair, {a.threads} threads, {a.repeat} alternated runs")
    print(f"hopbench:              {rust_rate:8.1f} pairs/s  (passes: {', '.join(f'{s:.2f}s' for s in rust_s)})")
    print(f"sentence-transformers: {st_rate:8.1f} pairs/s  (passes: {', '.join(f'{s:.2f}s' for s in st_s)})")
    print(f"ratio hopbench / sentence-transformers: {rust_rate / st_rate:.2f}; max |score difference| {diff:.2e}")


if __name__ == "__main__":
    main()
