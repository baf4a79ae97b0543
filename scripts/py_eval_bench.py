#!/usr/bin/env python3
"""Times `hopbench.evaluate` against `ranx.evaluate` and pytrec_eval in one process, on the
shapes Python users hold: a dict run `{qid: {docid: score}}` with dict qrels, and the same run as
a pandas DataFrame. Each timing is end to end from the Python objects: hopbench's call includes
reading the dicts or columns; ranx's includes building its `Qrels` and `Run` (from the dicts, or
`Run.from_df`); pytrec_eval's includes building the `RelevanceEvaluator` (and, for the
DataFrame, turning it into the dict it takes). One thread everywhere (NUMBA_NUM_THREADS=1 for
ranx; hopbench's evaluation is single-threaded). Per-query values are checked equal to
pytrec_eval's to 1e-9. Last, the floors any evaluator of the dicts stands on: each entry of the
run and of the qrels walked in C, its id checked and read, its value read, nothing matched or
scored (scripts/py_eval_floor.c, built here with the C compiler, `gcc` or `$CC`).

Usage: scripts/py_eval_bench.py [--queries 100000] [--depth 100] [--seed 7] [--repeat 1]

Needs the hopbench package (`pip install .`), ranx, pytrec-eval-terrier and pandas.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

# hopbench, ranx, pytrec_eval: one measure set in each one's names
MEASURES = {
    "hopbench": ["nDCG@10", "R@100", "AP"],
    "ranx": ["ndcg@10", "recall@100", "map"],
    "pytrec_eval": ["ndcg_cut_10", "recall_100", "map"],
}


def generate(queries, depth, seed):
    """A seeded run (each query's documents with distinct scores) and graded qrels (grades
    0..3, some relevant documents outside the run), as dicts."""
    import random

    rng = random.Random(seed)
    run, qrels = {}, {}
    for q in range(queries):
        qid = f"q{q}"
        base = rng.randrange(10_000_000)
        docs = {}
        for r in range(depth):
            docs[f"d{base + 10 * r + rng.randrange(10)}"] = round(100.0 - r - rng.random() * 0.5, 6)
        run[qid] = docs
        ranked = list(docs)
        judged = {}
        for _ in range(rng.randrange(1, 6)):
            d = ranked[rng.randrange(depth)] if rng.random() < 0.7 else f"d{rng.randrange(10**8)}"
            judged[d] = rng.randrange(0, 4)
        if not any(g > 0 for g in judged.values()):
            judged[ranked[rng.randrange(depth)]] = 1
        qrels[qid] = judged
    return run, qrels


def floor_walk():
    """scripts/py_eval_floor.c's `walk`, built for this interpreter in a temporary directory;
    None (with a note) where it cannot be built."""
    import importlib.util
    import pathlib
    import subprocess
    import sysconfig
    import tempfile

    source = pathlib.Path(__file__).with_name("py_eval_floor.c")
    out = pathlib.Path(tempfile.mkdtemp()) / ("py_eval_floor" + sysconfig.get_config_var("EXT_SUFFIX"))
    cc = [os.environ.get("CC", "gcc"), "-O2", "-shared", "-fPIC",
          "-I" + sysconfig.get_paths()["include"], str(source), "-o", str(out)]
    try:
        subprocess.run(cc, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"py_eval_bench: the C floor was not built ({e}); its line is left out",
              file=sys.stderr)
        return None
    spec = importlib.util.spec_from_file_location("py_eval_floor", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.walk


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()

    import hopbench
    import pandas as pd
    import pytrec_eval
    import ranx

    run, qrels = generate(a.queries, a.depth, a.seed)
    records = sum(len(d) for d in run.values())
    df = pd.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        columns=["query_id", "doc_id", "score"],
    )
    print(f"{a.queries} queries x {a.depth} ({records} records), qrels grades 0..3, one thread, "
          f"measures {', '.join(MEASURES['hopbench'])}; fastest of {a.repeat}")
    # pandas 3 keeps str columns in Arrow when pyarrow is installed (hopbench then reads the
    # Arrow buffers), else as Python objects (read as lists)
    print(f"pandas {pd.__version__}, id columns {df['doc_id'].dtype!r}")

    def best(f):
        return min((timed(f) for _ in range(a.repeat)), key=lambda x: x[0])

    # ranx compiles its numba kernels on first use: once on a toy pair, outside the timing
    ranx.evaluate(ranx.Qrels({"q": {"d": 1}}), ranx.Run({"q": {"d": 1.0}}), MEASURES["ranx"])

    rows = []
    t_hb, hb = best(lambda: hopbench.evaluate(run, qrels, MEASURES["hopbench"], ci=False,
                                              per_query=True, ties="trec_eval"))
    rows.append(("hopbench.evaluate (dict)", t_hb))
    t_hb_df, hb_df = best(lambda: hopbench.evaluate(df, qrels, MEASURES["hopbench"], ci=False,
                                                    per_query=True, ties="trec_eval"))
    rows.append(("hopbench.evaluate (DataFrame)", t_hb_df))
    try:
        import polars as pl

        pdf = pl.from_pandas(df)
        t_hb_pl, _ = best(lambda: hopbench.evaluate(pdf, qrels, MEASURES["hopbench"], ci=False,
                                                     per_query=True, ties="trec_eval"))
        rows.append(("hopbench.evaluate (polars DataFrame)", t_hb_pl))
    except ImportError:
        pass
    t_rx, _ = best(lambda: ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), MEASURES["ranx"]))
    rows.append(("ranx.evaluate (Qrels, Run from dicts)", t_rx))
    # ranx's from_df asserts `object` id columns (pandas 3's default is its string dtype): the
    # frame it gets is converted outside its timing
    df_object = df.astype({"query_id": object, "doc_id": object})
    t_rx_df, _ = best(lambda: ranx.evaluate(
        ranx.Qrels(qrels),
        ranx.Run.from_df(df_object, q_id_col="query_id", doc_id_col="doc_id", score_col="score"),
        MEASURES["ranx"]))
    rows.append(("ranx.evaluate (Run.from_df)", t_rx_df))

    def trec(run_dict):
        ev = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES["pytrec_eval"]))
        return ev.evaluate(run_dict)

    t_te, te = best(lambda: trec(run))
    rows.append(("pytrec_eval (dict)", t_te))

    def df_to_dict():
        out = {}
        for q, d, s in zip(df["query_id"].tolist(), df["doc_id"].tolist(), df["score"].tolist()):
            out.setdefault(q, {})[d] = s
        return trec(out)

    t_te_df, _ = best(df_to_dict)
    rows.append(("pytrec_eval (DataFrame -> dict)", t_te_df))

    # floors for any evaluator of the dict: each score touched once in C (`sum` over each
    # query's `dict.values()`), and each entry walked in C with its id checked and read
    # (scripts/py_eval_floor.c, when a C compiler is at hand); nothing ranked or scored
    t_floor, _ = best(lambda: sum(map(sum, map(dict.values, run.values()))))
    walk = floor_walk()
    t_walk = best(lambda: walk(run))[0] if walk else None
    t_walk_qrels = best(lambda: walk(qrels))[0] if walk else None

    # values: hopbench's per-query equal pytrec_eval's (same queries: those with a relevant doc)
    # (the per-query frame names measures as hopbench writes them: ndcg@10, recall@100, AP)
    names = {"ndcg@10": "ndcg_cut_10", "recall@100": "recall_100", "AP": "map"}
    diff = 0.0
    for frame in (hb, hb_df):
        for q, m, v in zip(frame["query_id"], frame["measure"], frame["value"]):
            diff = max(diff, abs(v - te[q][names[m]]))
    print("\n| evaluator | seconds | hopbench (same input) is faster by |\n|---|---:|---:|")
    for name, t in rows:
        if name.startswith("hopbench"):
            print(f"| {name} | {t:.2f} | |")
            continue
        ref = t_hb_df if "DataFrame" in name or "from_df" in name else t_hb
        print(f"| {name} | {t:.2f} | {t / ref:.1f}x |")
    print(f"\nper-query values: hopbench vs pytrec_eval max |diff| {diff:.1e}")
    print(f"floor (each score of the dict touched once in C, nothing scored): {t_floor:.3f} s; "
          f"a tenth of pytrec_eval's dict time is {t_te / 10:.3f} s")
    if t_walk is not None:
        print(f"floor (each entry walked in C, its id checked and read, its score read; "
              f"scripts/py_eval_floor.c): {t_walk:.3f} s the run, {t_walk_qrels:.3f} s the "
              f"qrels, {t_walk + t_walk_qrels:.3f} s both")
    if diff > 1e-9:
        sys.exit("py_eval_bench: values differ")


if __name__ == "__main__":
    main()
