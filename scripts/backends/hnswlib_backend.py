#!/usr/bin/env python3
"""An external dense engine for hopbench: approximate nearest neighbours over an export's corpus
vectors with hnswlib (HNSW, inner product on the export's L2-normalised vectors = cosine),
speaking the JSON-lines protocol of legs/src/engine/external.rs.

The index is built once at start-up, single-threaded and seeded, so the same export and
arguments give the same graph and the same answers. Scores are cosines (1 - hnswlib's inner
product distance), on the scale of hopbench's exact dense engine; results are sorted by score,
ties on ascending chunk id (the corpus is sorted by id).

usage, in a campaign leg:
    dense_hnsw: {kind: dense, dense: {engine: external,
                 command: [python3, scripts/backends/hnswlib_backend.py, --ef, '128']}}
The export directory comes from HOPBENCH_EXPORT and the vector column from HOPBENCH_VECTORS
(`embedding`, or `embedding_content` for dense_content_only), both set by hopbench; `--export`
and `--vectors` override them for a run by hand.

needs: pip install hnswlib==0.8.0 numpy==2.4.6 pyarrow==26.0.1
"""
import argparse
import json
import os
import pathlib
import sys

import hnswlib
import numpy as np
import pyarrow.parquet as pq


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", default=os.environ.get("HOPBENCH_EXPORT"),
                    help="the export directory (default: $HOPBENCH_EXPORT)")
    ap.add_argument("--vectors", default=os.environ.get("HOPBENCH_VECTORS", "embedding"),
                    choices=["embedding", "embedding_content"], help="the corpus vector column")
    ap.add_argument("--ef", type=int, default=128, help="search breadth (at least k is used)")
    ap.add_argument("--m", type=int, default=16, help="graph degree")
    ap.add_argument("--ef-construction", type=int, default=200, help="build breadth")
    ap.add_argument("--seed", type=int, default=100, help="the build's random seed")
    args = ap.parse_args()
    if not args.export:
        sys.exit("hnswlib_backend: no export directory (HOPBENCH_EXPORT or --export)")
    table = pq.read_table(pathlib.Path(args.export) / "corpus.parquet", columns=["chunk_id", args.vectors])
    ids = table.column("chunk_id").to_pylist()
    column = table.column(args.vectors)
    if column.null_count:
        sys.exit(f"hnswlib_backend: {args.export}/corpus.parquet: `{args.vectors}` has null rows")
    vectors = np.asarray(column.combine_chunks().flatten(), dtype=np.float32).reshape(len(ids), -1)
    n, dim = vectors.shape
    index = hnswlib.Index(space="ip", dim=dim)
    index.init_index(max_elements=max(n, 1), ef_construction=args.ef_construction, M=args.m,
                     random_seed=args.seed)
    if n:
        index.add_items(vectors, np.arange(n), num_threads=1)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        k = min(request["k"], n)
        results = []
        if k > 0:
            query = np.asarray(request["vector"], dtype=np.float32).reshape(1, -1)
            if query.shape[1] != dim:
                sys.exit(f"hnswlib_backend: query `{request['query_id']}` has a {query.shape[1]}-d vector, "
                         f"the corpus {dim}-d")
            index.set_ef(max(args.ef, k))
            labels, distances = index.knn_query(query, k=k, num_threads=1)
            scores = 1.0 - distances[0].astype(np.float64)
            order = np.lexsort((labels[0], -scores))
            results = [{"id": ids[labels[0][i]], "score": float(scores[i])} for i in order]
        print(json.dumps({"query_id": request["query_id"], "results": results}), flush=True)


if __name__ == "__main__":
    main()
