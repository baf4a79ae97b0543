#!/usr/bin/env python3
"""Proof that `hopbench eval` computes trec_eval's measures: on seeded random runs with graded
qrels (grades -1..4), ties, unjudged documents, queries absent from the run, queries without a
relevant document, run queries the qrels do not judge and cut-offs beyond the run's length, every
per-query value of every measure hopbench shares with trec_eval equals pytrec_eval's (trec_eval's
C code) to 1e-9, at relevance levels 1 and 2 and in both tie orders; and `--format trec-eval -q`
prints exactly the lines trec_eval's format gives for pytrec_eval's values.

The query set is hopbench's: the qrels' queries with a relevant document at the level. A query the
run does not mention is scored as an empty ranking (trec_eval's -c), so there its expected values
are trec_eval's on an empty ranking: 0, and num_rel its relevant count. `--ties id` (ascending
document id) is compared with pytrec_eval on the same run re-scored so that its order is the
ascending-id one; `--ties trec-eval` with the run as it is.

usage: scripts/trec_measures_check.py [--hopbench PATH] [--seed N] [--queries N] [--workdir DIR]
needs: pip install pytrec-eval-terrier
"""
import argparse
import json
import pathlib
import random
import subprocess
import sys
import tempfile

import pytrec_eval

TOL = 1e-9
# hopbench name -> trec_eval name; k = 1000 is beyond every generated ranking
MEASURES = [
    ("recall@1", "recall_1"), ("recall@5", "recall_5"), ("recall@1000", "recall_1000"),
    ("ndcg", "ndcg"), ("ndcg@3", "ndcg_cut_3"), ("ndcg@10", "ndcg_cut_10"),
    ("ndcg@1000", "ndcg_cut_1000"),
    ("mrr", "recip_rank"),
    ("AP", "map"), ("AP@5", "map_cut_5"), ("AP@1000", "map_cut_1000"),
    ("P@1", "P_1"), ("P@5", "P_5"), ("P@1000", "P_1000"),
    ("Rprec", "Rprec"),
    ("Success@1", "success_1"), ("Success@5", "success_5"), ("Success@1000", "success_1000"),
    ("Bpref", "bpref"),
    ("NumRet", "num_ret"), ("NumRel", "num_rel"), ("NumRelRet", "num_rel_ret"),
]
COUNTS = {"NumRet", "NumRel", "NumRelRet"}
PYTREC = {"recall.1,5,1000", "ndcg", "ndcg_cut.3,10,1000", "recip_rank", "map", "map_cut.5,1000",
          "P.1,5,1000", "Rprec", "success.1,5,1000", "bpref", "num_ret", "num_rel", "num_rel_ret"}


