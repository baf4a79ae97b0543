#!/usr/bin/env python3
"""Writes a small seeded BEIR-format dataset with graded judgements, two run files with ties,
and a campaign over them, for a matrix whose graded cells `scripts/trec_check.py` then checks
against trec_eval (graded nDCG, recall at level 1).

usage: scripts/graded_matrix_data.py OUT_DIR [--seed 11] [--queries 60] [--docs 400]
then:  hopbench run-matrix --campaign OUT_DIR/campaign.yaml --data-dir OUT_DIR/data \
           --results OUT_DIR/results --threads 2 --quiet --no-report
       scripts/trec_check.py OUT_DIR/results

What it holds (all from one seeded generator, so the same seed writes the same bytes):
- a corpus of `--docs` short documents over a small vocabulary (so BM25 and the hashing
  embedder retrieve something and rank with ties);
- qrels with grades -1..4 (judged non-relevant, then relevance levels 1-4); some queries have
  no relevant document at all, and some relevant documents are never retrieved;
- `run.trec`, a system's run whose scores have one decimal (so equal scores are common), and a
  leg of it under each tie order (`ties: id`, `ties: trec_eval`), besides the built-in lexical,
  bm25 and dense legs over the hashing embedder (no model directory needed).
"""
import argparse
import pathlib
import random

WORDS = (
    "river stone north castle market winter bridge garden iron silver harbor forest valley "
    "tower lantern meadow copper island temple canyon orchard glacier desert falcon"
).split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--docs", type=int, default=400)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    data = a.out / "data" / "graded"
    (data / "qrels").mkdir(parents=True, exist_ok=True)
    docs = [f"d{i:04d}" for i in range(a.docs)]
    with open(data / "corpus.jsonl", "w") as f:
        for d in docs:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))
            f.write(f'{{"_id": "{d}", "title": "{rng.choice(WORDS)}", "text": "{text}"}}\n')
    queries = [f"q{i:03d}" for i in range(a.queries)]
    with open(data / "queries.jsonl", "w") as f:
        for q in queries:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))
            f.write(f'{{"_id": "{q}", "text": "{text}"}}\n')
    run_lines = []
    with open(data / "qrels" / "test.tsv", "w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q in queries:
            judged = rng.sample(docs, rng.randint(1, 8))
            for d in judged:
                # one query in five has only non-relevant judgements (the BEIR reader keeps no such
                # query, so the run legs drop their records: `unknown_ids: drop`)
                grade = rng.choice([-1, 0]) if q.endswith(("0", "6")) else rng.randint(-1, 4)
                f.write(f"{q}\t{d}\t{grade}\n")
            # the run: some judged documents, some not, scores with one decimal (ties)
            pool = set(rng.sample(judged, max(1, len(judged) * 2 // 3)))
            pool.update(rng.sample(docs, rng.randint(5, 30)))
            for d in sorted(pool):
                run_lines.append(f"{q} Q0 {d} 0 {rng.randint(0, 40) / 10:.1f} mine")
    (a.out / "run.trec").write_text("\n".join(run_lines) + "\n")
    (a.out / "campaign.yaml").write_text(
        "model: hashing-384\n"
        "recall_k: [1, 5, 10, 20]\n"
        "stats: {resamples: 200, permutations: 200, seed: 5}\n"
        "datasets:\n"
        "  graded:\n"
        "    format: beir\n"
        "    files: {corpus: graded/corpus.jsonl, queries: graded/queries.jsonl, "
        "qrels: graded/qrels/test.tsv}\n"
        "legs:\n"
        "  lexical: {kind: lexical}\n"
        "  bm25: {kind: bm25}\n"
        "  dense: {kind: dense}\n"
        "  run_id: {kind: run, file: run.trec, unknown_ids: drop}\n"
        "  run_trec_eval: {kind: run, file: run.trec, unknown_ids: drop, ties: trec_eval}\n"
    )
    print(f"graded_matrix_data: {a.queries} queries, {a.docs} documents, "
          f"{len(run_lines)} run lines in {a.out}")


if __name__ == "__main__":
    main()
