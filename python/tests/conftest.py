"""Shared fixtures: the source tree's package on the path, a tiny export as hopbench writes one,
and a way to start a backend the way the harness does (legs/src/engine/external.rs)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PYTHON = REPO / "python"
# the installed package when there is one (its compiled core is what the evaluate, compare and
# results tests test); else the source tree, where the backend tests still run
try:
    import hopbench  # noqa: F401
except ImportError:
    sys.path.insert(0, str(PYTHON))


def native():
    """The compiled core, or a skip; with HOPBENCH_REQUIRE_NATIVE set (CI, against the
    installed wheel) its absence fails the test instead."""
    try:
        from hopbench import _native
    except ImportError as e:
        if os.environ.get("HOPBENCH_REQUIRE_NATIVE"):
            pytest.fail(f"HOPBENCH_REQUIRE_NATIVE: the compiled module is missing ({e})")
        pytest.skip("hopbench._native is not built (pip install . first)")
    return _native


def cli():
    """The installed `hopbench` command: this interpreter's `-m hopbench`."""
    native()
    return [sys.executable, "-m", "hopbench"]

# six chunks, sorted by id as an export's are; c3 has no header
CHUNKS = [
    ("c0", "Alice", "Alice was born in Paris."),
    ("c1", "Bob", "Bob works in Berlin with Alice."),
    ("c2", "Paris", "Paris is the capital of France."),
    ("c3", None, "Berlin is the capital of Germany."),
    ("c4", "Carol", "Carol studied in Rome."),
    ("c5", "Rome", "Rome is in Italy."),
]
DIM = 4


def unit(i, salt):
    """A fixed L2-normalised vector for chunk `i`."""
    v = [float(((i + 1) * (j + 2) * 7 + salt * 3) % 11) - 5.0 for j in range(DIM)]
    if not any(v):
        v[0] = 1.0
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


@pytest.fixture
def export(tmp_path):
    """An export directory with what backends read: `corpus.parquet` (chunk_id, text,
    context_header, embedding, embedding_content), `manifest.json` (the protocol's joiner, here
    a space) and `bm25-stats.json`."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    d = tmp_path / "export"
    d.mkdir()
    table = pa.table({
        "chunk_id": [c[0] for c in CHUNKS],
        "text": [c[2] for c in CHUNKS],
        "context_header": [c[1] for c in CHUNKS],
        "embedding": pa.array([unit(i, 0) for i in range(len(CHUNKS))], pa.list_(pa.float32())),
        "embedding_content": pa.array([unit(i, 1) for i in range(len(CHUNKS))], pa.list_(pa.float32())),
    })
    pq.write_table(table, d / "corpus.parquet")
    (d / "manifest.json").write_text(json.dumps({"protocol": {"header": "title", "joiner": "space"}}))
    (d / "bm25-stats.json").write_text(json.dumps({"tokenizer": "lucene-english-v1",
                                                   "params": {"k1": 0.9, "b": 0.4}}))
    return d


def harness_env(export, side, vectors="embedding"):
    """The environment hopbench starts a backend with: the inherited one plus HOPBENCH_EXPORT
    (absolute), HOPBENCH_SIDE and, on the dense side only, HOPBENCH_VECTORS; PYTHONPATH names
    the source tree, as an installed package would be found."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOPBENCH_")}
    env.update(HOPBENCH_EXPORT=str(pathlib.Path(export).resolve()), HOPBENCH_SIDE=side,
               PYTHONPATH=str(PYTHON))
    if side == "dense":
        env["HOPBENCH_VECTORS"] = vectors
    return env


def run_backend(script, export, side, requests, *args, vectors="embedding", timeout=60):
    """Starts `python3 script args...` as the harness does, sends every request (dicts) as one
    JSON line each, closes stdin and returns (exit status, stdout lines, stderr)."""
    p = subprocess.run([sys.executable, str(script), *args], env=harness_env(export, side, vectors),
                       input="".join(json.dumps(r) + "\n" for r in requests), capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout.splitlines(), p.stderr


def hopbench_binary():
    """The debug hopbench binary: $HOPBENCH_BIN, else $CARGO_TARGET_DIR/debug/hopbench, else
    target/debug/hopbench in the repository; None when there is none."""
    candidates = []
    if os.environ.get("HOPBENCH_BIN"):
        candidates.append(pathlib.Path(os.environ["HOPBENCH_BIN"]))
    if os.environ.get("CARGO_TARGET_DIR"):
        candidates.append(pathlib.Path(os.environ["CARGO_TARGET_DIR"]) / "debug" / "hopbench")
    candidates.append(REPO / "target" / "debug" / "hopbench")
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)
