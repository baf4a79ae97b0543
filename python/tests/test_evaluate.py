"""`hopbench.evaluate` and `compare` against the CLI and pytrec_eval: every input shape gives the
command's numbers, the values equal trec_eval's C code, bad inputs raise the documented
exception with the record named."""

import collections
import json
import math
import random
import subprocess

import pytest

from conftest import REPO, cli, native

MEASURES = ["nDCG@10", "nDCG", "AP", "P@10", "R@100", "RR", "Rprec", "Judged@10"]


def random_pair(seed, queries=60, depth=30):
    """A graded run and qrels (grades -1..4) with ties, unjudged documents, a query absent
    from the run and one without a relevant document."""
    rng = random.Random(seed)
    run, qrels = {}, {}
    for q in range(queries):
        # zero-padded: ranx keeps its queries sorted by id, and a mean's last bit and the
        # bootstrap's draws depend on the order of the queries
        qid = f"q{q:03d}"
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


def assert_same(df, metrics, shape=""):
    assert sorted(df["measure"]) == sorted(metrics), shape
    for row in df.itertuples():
        m = metrics[row.measure]
        assert (row.mean, row.queries) == (m["mean"], m["queries"]), (shape, row.measure)
        assert [row.ci_lo, row.ci_hi] == m["ci95"], (shape, row.measure)


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

        shapes["polars"] = (pl.from_pandas(df), pl.DataFrame([r._asdict() for r in qrel_records]))
        polars_out = hopbench.evaluate(run, qrels, MEASURES, polars=True)
        assert isinstance(polars_out, pl.DataFrame)
        assert polars_out["mean"].to_list() == [want[m]["mean"] for m in polars_out["measure"]]
    except ImportError:
        pass
    try:
        import ranx

        shapes["ranx Run and Qrels"] = (ranx.Run(run), ranx.Qrels(qrels))
        shapes["ranx DataFrames"] = (ranx.Run(run).to_dataframe(),
                                     ranx.Qrels(qrels).to_dataframe())
    except ImportError:
        pass
    try:
        from ir_datasets.formats import GenericScoredDoc, TrecQrel

        shapes["ir_datasets records"] = ((GenericScoredDoc(*r) for r in rows),
                                         (TrecQrel(*r[:3], "0") for r in qrel_records))
    except ImportError:
        pass
    renamed = df.rename(columns={"query_id": "topic", "doc_id": "doc", "score": "sim"})
    shapes["named columns"] = (renamed, qrels)
    columns = {"query_id": "topic", "doc_id": "doc", "score": "sim"}
    for name, (r, q) in shapes.items():
        got = hopbench.evaluate(r, q, MEASURES,
                                run_columns=columns if name == "named columns" else None)
        assert_same(got, want, name)
        assert got.attrs["records"] == len(rows), name


def trec_measures_check():
    """scripts/trec_measures_check.py (how the CLI is proved against pytrec_eval in CI): its
    generator, its measure pairs and its re-scoring for the ascending-id tie order."""
    pytest.importorskip("pytrec_eval")
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "trec_measures_check", REPO / "scripts" / "trec_measures_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# beside the script's measures, the ones papers report at the depths they report them
MORE_MEASURES = [("P@10", "P_10"), ("recall@100", "recall_100")]


def test_values_equal_pytrec_eval_on_graded_random_runs():
    """Per-query values from dicts equal trec_eval's C code to 1e-9, every measure the script
    checks, at relevance levels 1 and 2, in both tie orders; the query set is hopbench's (the
    qrels' queries with a relevant document), a query the run lacks an empty ranking."""
    native()
    check = trec_measures_check()
    import pytrec_eval

    import hopbench

    measures = check.MEASURES + MORE_MEASURES
    pytrec = check.PYTREC | {"P.10", "recall.100"}
    for seed in range(3):
        qrels, run = check.generate(random.Random(seed), 120)
        for level in (1, 2):
            for ties in ("trec_eval", "id"):
                pq = hopbench.evaluate(run, qrels, [h for h, _ in measures], per_query=True,
                                       ties=ties, relevance_level=level, ci=False,
                                       unknown_queries="drop")
                ours = collections.defaultdict(dict)
                for q, m, v in zip(pq["query_id"], pq["measure"], pq["value"]):
                    ours[q][m] = v
                theirs_run = check.by_ascending_id(run) if ties == "id" else run
                theirs = pytrec_eval.RelevanceEvaluator(
                    qrels, pytrec, relevance_level=level).evaluate(theirs_run)
                evaluated = [q for q, docs in qrels.items() if any(g >= level for g in
                                                                   docs.values())]
                assert sorted(ours) == sorted(evaluated)
                for q in evaluated:
                    for h, t in measures:
                        if q in theirs:
                            want = theirs[q][t]
                        else:  # absent from the run: an empty ranking (trec_eval -c)
                            want = (sum(g >= level for g in qrels[q].values())
                                    if h == "NumRel" else 0.0)
                        assert ours[q][h] == pytest.approx(want, abs=check.TOL), \
                            (seed, level, ties, q, h)


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


