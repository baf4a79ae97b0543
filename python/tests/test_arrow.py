"""DataFrame columns handed over through the Arrow C stream interface (read by the compiled core
from Arrow's buffers) give exactly what the same columns give as Python lists, the slow path they
replace: the same per-query values, counts and messages, for every Arrow string layout, chunked
columns, every numeric score type, and bad values named by row."""

import random

import pytest

from conftest import native

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")

MEASURES = ["nDCG@10", "AP", "R@100", "P@5", "RR", "Judged@10"]


def random_rows(seed, queries=40, depth=25):
    """Seeded (query, doc, score) rows with ties, and graded qrels rows."""
    rng = random.Random(seed)
    rows, qrels = [], []
    for q in range(queries):
        docs = rng.sample(range(300), depth)
        rows += [(f"q{q}", f"d{d}", float(rng.randrange(8))) for d in docs]
        qrels += [(f"q{q}", f"d{d}", rng.randrange(0, 4)) for d in rng.sample(range(300), 12)]
    return rows, qrels


def frames(rows, qrels):
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    judged = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    return run, judged


def core(run, qrels, measures):
    """The compiled core's evaluation, per query, without CIs."""
    return native().evaluate(run, qrels, measures, 1, "id", False, True, False, 0, 0)


def via(obj, kind, arrow):
    from hopbench import _inputs

    return _inputs.source(obj, kind, arrow=arrow)


def evaluate_both(run, qrels, **kw):
    """`evaluate` with the DataFrames as Arrow and as lists; asserts the Arrow path was taken."""
    assert via(run, "run", True)[0] == "arrow" and via(qrels, "qrels", True)[0] == "arrow"
    fast = core(via(run, "run", True), via(qrels, "qrels", True), MEASURES)
    slow = core(via(run, "run", False), via(qrels, "qrels", False), MEASURES)
    return fast, slow


def arrow_backed(frame):
    ids = {c: "string[pyarrow]" for c in ("query_id", "doc_id")}
    return frame.astype(ids)


def test_arrow_columns_give_the_lists_values():
    for seed in range(3):
        run, qrels = map(arrow_backed, frames(*random_rows(seed)))
        fast, slow = evaluate_both(run, qrels)
        assert fast == slow and fast["info"]["records"] == len(run)


@pytest.mark.parametrize("layout", ["string", "large_string", "string_view"])
def test_every_arrow_string_layout_and_chunked_columns(layout):
    rows, qrels = random_rows(4)
    run, judged = frames(rows, qrels)
    want = core(via(run, "run", False), via(judged, "qrels", False), MEASURES)

    def column(values, kind, shift=0):
        # chunks of uneven length, one of them empty, cut at other rows in each column (by
        # `shift`), so the columns cross chunk boundaries at different rows
        third = len(values) // 3 + shift
        cut = [0, third, third, third + 7 + shift, len(values)]
        return pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(
            [pa.array(values[a:b], type=kind) for a, b in zip(cut, cut[1:])])))

    kind = getattr(pa, layout)()
    as_arrow = pd.DataFrame({
        "query_id": column([r[0] for r in rows], kind),
        "doc_id": column([r[1] for r in rows], kind, shift=5),
        "score": column([r[2] for r in rows], pa.float32(), shift=11),  # small integers: exact
    })
    qrels_arrow = pd.DataFrame({
        "query_id": column([r[0] for r in qrels], kind),
        "doc_id": column([r[1] for r in qrels], kind),
        "relevance": column([r[2] for r in qrels], pa.int8()),
    })
    assert via(as_arrow, "run", True)[0] == "arrow"
    got = core(via(as_arrow, "run", True), via(qrels_arrow, "qrels", True), MEASURES)
    assert got == want


def test_polars_frames_go_as_arrow_and_give_the_lists_values():
    pl = pytest.importorskip("polars")
    run, qrels = frames(*random_rows(5))
    prun, pqrels = pl.from_pandas(run), pl.from_pandas(qrels)
    fast, slow = evaluate_both(prun, pqrels)
    assert fast == slow
    # integer ids are cast to str first, and still go as Arrow
    numeric = prun.with_columns(pl.col("doc_id").str.slice(1).cast(pl.Int64))
    assert via(numeric, "run", True)[0] == "arrow"


def test_columns_arrow_cannot_take_go_as_lists():
    run, _ = frames(*random_rows(6))
    python_strings = run.astype({"query_id": object, "doc_id": object})
    assert via(python_strings, "run", True)[0] == "columns"
    categorical = arrow_backed(run).astype({"query_id": "category"})
    assert via(categorical, "run", True)[0] == "columns"
    half = arrow_backed(run).astype({"score": "float16"})
    assert via(half, "run", True)[0] == "columns"
    qrels = arrow_backed(frames(*random_rows(6))[1])
    assert core(via(half, "run", True), via(qrels, "qrels", True), ["AP"])["info"]["records"] \
        == len(half)


def refused_both_ways(run, qrels):
    """The messages of the `InputError`s `run` gets as Arrow and as lists."""
    import hopbench

    messages = []
    for arrow in (True, False):
        with pytest.raises(hopbench.InputError) as e:
            core(via(run, "run", arrow), via(qrels, "qrels", arrow), ["AP"])
        messages.append(str(e.value))
    return messages


def test_bad_values_are_named_by_row_as_the_lists_name_them():
    import hopbench

    run, qrels = map(arrow_backed, frames(*random_rows(7)))
    for bad in (float("inf"), float("-inf")):
        broken = run.copy()
        broken.loc[17, "score"] = bad
        messages = refused_both_ways(broken, qrels)
        assert messages[0] == messages[1] and "row 17" in messages[0], messages
    # a grade column of floats is refused, not rounded
    floats = qrels.astype({"relevance": "float64"})
    with pytest.raises(hopbench.InputError, match="not integer grades"):
        core(via(run, "run", True), via(floats, "qrels", True), ["AP"])
    # a duplicate pair: the same message, naming both rows
    dup = pd.concat([run, run.iloc[[3]]], ignore_index=True)
    messages = refused_both_ways(dup, qrels)
    assert messages[0] == messages[1] and "row 3" in messages[0], messages


def test_a_null_inside_an_arrow_column_is_named_by_the_core():
    """The Python layer finds nulls first; the core refuses one all the same (a column handed
    to it directly), naming the row."""
    import hopbench

    column = pa.chunked_array([pa.array(["q1", "q1"]), pa.array([None, "q2"])])
    ids = pa.chunked_array([pa.array(["a", "b", "c", "d"])])
    scores = pa.chunked_array([pa.array([1.0, 2.0, 3.0, 4.0])])
    qrels = ("columns", ["q1"], ["a"], [1])
    with pytest.raises(hopbench.InputError, match="row 2.*null|null.*row 2"):
        core(("arrow", column, ids, scores), qrels, ["AP"])
    with pytest.raises(hopbench.InputError, match="different lengths"):
        core(("arrow", column, ids[:3], scores), qrels, ["AP"])