def generate(rng, queries):
    """A qrels dict {qid: {doc: grade}} and a run dict {qid: {doc: score}}."""
    qrels, run = {}, {}
    for q in range(queries):
        qid = f"q{q:04d}"
        kind = rng.random()
        judged = {}
        for _ in range(rng.randrange(1, 25)):
            # grades -1..4; a query in ten has no relevant document at all
            grade = rng.randrange(-1, 1) if kind < 0.1 else rng.randrange(-1, 5)
            judged[f"d{rng.randrange(80)}"] = grade
        qrels[qid] = judged
        if 0.1 <= kind < 0.2:
            continue  # absent from the run
        docs = rng.sample(range(80), rng.randrange(0, 60))
        # coarse scores make many ties; some documents were never judged
        run[qid] = {f"d{d}": rng.randrange(0, 8) / 4 for d in docs}
    for q in range(queries // 20):
        run[f"unjudged{q}"] = {"d1": 1.0, "d2": 0.5}
    return qrels, run


def write(path, text):
    path.write_text(text)
    return path


def by_ascending_id(run):
    """The run re-scored so that trec_eval's order is score descending, then ascending id."""
    out = {}
    for qid, docs in run.items():
        order = sorted(docs.items(), key=lambda x: (-x[1], x[0]))
        out[qid] = {d: float(len(order) - i) for i, (d, _) in enumerate(order)}
    return out


def expected_line(name, qid, value, count):
    return f"{name:<22}\t{qid}\t{int(round(value))}" if count else f"{name:<22}\t{qid}\t{value:6.4f}"


def check(hopbench, work, qrels, run, level, ties):
    qrels_path = write(work / "qrels.txt", "".join(
        f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    lines = []
    for q, docs in run.items():
        for rank, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1])):
            lines.append(f"{q} Q0 {d} {rank + 1} {s} t\n")
    run_path = write(work / "run.trec", "".join(lines))
    per_query = work / "per-query.json"
    base = [hopbench, "eval", str(run_path), str(qrels_path), "--no-ci", "--unknown-ids", "drop",
            "--relevance-level", str(level), "--ties", ties,
            "-m", ",".join(h for h, _ in MEASURES)]
    report = json.loads(subprocess.run(base + ["--format", "json", "--per-query", str(per_query)],
                                       check=True, capture_output=True, text=True).stdout)
    ours = json.loads(per_query.read_text())
    printed = subprocess.run(base + ["--format", "trec-eval", "-q"], check=True,
                             capture_output=True, text=True).stdout.splitlines()

    theirs_run = by_ascending_id(run) if ties == "id" else run
    theirs = pytrec_eval.RelevanceEvaluator(qrels, PYTREC, relevance_level=level).evaluate(theirs_run)
    evaluated = [q for q, docs in qrels.items() if any(g >= level for g in docs.values())]
    without = len(qrels) - len(evaluated)
    absent = [q for q in evaluated if not run.get(q)]
    failures = []
    if sorted(ours) != sorted(evaluated):
        failures.append(f"evaluated queries differ: {len(ours)} vs {len(evaluated)}")
    if (report["queries_without_relevant"], report["queries_absent"]) != (without, len(absent)):
        failures.append(f"counts: {report['queries_without_relevant']}, {report['queries_absent']}"
                        f" vs {without}, {len(absent)}")
    compared, max_diff = 0, 0.0
    want = {}
    for q in evaluated:
        if q in theirs:
            want[q] = {h: theirs[q][t] for h, t in MEASURES}
        else:  # an empty ranking, as trec_eval -c scores it
            want[q] = {h: 0.0 for h, _ in MEASURES}
            want[q]["NumRel"] = float(sum(g >= level for g in qrels[q].values()))
        for h, _ in MEASURES:
            a, b = ours.get(q, {}).get(h), want[q][h]
            compared += 1
            if a is None or abs(a - b) > TOL:
                failures.append(f"level {level} ties {ties} {q} {h}: hopbench {a} vs trec_eval {b}")
            else:
                max_diff = max(max_diff, abs(a - b))
    expected = [expected_line(t, q, want[q][h], h in COUNTS)
                for q in sorted(evaluated) for h, t in MEASURES]
    for h, t in MEASURES:
        values = [want[q][h] for q in evaluated]
        total = sum(values) if h in COUNTS else sum(values) / len(values)
        expected.append(expected_line(t, "all", total, h in COUNTS))
    if printed != expected:
        diff = [f"  hopbench {a!r}\n  expected {b!r}" for a, b in zip(printed, expected) if a != b]
        failures.append(f"level {level} ties {ties}: --format trec-eval differs in {len(diff)} of "
                        f"{len(expected)} lines ({len(printed)} printed)\n" + "\n".join(diff[:5]))
    return compared, max_diff, len(expected), len(evaluated), failures, ours


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hopbench", default="target/debug/hopbench")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--workdir")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    qrels, run = generate(rng, a.queries)
    work = pathlib.Path(a.workdir or tempfile.mkdtemp(prefix="trec-measures-"))
    work.mkdir(parents=True, exist_ok=True)
    total, worst, lines, failures, queries = 0, 0.0, 0, [], set()
    for level in (1, 2):
        per_ties = {}
        for ties in ("id", "trec-eval"):
            c, d, n, q, f, ours = check(a.hopbench, work, qrels, run, level, ties)
            total, worst, lines = total + c, max(worst, d), lines + n
            queries.add(q)
            failures += f
            per_ties[ties] = ours
        # the data must tell the tie orders apart, or the check above proves nothing about them
        changed = sum(per_ties["id"][q] != per_ties["trec-eval"][q] for q in per_ties["id"])
        if changed == 0:
            failures.append(f"level {level}: no query's values depend on the tie order")
    if failures:
        print("\n".join(failures[:40]))
        print(f"trec_measures_check: {len(failures)} differences")
        sys.exit(1)
    print(f"trec_measures_check: {total} per-query values ({len(MEASURES)} measures; "
          f"{'/'.join(map(str, sorted(queries)))} evaluated queries at levels 1 and 2; 2 tie "
          f"orders) equal pytrec_eval's (max abs diff {worst:.3g}); {lines} --format trec-eval "
          f"lines identical")


if __name__ == "__main__":
    main()