def test_the_exceptions_are_the_compiled_modules():
    n = native()
    import hopbench

    for name in ("InputError", "MeasureError", "ResultsError"):
        assert getattr(hopbench, name) is getattr(n, name)
    assert hopbench.__version__ == n.version().split()[1]


def test_compare_names_the_run_a_bad_record_is_in():
    native()
    import hopbench

    run, qrels = random_pair(5)
    bad = {q: dict(docs) for q, docs in run.items()}
    bad["q007"]["d1"] = float("inf")
    for args, name in (((run, bad), "run_b"), ((bad, run), "run_a")):
        with pytest.raises(hopbench.InputError) as e:
            hopbench.compare(*args, qrels, "AP")
        assert f'{name} (dict)' in str(e.value) and '$["q007"]["d1"]' in str(e.value)


def test_unknown_queries_error_or_drop():
    native()
    import hopbench

    run, qrels = random_pair(6)
    with_unknown = {**run, "nobody": {"d1": 1.0}}
    with pytest.raises(hopbench.InputError, match="nobody"):
        hopbench.evaluate(with_unknown, qrels, "AP")
    dropped = hopbench.evaluate(with_unknown, qrels, "AP", unknown_queries="drop")
    assert dropped.attrs["dropped_unknown_queries"] == 1
    assert list(dropped["mean"]) == list(hopbench.evaluate(run, qrels, "AP")["mean"])


def test_the_per_query_table_is_the_frame_of_its_rows_by_hand():
    native()
    import hopbench
    import pandas as pd

    # q1: its one relevant document first; q2: one of two relevant documents retrieved, first
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}}
    qrels = {"q1": {"a": 1}, "q2": {"c": 1, "x": 1}}
    pq = hopbench.evaluate(run, qrels, ["nDCG@10", "AP"], per_query=True, ci=False)
    ndcg_q2 = 1 / (1 + 1 / math.log2(3))
    want = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q2"],
                         "measure": ["ndcg@10", "AP", "ndcg@10", "AP"],
                         "value": [1.0, 1.0, ndcg_q2, 0.5]})
    pd.testing.assert_frame_equal(pq, want, check_exact=False, rtol=1e-12)


def test_per_query_rows_and_their_means():
    native()
    import hopbench

    run, qrels = random_pair(7)
    means = hopbench.evaluate(run, qrels, "nDCG@10,AP", ci=False)
    assert means["ci_lo"].isna().all() and means["ci_hi"].isna().all()
    pq = hopbench.evaluate(run, qrels, ["nDCG@10", "AP"], per_query=True)
    assert list(pq.columns) == ["query_id", "measure", "value"]
    # query-major: each query's measures together, in the order asked
    assert list(pq["measure"][:4]) == ["ndcg@10", "AP", "ndcg@10", "AP"]  # canonical names
    assert pq["query_id"][0] == pq["query_id"][1] != pq["query_id"][2]
    for row in means.itertuples():
        values = pq[pq["measure"] == row.measure]["value"].dropna()
        assert len(values) == row.queries
        assert values.mean() == pytest.approx(row.mean, abs=1e-12)
    try:
        import polars as pl
    except ImportError:
        return
    ppq = hopbench.evaluate(run, qrels, ["nDCG@10", "AP"], per_query=True, polars=True)
    assert isinstance(ppq, pl.DataFrame) and ppq.columns == ["query_id", "measure", "value"]
    assert ppq["value"].to_list() == list(pq["value"].astype(object).where(pq["value"].notna(),
                                                                           None))
    pc = hopbench.compare(run, run, qrels, "AP", polars=True)
    assert pc.columns == ["measure", "mean_a", "mean_b", "diff", "ci_lo", "ci_hi", "p",
                          "p_holm", "queries"]
