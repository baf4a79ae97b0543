"""`hopbench.evaluate` and `compare` against the CLI and pytrec_eval: every input shape gives the
command's numbers, the values equal trec_eval's C code, bad inputs raise the documented
exception with the record named."""

import collections
import json
import random
import subprocess

import pytest

from conftest import cli, native

MEASURES = ["nDCG@10", "nDCG", "AP", "P@10", "R@100", "RR", "Rprec", "Judged@10"]
# hopbench name -> pytrec_eval name, for the measures both compute
TREC_NAMES = {"ndcg@10": "ndcg_cut_10", "ndcg": "ndcg", "AP": "map", "P@10": "P_10",
              "recall@100": "recall_100", "mrr": "recip_rank", "Rprec": "Rprec"}


def random_pair(seed, queries=60, depth=30):
    """A graded run and qrels (grades -1..4) with ties, unjudged documents, a query absent
    from the run and one without a relevant document."""
    rng = random.Random(seed)
    run, qrels = {}, {}
    for q in range(queries):
        qid = f"q{q}"
        docs = [f"d{rng.randrange(200)}" for _ in range(depth)]
        if q != 0:  # q0 is judged but absent from the run
            run[qid] = {d: float(rng.randrange(12)) for d in docs}  # few values: ties
        judged = {d: rng.randrange(-1, 5) for d in rng.sample(docs, 6)}
        judged[f"x{q}"] = rng.randrange(1, 4)  # relevant, never retrieved
        if q == 1:
            judged = {d: 0 for d in judged}  # no relevant document
        qrels[qid] = judged
    return run, qrels


def write_pair(tmp_path, run, qrels):
    r = tmp_path / "run.trec"
    with open(r, "w") as f:
        for q, docs in run.items():
            for i, (d, s) in enumerate(docs.items()):
                f.write(f"{q} Q0 {d} {i + 1} {s} t\n")
    j = tmp_path / "qrels.txt"
    with open(j, "w") as f:
        for q, docs in qrels.items():
            for d, g in docs.items():
                f.write(f"{q} 0 {d} {g}\n")
    return r, j


def cli_eval(run_path, qrels_path):
    out = subprocess.run(cli() + ["eval", str(run_path), str(qrels_path), "--format", "json",
                                  "-m", ",".join(MEASURES)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["metrics"]


def assert_same(df, metrics):
    assert sorted(df["measure"]) == sorted(metrics)
    for row in df.itertuples():
        m = metrics[row.measure]
        assert row.mean == m["mean"] and row.queries == m["queries"]
        assert [row.ci_lo, row.ci_hi] == m["ci95"]


def test_every_input_shape_gives_the_cli_numbers(tmp_path):
    native()
    import hopbench
    import pandas as pd

    run, qrels = random_pair(3)
    run_path, qrels_path = write_pair(tmp_path, run, qrels)
    want = cli_eval(run_path, qrels_path)
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    (tmp_path / "run.json").write_text(json.dumps(run))
    Scored = collections.namedtuple("ScoredDoc", "query_id doc_id score")
    Qrel = collections.namedtuple("TrecQrel", "query_id doc_id relevance iteration")
    qrel_records = [Qrel(q, d, g, "0") for q, docs in qrels.items() for d, g in docs.items()]
    shapes = {
        "trec path": (run_path, qrels_path),
        "json path": (tmp_path / "run.json", qrels),
        "dict": (run, qrels),
        "pandas": (df, qrels_path),
        "pyterrier columns": (df.rename(columns={"query_id": "qid", "doc_id": "docno"}), qrels),
        "records": ([Scored(*r) for r in rows], qrel_records),
        "qrels DataFrame": (run, pd.DataFrame([r._asdict() for r in qrel_records])),
    }
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        # as pandas writes it: large_string ids, snappy compression
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "run.parquet")
        shapes["parquet path"] = (tmp_path / "run.parquet", qrels)
    except ImportError:
        pass
    try:
        import polars as pl

        shapes["polars"] = (pl.from_pandas(df), qrels)
        polars_out = hopbench.evaluate(run, qrels, MEASURES, polars=True)
        assert isinstance(polars_out, pl.DataFrame)
        assert polars_out["mean"].to_list() == [want[m]["mean"] for m in polars_out["measure"]]
    except ImportError:
        pass
    for name, (r, q) in shapes.items():
        assert_same(hopbench.evaluate(r, q, MEASURES), want), name


def test_values_equal_pytrec_eval_on_graded_random_runs():
    native()
    pytrec_eval = pytest.importorskip("pytrec_eval")
    import hopbench

    for seed in range(4):
        run, qrels = random_pair(seed)
        for level in (1, 2):
            pq = hopbench.evaluate(run, qrels, list(TREC_NAMES), per_query=True,
                                   ties="trec_eval", relevance_level=level, ci=False)
            ev = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_NAMES.values()),
                                                relevance_level=level)
            want = ev.evaluate(run)
            checked = 0
            for q, m, v in zip(pq["query_id"], pq["measure"], pq["value"]):
                if q in want:
                    assert v == pytest.approx(want[q][TREC_NAMES[m]], abs=1e-9), (seed, q, m)
                    checked += 1
                else:  # absent from the run: an empty ranking scores 0 (or nothing defined)
                    assert v in (0.0, None) or v != v
            assert checked > 100


def test_bad_inputs_raise_naming_the_record():
    native()
    import hopbench
    import pandas as pd

    qrels = {"q1": {"d1": 1}}
    cases = [
        ({"q1": {"d1": float("nan")}}, hopbench.InputError, '$["q1"]["d1"]'),
        ({"q1": {7: 1.0}}, hopbench.InputError, "not str"),
        ({"qX": {"d1": 1.0}}, hopbench.InputError, "not a query of the qrels"),
        (pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d1"], "score": [1.0, 2.0]}),
         hopbench.InputError, "row 1"),
        (pd.DataFrame({"query_id": ["q1"], "doc_id": [None], "score": [1.0]}),
         hopbench.InputError, "row 0"),
        ([{"query_id": "q1", "doc_id": "d1"}], hopbench.InputError, "record 0: no field 'score'"),
        (42, hopbench.InputError, "expected a path"),
    ]
    for run, error, text in cases:
        with pytest.raises(error) as e:
            hopbench.evaluate(run, qrels)
        assert text in str(e.value), (run, str(e.value))
    with pytest.raises(hopbench.MeasureError):
        hopbench.evaluate({"q1": {"d1": 1.0}}, qrels, ["NoSuchMeasure@3"])
    assert issubclass(hopbench.MeasureError, hopbench.InputError)
    assert issubclass(hopbench.InputError, ValueError)


def test_compare_a_run_with_itself_and_with_a_better_one():
    native()
    import hopbench

    run, qrels = random_pair(5)
    same = hopbench.compare(run, run, qrels, ["nDCG@10", "AP"])
    assert list(same["diff"]) == [0.0, 0.0] and list(same["p"]) == [1.0, 1.0]
    # a run that puts every relevant document first is better on every query that has one
    best = {q: {d: float(g) for d, g in docs.items()} for q, docs in qrels.items()}
    out = hopbench.compare(run, best, qrels, "nDCG@10,AP")
    assert all(d > 0 for d in out["diff"]) and all(lo > 0 for lo in out["ci_lo"])
    assert all(p < 0.05 for p in out["p_holm"]) and all(out["p_holm"] >= out["p"])
