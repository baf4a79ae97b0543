#!/usr/bin/env python3
"""Times `hopbench eval` (one thread) against ranx and pytrec_eval on the same run and qrels,
checks that every per-query value agrees to 1e-9, and prints a table.

usage:
  scripts/eval_bench.py [--queries 10000] [--depth 100] [--seed 7]      # a generated run
  scripts/eval_bench.py --run results/runs/D/bm25.trec --qrels results/runs/D/qrels.txt
options:
  --hopbench PATH   the binary (default: target/release/hopbench; build it with
                    `cargo build --release` first)
  --peers LIST      comma list of ranx,pytrec_eval (default: both); pytrec_eval holds the run
                    as Python dicts: about 25 GB at --queries 1000000
  --workdir DIR     where the generated files go (default: a temporary directory, removed)
  --repeat N        timed runs of each evaluator; the table shows the fastest (default 1)
  --graded          qrels with grades -1..4 (judged non-relevant, then levels 1-4; each query's
                    first judged document relevant), for graded nDCG
  --measures SET    `seed` (default): recall@1,2,5,10,20, nDCG@10, MRR@10; `graded8`: nDCG@10,
                    nDCG, AP, P@10, R@100, RR, Rprec (all three evaluators) and Judged@10
                    (hopbench alone: ranx and trec_eval have no judged@k)
  --skip-ci         do not time hopbench with its bootstrap CIs (the peers compute none)
  --ranx-shards N   give ranx the run in N files of whole queries, read and scored one after
                    the other, the times summed (default 1: the whole file). ranx holds the run
                    in memory: at --queries 1000000 it was killed at 24 GB on a 24 GB machine,
                    so its 1M figure is 10 shards of 100,000 queries (smaller structures than
                    one run of 1M, so if anything in ranx's favour)

needs: pip install ranx==0.3.20 pytrec-eval-terrier==0.5.11 numpy

The generated run: N queries x depth documents, seeded; within a query the documents are
distinct and their scores strictly decreasing (so no evaluator's tie rule matters), written
`q{n} Q0 d{m} rank score tag` with 6 decimals. The qrels judge 1 to 5 documents per query
relevant (rel 1), about half of them retrieved. Measured: recall@1,2,5,10,20 and nDCG@10 (all
three evaluators) and MRR@10 (hopbench and ranx; trec_eval's recip_rank has no cut-off).

Timings are wall times of the whole evaluation from the files (read once before any timing,
so that each evaluator reads them from the page cache): hopbench as a process (read,
score, write the per-query TSV; `--no-ci`, since the peers compute no CI, and once more with its
default bootstrap CIs), ranx and pytrec_eval in this process (read the files, build their
structures, evaluate). Python start-up, imports and ranx's one-time numba compilation (done on a
toy run first) are not counted for the peers.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

KS = [1, 2, 5, 10, 20]
TOL = 1e-9

# Measure sets: hopbench's -m list (None: its default), and per measure the names ranx and
# pytrec_eval give it (None: that peer lacks it), keyed by hopbench's per-query column.
MEASURES = {
    # recall@1,2,5,10,20, nDCG@10 (all three) and MRR@10 (hopbench and ranx)
    "seed": (None, {
        **{f"recall@{k}": (f"recall@{k}", f"recall_{k}") for k in KS},
        "ndcg@10": ("ndcg@10", "ndcg_cut_10"),
        "mrr@10": ("mrr@10", None),
    }),
    # the eight measures papers report, on graded judgements
    "graded8": ("nDCG@10,nDCG,AP,P@10,R@100,RR,Rprec,Judged@10", {
        "ndcg@10": ("ndcg@10", "ndcg_cut_10"),
        "ndcg": ("ndcg", "ndcg"),
        "AP": ("map", "map"),
        "P@10": ("precision@10", "P_10"),
        "recall@100": ("recall@100", "recall_100"),
        "mrr": ("mrr", "recip_rank"),
        "Rprec": ("r-precision", "Rprec"),
        "Judged@10": (None, None),
    }),
}


def generate(workdir, queries, depth, seed, graded=False):
    import numpy as np

    rng = np.random.default_rng(seed)
    run_path = workdir / "run.trec"
    qrels_path = workdir / "qrels.txt"
    corpus = max(10 * depth, 10_000_000)
    chunk = 10_000
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for start in range(0, queries, chunk):
            n = min(chunk, queries - start)
            # distinct documents per query: a random base plus increasing gaps
            base = rng.integers(0, corpus, size=(n, 1))
            docs = (base + np.cumsum(rng.integers(1, 50, size=(n, depth)), axis=1)) % corpus
            # strictly decreasing scores: depth - rank plus a fraction below 0.5
            frac = rng.random((n, depth)) * 0.5
            scores = (depth - np.arange(depth))[None, :] + frac
            # documents in a random order of the ranking
            order = np.argsort(rng.random((n, depth)), axis=1)
            docs = np.take_along_axis(docs, order, axis=1)
            rel_count = rng.integers(1, 6, size=n)
            lines = []
            judged = []
            for i in range(n):
                q = f"q{start + i}"
                row_d, row_s = docs[i], scores[i]
                lines.append(
                    "\n".join(
                        f"{q} Q0 d{row_d[r]} {r + 1} {row_s[r]:.6f} gen" for r in range(depth)
                    )
                )
                picks = set()
                for _ in range(rel_count[i]):
                    if rng.random() < 0.5:
                        picks.add(int(row_d[rng.integers(0, depth)]))
                    else:
                        picks.add(int(rng.integers(corpus, 2 * corpus)))
                if graded:
                    # grades -1..4 (judged non-relevant, then levels 1-4); the first judged
                    # document is relevant, so every evaluator evaluates every query
                    grades = rng.integers(-1, 5, size=len(picks))
                    grades[0] = rng.integers(1, 5)
                    rels = zip(sorted(picks), (int(g) for g in grades))
                else:
                    rels = ((d, 1) for d in sorted(picks))
                judged.append("\n".join(f"{q} 0 d{d} {g}" for d, g in rels))
            run.write("\n".join(lines) + "\n")
            qrels.write("\n".join(judged) + "\n")
    return run_path, qrels_path


def read_trec(path, kind):
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if kind == "qrels":
                qid, _, doc, rel = parts
                out.setdefault(qid, {})[doc] = int(rel)
            else:
                qid, _, doc, _rank, score, _tag = parts
                out.setdefault(qid, {})[doc] = float(score)
    return out


def hopbench(binary, run, qrels, workdir, ci, measures):
    per_query = workdir / "hopbench-per-query.tsv"
    args = [str(binary), "eval", str(run), str(qrels), "--format", "json",
            "--per-query", str(per_query)]
    if MEASURES[measures][0]:
        args += ["-m", MEASURES[measures][0]]
    if not ci:
        args.append("--no-ci")
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t0
    values = {}
    with open(per_query) as f:
        names = f.readline().rstrip("\n").split("\t")[1:]
        for line in f:
            cols = line.rstrip("\n").split("\t")
            values[cols[0]] = {n: float(v) if v else None for n, v in zip(names, cols[1:])}
    return elapsed, values


def split_by_query(run, qrels, shards, workdir):
    """The run as `shards` files of whole queries (about equally many each; a query's lines are
    contiguous in the generated files and in the harness's runs), each with the qrels of exactly
    its queries; not timed."""
    qids = []
    with open(run) as f:
        for line in f:
            q = line.split(None, 1)[0] if line.strip() else None
            if q is not None and (not qids or qids[-1] != q):
                qids.append(q)
    if len(set(qids)) != len(qids):
        raise SystemExit(f"{run}: a query's lines are not contiguous; cannot shard it")
    per = -(-len(qids) // shards)
    shard_of = {q: i // per for i, q in enumerate(qids)}
    parts = [(workdir / f"run.shard{i}", workdir / f"qrels.shard{i}") for i in range(shards)]
    for src, side in ((run, 0), (qrels, 1)):
        outs = [open(p[side], "w") for p in parts]
        with open(src) as f:
            for line in f:
                i = shard_of.get(line.split(None, 1)[0]) if line.strip() else None
                if i is not None:
                    outs[i].write(line)
        for o in outs:
            o.close()
    return parts


def ranx_sharded(run, qrels, shards, workdir, measures):
    """[`ranx_eval`] over the run in `shards` parts, each against the qrels of its queries:
    the times summed, the values joined."""
    if shards == 1:
        ranx_eval(run, qrels, measures)  # numba compiles for these types: not timed
        return ranx_eval(run, qrels, measures)
    total, values = 0.0, {}
    parts = split_by_query(run, qrels, shards, workdir)
    ranx_eval(*parts[0], measures)  # numba compiles for these types: not timed
    for r, q in parts:
        t, v = ranx_eval(r, q, measures)
        total += t
        values.update(v)
        r.unlink()
        q.unlink()
    return total, values


def ranx_eval(run, qrels, measures):
    from ranx import Qrels, Run, evaluate

    names = {r: ours for ours, (r, _) in MEASURES[measures][1].items() if r}
    metrics = list(names)
    # numba compiles ranx's readers and metrics on first use (about a minute); compile them
    # outside the timing, on a toy pair read the same way (the callers also run the first
    # file once untimed: some metrics compile again for the real files' types)
    with tempfile.TemporaryDirectory() as toy:
        tq, tr = pathlib.Path(toy) / "q.txt", pathlib.Path(toy) / "r.trec"
        tq.write_text("a 0 x 1\n")
        tr.write_text("a Q0 x 1 2.0 t\na Q0 y 2 1.0 t\n")
        evaluate(Qrels.from_file(str(tq), kind="trec"), Run.from_file(str(tr), kind="trec"),
                 metrics, threads=1)
    t0 = time.perf_counter()
    q = Qrels.from_file(str(qrels), kind="trec")
    r = Run.from_file(str(run), kind="trec")
    evaluate(q, r, metrics, save_results_in_run=True, threads=1)
    elapsed = time.perf_counter() - t0
    values = {}
    for m in metrics:
        for qid, v in r.scores[m].items():
            values.setdefault(qid, {})[names[m]] = float(v)
    return elapsed, values


def pytrec_eval_eval(run, qrels, measures):
    import pytrec_eval

    t0 = time.perf_counter()
    qd = read_trec(qrels, "qrels")
    rd = read_trec(run, "run")
    names = {t: ours for ours, (_, t) in MEASURES[measures][1].items() if t}
    asked = set()
    for t in names:
        stem, _, k = t.rpartition("_")
        asked.add(f"{stem}.{k}" if k.isdigit() and stem else t)
    out = pytrec_eval.RelevanceEvaluator(qd, asked).evaluate(rd)
    elapsed = time.perf_counter() - t0
    values = {qid: {ours: ms[t] for t, ours in names.items()} for qid, ms in out.items()}
    return elapsed, values


def max_diff(ours, theirs, name):
    """The largest per-query difference over the metrics both report; every query of each side
    must be on the other."""
    if set(ours) != set(theirs):
        only = sorted(set(ours) ^ set(theirs))[:5]
        raise SystemExit(f"{name}: the query sets differ (e.g. {only})")
    worst = 0.0
    for qid, row in ours.items():
        for m, v in theirs[qid].items():
            if row[m] is None:
                raise SystemExit(f"{name}: {qid} {m}: hopbench says undefined, {name} {v}")
            worst = max(worst, abs(row[m] - v))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--run")
    ap.add_argument("--qrels")
    ap.add_argument("--hopbench", default="target/release/hopbench")
    ap.add_argument("--peers", default="ranx,pytrec_eval")
    ap.add_argument("--workdir")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--ranx-shards", type=int, default=1)
    ap.add_argument("--graded", action="store_true")
    ap.add_argument("--skip-ci", action="store_true")
    ap.add_argument("--measures", choices=sorted(MEASURES), default="seed")
    a = ap.parse_args()
    if bool(a.run) != bool(a.qrels):
        ap.error("give both --run and --qrels, or neither")
    peers = [p for p in a.peers.split(",") if p]
    for p in peers:
        if p not in ("ranx", "pytrec_eval"):
            ap.error(f"unknown peer {p}")
    binary = pathlib.Path(a.hopbench)
    if not binary.is_file():
        ap.error(f"{binary}: no hopbench binary (cargo build --release, or --hopbench PATH)")
    own_dir = a.workdir is None
    workdir = pathlib.Path(a.workdir or tempfile.mkdtemp(prefix="eval_bench."))
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ["RAYON_NUM_THREADS"] = "1"
    os.environ["NUMBA_NUM_THREADS"] = "1"
    try:
        if a.run:
            run, qrels = pathlib.Path(a.run), pathlib.Path(a.qrels)
            label = f"{run.name} vs {qrels.name}"
        else:
            t0 = time.perf_counter()
            run, qrels = generate(workdir, a.queries, a.depth, a.seed, a.graded)
            print(f"generated {a.queries} x {a.depth} in {time.perf_counter() - t0:.1f} s "
                  f"({run.stat().st_size / 1e6:.0f} MB) under {workdir}", file=sys.stderr)
            label = f"generated{', graded' if a.graded else ''}, seed {a.seed}"
        # every evaluator starts from the page cache: this pass reads both files once (and
        # counts the run's lines) before any timing
        lines = sum(1 for _ in open(run))
        with open(qrels, "rb") as f:
            while f.read(1 << 24):
                pass
        best = lambda f: min((f() for _ in range(a.repeat)), key=lambda x: x[0])
        rows = []
        t, ours = best(lambda: hopbench(binary, run, qrels, workdir, ci=False, measures=a.measures))
        rows.append(("hopbench eval --no-ci", t, "reference"))
        if not a.skip_ci:
            t_ci, ours_ci = best(
                lambda: hopbench(binary, run, qrels, workdir, ci=True, measures=a.measures)
            )
            if ours_ci != ours:
                raise SystemExit("hopbench: the values differ with and without CIs")
            rows.append(("hopbench eval (bootstrap CIs)", t_ci, "identical"))
        for p in peers:
            if p == "ranx":
                f = lambda: ranx_sharded(run, qrels, a.ranx_shards, workdir, a.measures)
            else:
                f = lambda: pytrec_eval_eval(run, qrels, a.measures)
            t, theirs = best(f)
            d = max_diff(ours, theirs, p)
            if d > TOL:
                raise SystemExit(f"{p}: a per-query value differs from hopbench's by {d:.3g}")
            shards = f" ({a.ranx_shards} shards)" if p == "ranx" and a.ranx_shards > 1 else ""
            rows.append((p + shards, t, f"max |diff| {d:.1e}"))
        print(f"\n{label}: {len(ours)} queries, {lines} run lines, one thread, measures "
              f"{a.measures} ({', '.join(MEASURES[a.measures][1])})\n")
        print(f"| evaluator | seconds | vs hopbench --no-ci | per-query values |")
        print(f"|---|---:|---:|---|")
        for name, t, check in rows:
            print(f"| {name} | {t:.2f} | {t / rows[0][1]:.1f}x | {check} |")
    finally:
        if own_dir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
