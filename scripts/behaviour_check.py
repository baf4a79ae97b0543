#!/usr/bin/env python3
"""Prove that a code change left every number alone: compare two results directories.

Usage:
    scripts/behaviour_check.py BEFORE AFTER [--ignore FIELD]...

BEFORE and AFTER are `--results` directories of `hopbench run-matrix` runs of the same campaign,
datasets and legs (one by the old binary, one by the new). Compared, file by file:

* every cell summary (`cells/<dataset>/<leg>.summary.json`) and budget curve
  (`curves/**.json`), as JSON, without the fields that must differ between two binaries:
  `timing` (wall clock), `key` (a hash over the inputs, which include the executable's hash) and
  `inputs.code_version` (the executable's hash itself);
* every per-query records file (`*.parquet` under `cells/` and `curves/`), column by column,
  without the per-query latency columns (`retrieve_ms`, `select_ms`: wall clock), with pyarrow;
* every TREC run and qrels file (`runs/**`), byte for byte;
* every export's manifest: the blake3 of each export file must agree, so the exports are
  byte-identical whatever the manifest's own identity fields say.

`--ignore FIELD` also leaves out a top-level summary/curve field (`--ignore inputs.FIELD` a field
of `inputs`), for a change that adds or renames fields on purpose (a schema change: `--ignore schema_version --ignore
queries_without_gold`); say which in the change's notes. A file present on one side only is a
failure. Exit 0 when everything agrees, 1 otherwise,
with one line per difference. Needs pyarrow (`pip install pyarrow`).
"""

import hashlib
import json
import sys
from pathlib import Path

VOLATILE_TOP = ("timing", "key")
VOLATILE_INPUTS = ("code_version",)
VOLATILE_COLUMNS = ("retrieve_ms", "select_ms", "rerank_ms")


def strip(doc, ignore=()):
    """The deterministic part of a summary or curve document."""
    if isinstance(doc, dict):
        doc = {k: v for k, v in doc.items() if k not in VOLATILE_TOP and k not in ignore}
        ignored_inputs = tuple(f[len("inputs."):] for f in ignore if f.startswith("inputs."))
        inputs = doc.get("inputs")
        if isinstance(inputs, dict):
            doc["inputs"] = {k: v for k, v in inputs.items()
                             if k not in VOLATILE_INPUTS and k not in ignored_inputs}
    return doc


def files(root: Path, pattern: str):
    return {p.relative_to(root): p for p in root.glob(pattern) if p.is_file()}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def records_differ(a: Path, b: Path):
    """Names of the deterministic columns that differ between two records files."""
    import pyarrow.parquet as pq

    x, y = pq.read_table(a), pq.read_table(b)
    keep = lambda t: [n for n in t.schema.names if n not in VOLATILE_COLUMNS]
    if keep(x) != keep(y):
        return ["<columns>"]
    return [n for n in keep(x) if not x.column(n).equals(y.column(n))]


def compare_sets(before, after, label, problems):
    for rel in sorted(set(before) - set(after)):
        problems.append(f"{label}: only in BEFORE: {rel}")
    for rel in sorted(set(after) - set(before)):
        problems.append(f"{label}: only in AFTER: {rel}")
    return sorted(set(before) & set(after))


def main(argv):
    args, ignore = [], []
    rest = iter(argv[1:])
    for a in rest:
        if a == "--ignore":
            ignore.append(next(rest, ""))
        else:
            args.append(a)
    if len(args) != 2 or "" in ignore:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    before, after = Path(args[0]), Path(args[1])
    problems = []
    counts = {}

    for pattern in ("cells/**/*.summary.json", "curves/**/*.json"):
        b, a = files(before, pattern), files(after, pattern)
        common = compare_sets(b, a, "json", problems)
        counts[pattern] = len(common)
        for rel in common:
            x = strip(json.loads(b[rel].read_text()), ignore)
            y = strip(json.loads(a[rel].read_text()), ignore)
            if json.dumps(x, sort_keys=True) != json.dumps(y, sort_keys=True):
                keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
                problems.append(f"json: {rel} differs in {', '.join(keys)}")

    for pattern in ("cells/**/*.parquet", "curves/**/*.parquet"):
        b, a = files(before, pattern), files(after, pattern)
        common = compare_sets(b, a, "records", problems)
        counts[pattern] = len(common)
        for rel in common:
            cols = records_differ(b[rel], a[rel])
            if cols:
                problems.append(f"records: {rel} differs in {', '.join(cols)}")

    b, a = files(before, "runs/**/*"), files(after, "runs/**/*")
    common = compare_sets(b, a, "bytes", problems)
    counts["runs/**/*"] = len(common)
    for rel in common:
        if digest(b[rel]) != digest(a[rel]):
            problems.append(f"bytes: {rel} differs")

    b, a = files(before, "exports/*/manifest.json"), files(after, "exports/*/manifest.json")
    common = compare_sets(b, a, "export", problems)
    counts["exports"] = len(common)
    for rel in common:
        x, y = json.loads(b[rel].read_text()), json.loads(a[rel].read_text())
        fx, fy = x.get("files"), y.get("files")
        if fx != fy:
            problems.append(f"export: {rel.parent} file hashes differ")

    for what, n in counts.items():
        print(f"compared {n:4d} x {what}")
    if ignore:
        print(f"ignored fields: {', '.join(ignore)}")
    for p in problems:
        print(p)
    print("identical" if not problems else f"{len(problems)} differences")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
