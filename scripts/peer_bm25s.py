#!/usr/bin/env python3
"""Peer benchmark: bm25s (Lucene BM25, same k1, b, stop words and Snowball stemmer) beside
hopbench's `lexical` leg on the same corpus and queries.

Reports, per dataset, the mean top-10 overlap between the two rankings (|A ∩ B| / max(|A|, |B|),
positive-score hits only) and the queries/second of each, single-threaded. bm25s gets its most
favourable shape (all queries tokenised and retrieved in one batch); hopbench is timed one query
at a time (`hopbench bench latency`, median of 3 runs' throughput).

usage: scripts/peer_bm25s.py [--hopbench target/release/hopbench] [--data-dir ../shared/datasets]
                             [--datasets musique-train100,hotpotqa-train100] [--repeat 20]
needs: pip install bm25s PyStemmer pyarrow; the datasets prepared by hopbench (it prepares them).
"""
import argparse
import json
import os
import pathlib
import subprocess
import tempfile
import time

import bm25s
import pyarrow.parquet as pq
import Stemmer

# hopbench's lexical.rs STOPWORDS_EN (the Lucene English set), passed explicitly
STOPWORDS = ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
             "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they",
             "this", "to", "was", "will", "with"]


def hopbench_lexical(exe, data_dir, dataset, repeat):
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "lex.json"
        qps = []
        for _ in range(3):
            subprocess.run([exe, "bench", "latency", "--data-dir", data_dir, "--datasets", dataset,
                            "--legs", "lexical", "--repeat", str(repeat), "--top", "10", "--json", str(out)],
                           check=True, stdout=subprocess.DEVNULL)
            r = json.loads(out.read_text())[0]
            qps.append(r["qps"])
        return sorted(qps)[1], r["top"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hopbench", default="target/release/hopbench")
    ap.add_argument("--data-dir", default="../shared/datasets")
    ap.add_argument("--results", default="results")
    ap.add_argument("--datasets", default="musique-train100,hotpotqa-train100")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    stemmer = Stemmer.Stemmer("english")
    for ds in args.datasets.split(","):
        hb_qps, hb_top = hopbench_lexical(args.hopbench, args.data_dir, ds, args.repeat)
        exp = pathlib.Path(args.results) / "exports" / ds
        corpus = pq.read_table(exp / "corpus.parquet", columns=["chunk_id", "text", "context_header"]).to_pydict()
        texts = [t if h is None else f"{h}\n{t}" for t, h in zip(corpus["text"], corpus["context_header"])]
        ids = corpus["chunk_id"]
        queries = pq.read_table(exp / "queries.parquet", columns=["query_id", "text"]).to_pydict()
        retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
        retriever.index(bm25s.tokenize(texts, stopwords=STOPWORDS, stemmer=stemmer, show_progress=False),
                        show_progress=False)
        best = None
        for _ in range(max(3, args.repeat // 5)):
            t = time.perf_counter()
            q_tokens = bm25s.tokenize(queries["text"], stopwords=STOPWORDS, stemmer=stemmer, show_progress=False)
            docs, scores = retriever.retrieve(q_tokens, k=10, n_threads=1, show_progress=False)
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        bm_qps = len(queries["text"]) / best
        overlaps = []
        for qi, qid in enumerate(queries["query_id"]):
            theirs = {ids[d] for d, s in zip(docs[qi], scores[qi]) if s > 0}
            ours = set(hb_top.get(qid, []))
            overlaps.append(len(ours & theirs) / max(len(ours), len(theirs), 1))
        print(f"{ds}: {len(ids)} chunks, {len(overlaps)} queries; top-10 overlap {sum(overlaps) / len(overlaps):.4f} "
              f"(min {min(overlaps):.2f}); bm25s {bm_qps:,.0f} q/s (batched); hopbench lexical {hb_qps:,.0f} q/s "
              f"(one query at a time); ratio {hb_qps / bm_qps:.1f}x")


if __name__ == "__main__":
    main()
