#!/usr/bin/env python3
"""Write an export's vectors as the vectors files a dataset can bring (`vectors:` in a campaign).

Usage:
    scripts/export_vectors.py EXPORT_DIR OUT_DIR [--npy]

EXPORT_DIR is a hopbench export (`<results>/exports/<dataset>/`). Writes to OUT_DIR:

    passages.parquet    id (string), vector (list<float32>)   from corpus.parquet `embedding`
    content.parquet     the same from `embedding_content`      (only where the export has it)
    queries.parquet     id, vector                              from queries.parquet `embedding`
    subqueries.parquet  id `<query id>#<hop>` (hops from 1), vector: each query's
                        `subquery_embeddings` split into `dim`-wide rows (only where some query
                        has a decomposition)

With --npy, each set is written as `<set>.npy` (float32, shape (n, dim)) and `<set>.ids.txt`
(one id per line) instead. The vectors are copied bit for bit, so a dataset that brings them
ranks exactly as the export it came from (the book's "Bringing your own vectors", docs/src/own-data.md, measures
this). Needs pyarrow (and numpy for --npy).
"""

import argparse
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def write(out_dir, name, ids, rows, dim, npy):
    """Writes one set; `rows` is a list of float32 lists of width `dim`."""
    if npy:
        import numpy as np

        arr = np.asarray(rows, dtype="<f4").reshape(len(ids), dim)
        np.save(os.path.join(out_dir, f"{name}.npy"), arr)
        with open(os.path.join(out_dir, f"{name}.ids.txt"), "w", encoding="utf-8") as f:
            for i in ids:
                f.write(i + "\n")
    else:
        table = pa.table(
            {
                "id": pa.array(ids, type=pa.string()),
                "vector": pa.array(rows, type=pa.list_(pa.float32())),
            }
        )
        # hopbench reads parquet without compression codecs (the build carries none)
        pq.write_table(table, os.path.join(out_dir, f"{name}.parquet"), compression="none")
    print(f"{name}: {len(ids)} vectors of {dim}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--npy", action="store_true", help="write .npy + .ids.txt instead of parquet")
    a = ap.parse_args()
    with open(os.path.join(a.export_dir, "manifest.json"), encoding="utf-8") as f:
        dim = json.load(f)["dim"]
    os.makedirs(a.out_dir, exist_ok=True)

    corpus = pq.read_table(os.path.join(a.export_dir, "corpus.parquet"))
    ids = corpus.column("chunk_id").to_pylist()
    write(a.out_dir, "passages", ids, corpus.column("embedding").to_pylist(), dim, a.npy)
    if "embedding_content" in corpus.column_names:
        rows = corpus.column("embedding_content").to_pylist()
        write(a.out_dir, "content", ids, rows, dim, a.npy)

    queries = pq.read_table(os.path.join(a.export_dir, "queries.parquet"))
    qids = queries.column("query_id").to_pylist()
    write(a.out_dir, "queries", qids, queries.column("embedding").to_pylist(), dim, a.npy)

    sub_ids, sub_rows = [], []
    for qid, flat in zip(qids, queries.column("subquery_embeddings").to_pylist()):
        if flat is None:
            continue
        if len(flat) % dim:
            sys.exit(f"{a.export_dir}/queries.parquet: query {qid}: subquery_embeddings "
                     f"holds {len(flat)} floats, not a multiple of {dim}")
        for hop in range(len(flat) // dim):
            sub_ids.append(f"{qid}#{hop + 1}")
            sub_rows.append(flat[hop * dim:(hop + 1) * dim])
    if sub_ids:
        write(a.out_dir, "subqueries", sub_ids, sub_rows, dim, a.npy)


if __name__ == "__main__":
    main()
