#!/usr/bin/env python3
"""Backfill check on real curves: for every (query, budget) where the packer's pool (the first 100
of the ranking it packs, read from that ranking's TREC run file) holds at least the budget, the
packer must spend at least 95% of it. Prints the count of such pairs and the lowest spend.

usage: scripts/spend_check.py RESULTS DATASET [PACKED_LEG:RANKING_LEG ...]
       (default legs: packer:kg graph_rescue_packed:graph_rescue)
needs: pip install pyarrow
"""
import collections
import sys

import pyarrow.parquet as pq


def enc(s):
    # hopbench's trec.rs percent-encoding: '%' and white space only
    return "".join("".join(f"%{b:02X}" for b in c.encode()) if c == "%" or c.isspace() else c for c in s)


def main():
    results, ds = sys.argv[1], sys.argv[2]
    pairs = [p.split(":") for p in sys.argv[3:]] or [["packer", "kg"], ["graph_rescue_packed", "graph_rescue"]]
    corpus = pq.read_table(f"{results}/exports/{ds}/corpus.parquet", columns=["chunk_id", "token_count"]).to_pydict()
    tokens = {enc(c): t for c, t in zip(corpus["chunk_id"], corpus["token_count"])}
    failed = False
    for leg, ranking in pairs:
        runs = collections.defaultdict(list)
        for line in open(f"{results}/runs/{ds}/{ranking}.trec"):
            q, _, doc, _rank, _score, _tag = line.split()
            runs[q].append(doc)
        pool = {q: sum(tokens[d] for d in docs[:100]) for q, docs in runs.items()}
        t = pq.read_table(f"{results}/curves/{ds}/{leg}.curve.parquet").to_pydict()
        n = low = 0
        worst = 1.0
        for q, b, spent in zip(t["query_id"], t["budget"], t["tokens"]):
            if pool[enc(q)] >= b:
                n += 1
                worst = min(worst, spent / b)
                low += spent < 0.95 * b
        failed |= low > 0
        print(f"{ds} {leg}: {n} (query, budget) pairs whose pool holds the budget; {low} below 95%; lowest spend {worst:.4f}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
