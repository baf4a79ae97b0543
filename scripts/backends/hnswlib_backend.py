#!/usr/bin/env python3
"""An external dense engine for hopbench: approximate nearest neighbours over an export's corpus
vectors with hnswlib (HNSW, inner product on the export's L2-normalised vectors = cosine),
speaking the JSON-lines protocol of legs/src/engine/external.rs through hopbench.backend.serve.

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
import pathlib
import sys

import hnswlib
import numpy as np

try:
    from hopbench.backend import BackendError, serve
except ImportError:  # run from the source tree, the package not installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
    from hopbench.backend import BackendError, serve


def builder(args):
    """The setup for `serve`: builds the index over the corpus vectors, returns its search."""

    def build(corpus):
        vectors = corpus.vectors
        n, dim = vectors.shape
        index = hnswlib.Index(space="ip", dim=dim)
        index.init_index(max_elements=max(n, 1), ef_construction=args.ef_construction, M=args.m,
                         random_seed=args.seed)
        if n:
            index.add_items(vectors, np.arange(n), num_threads=1)

        def search(query_id, text, vector, k):
            k = min(k, n)
            if k == 0:
                return []
            query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
            if query.shape[1] != dim:
                raise BackendError(f"a {query.shape[1]}-d query vector, the corpus is {dim}-d")
            index.set_ef(max(args.ef, k))
            labels, distances = index.knn_query(query, k=k, num_threads=1)
            scores = 1.0 - distances[0].astype(np.float64)
            # score descending, ties on ascending chunk index (= ascending chunk id)
            order = np.lexsort((labels[0], -scores))
            return [(corpus.ids[labels[0][i]], scores[i]) for i in order]

        return search

    return build


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", help="the export directory (default: $HOPBENCH_EXPORT)")
    ap.add_argument("--vectors", choices=["embedding", "embedding_content"],
                    help="the corpus vector column (default: $HOPBENCH_VECTORS, else embedding)")
    ap.add_argument("--ef", type=int, default=128, help="search breadth (at least k is used)")
    ap.add_argument("--m", type=int, default=16, help="graph degree")
    ap.add_argument("--ef-construction", type=int, default=200, help="build breadth")
    ap.add_argument("--seed", type=int, default=100, help="the build's random seed")
    args = ap.parse_args()
    serve(setup=builder(args), side="dense", export=args.export, vector_column=args.vectors)


if __name__ == "__main__":
    main()
