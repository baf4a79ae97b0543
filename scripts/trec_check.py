#!/usr/bin/env python3
"""Validity check: recompute recall@k and nDCG@10 of every ok cell with trec_eval's Python
binding (pytrec-eval-terrier) from the TREC run and qrels files hopbench wrote, and assert they
equal hopbench's own per-query values (from <leg>.queries.parquet) to 1e-9. The qrels carry
grades where the dataset's judgements do (nDCG's gain is the grade, as in trec_eval).

A `run` leg's cell is also checked against trec_eval on the leg's *original* run file, whose
equal scores trec_eval orders by descending document id: with `ties: trec_eval` every value must
be equal; with the default `ties: id` the check reports how many values the tie order changed
(and, given --expect-tie-effect, fails when none did: proof that the run's ties were exercised).

usage: scripts/trec_check.py RESULTS_DIR [--expect-tie-effect]
needs: pip install pytrec-eval-terrier pyarrow
"""
import json
import pathlib
import sys

import pyarrow.parquet as pq
import pytrec_eval

from eval_bench import read_trec


def encode(qid):
    # the same percent-encoding as hopbench's trec.rs: '%' and white space
    return "".join("".join(f"%{b:02X}" for b in c.encode()) if c == "%" or c.isspace() else c for c in qid)


def original_run_check(s, table, qrels, measures, pairs):
    """(values compared, values that differ) of the cell against trec_eval on its run file."""
    config = s["inputs"]["leg_config"]
    if config.get("kind") != "run" or s["dataset"] != (config.get("dataset") or s["dataset"]):
        return 0, []
    original = read_trec(pathlib.Path(config["file"]), "run")
    evaluated = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(original)
    compared, differ = 0, []
    for i, qid in enumerate(table["query_id"]):
        q = encode(qid)
        if q not in qrels:
            continue
        got = evaluated.get(q, {})
        for ours, theirs in pairs:
            a, b = table[ours][i], got.get(theirs, 0.0)
            compared += 1
            if a is None or abs(a - b) > 1e-9:
                differ.append(f"{s['dataset']} x {s['leg']} {qid} {ours}: hopbench {a} vs "
                              f"trec_eval on {config['file']} {b}")
    return compared, differ


def main():
    results = pathlib.Path(sys.argv[1])
    expect_tie_effect = "--expect-tie-effect" in sys.argv[2:]
    checked, failures = 0, []
    tie_legs = {}
    for summary_path in sorted((results / "cells").glob("*/*.summary.json")):
        s = json.loads(summary_path.read_text())
        if s["status"] != "ok":
            continue
        ds, leg = s["dataset"], s["leg"]
        ks = s["inputs"]["recall_k"]
        qrels = read_trec(results / "runs" / ds / "qrels.txt", "qrels")
        run = read_trec(results / "runs" / ds / f"{leg}.trec", "run")
        measures = {"recall." + ",".join(map(str, ks)), "ndcg_cut.10"}
        evaluated = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
        table = pq.read_table(results / "cells" / ds / f"{leg}.queries.parquet").to_pydict()
        pairs = [(f"recall@{k}", f"recall_{k}") for k in ks] + [("ndcg@10", "ndcg_cut_10")]
        compared, differ = original_run_check(s, table, qrels, measures, pairs)
        if compared:
            ties = s["inputs"]["leg_config"].get("ties", "id")
            tie_legs[f"{ds} x {leg}"] = (ties, compared, len(differ))
            if ties == "trec_eval":
                checked += compared
                failures.extend(differ)
        for i, qid in enumerate(table["query_id"]):
            q = encode(qid)
            if q not in qrels:
                continue  # trec_eval skips queries without gold; hopbench scores them 0
            got = evaluated.get(q, {})
            for ours, theirs in pairs:
                a, b = table[ours][i], got.get(theirs, 0.0)
                checked += 1
                if a is None or abs(a - b) > 1e-9:
                    failures.append(f"{ds} x {leg} {qid} {ours}: hopbench {a} vs trec_eval {b}")
    for name, (ties, compared, differ) in sorted(tie_legs.items()):
        print(f"trec_check: {name} (ties: {ties}) against trec_eval on its run file: "
              f"{compared - differ} of {compared} values equal")
    if expect_tie_effect and not any(t == "id" and d > 0 for t, _, d in tie_legs.values()):
        failures.append("no `ties: id` run leg differs from trec_eval on its run file: the "
                        "run's ties were not exercised")
    if failures:
        print("\n".join(failures[:50]))
        print(f"trec_check: {len(failures)} of {checked} values differ")
        sys.exit(1)
    if checked == 0:
        print("trec_check: no ok cell found")
        sys.exit(1)
    print(f"trec_check: {checked} per-query values equal trec_eval's to 1e-9")


if __name__ == "__main__":
    main()
