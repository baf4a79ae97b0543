"""Every input shape `evaluate` and `compare` take becomes the source tuple the compiled core
reads (`_native.pyi`), and a shape or record the Python layer can judge bad is refused with an
`InputError` naming the record, field or column. Pure Python: these run without the compiled
module (a stand-in gives the exception classes then)."""

import collections
import dataclasses
import pathlib
import subprocess
import sys
import types

import pytest

from conftest import PYTHON


@pytest.fixture(autouse=True)
def hopbench(monkeypatch):
    """The package, its exceptions the compiled module's when it is built, else a stand-in's
    with the same hierarchy (removed again after the test)."""
    try:
        from hopbench import _native  # noqa: F401
    except ImportError:
        fake = types.ModuleType("hopbench._native")

        class InputError(ValueError):
            pass

        class MeasureError(InputError):
            pass

        class ResultsError(InputError):
            pass

        fake.InputError, fake.MeasureError, fake.ResultsError = (InputError, MeasureError,
                                                                 ResultsError)
        monkeypatch.setitem(sys.modules, "hopbench._native", fake)
    import hopbench

    return hopbench


def source(obj, kind="run", **kw):
    """The list form of a source (`test_arrow.py` covers the Arrow form of DataFrames)."""
    from hopbench import _inputs

    return _inputs.source(obj, kind, arrow=False, **kw)


def refused(hopbench, obj, kind="run", **kw):
    """The message of the `InputError` that `obj` raises."""
    with pytest.raises(hopbench.InputError) as e:
        source(obj, kind, **kw)
    return str(e.value)


RUN = {"q1": {"d1": 2.5, "d2": 1.0}, "q2": {"d3": 0.5}}
QRELS = {"q1": {"d1": 2, "d9": 0}, "q2": {"d3": 1}}
# the same run and qrels as three columns, record order
RUN_COLS = (["q1", "q1", "q2"], ["d1", "d2", "d3"], [2.5, 1.0, 0.5])
QRELS_COLS = (["q1", "q1", "q2"], ["d1", "d9", "d3"], [2, 0, 1])


def test_paths_keep_their_format(tmp_path):
    assert source("run.trec") == ("path", "run.trec", None)
    assert source(tmp_path / "r.txt", run_format="trec") == ("path", str(tmp_path / "r.txt"),
                                                             "trec")
    assert source(pathlib.PurePosixPath("a/run.parquet")) == ("path", "a/run.parquet", None)
    assert source("qrels.txt", "qrels") == ("path", "qrels.txt", None)


def test_bad_formats_are_refused(hopbench):
    assert "expected one of" in refused(hopbench, "run.x", run_format="csv")
    assert "give no format" in refused(hopbench, "qrels.txt", "qrels", run_format="trec")


def test_a_dict_is_passed_through_untouched():
    tag, given, name = source(RUN)
    assert tag == "dict" and given is RUN and name == "run (dict)"
    assert source(QRELS, "qrels") == ("dict", QRELS, "qrels (dict)")
    assert source(RUN, label="run_b")[2] == "run_b (dict)"
    # a dict subclass (ranx's to_dict gives a defaultdict) is still a dict
    d = collections.defaultdict(dict, RUN)
    assert source(d)[1] is d


class _RanxLike:
    """What ranx's `Run` / `Qrels` look like to the Python layer: a ranx class with to_dict."""

    __module__ = "ranx.data_structures.run"

    def __init__(self, d):
        self.d = d

    def to_dict(self):
        return self.d


def test_ranx_objects_are_read_through_to_dict():
    assert source(_RanxLike(RUN)) == ("dict", RUN, "run (ranx _RanxLike)")
    ranx = pytest.importorskip("ranx")
    run, qrels = ranx.Run(RUN), ranx.Qrels(QRELS)
    tag, given, name = source(run)
    assert (tag, name) == ("dict", "run (ranx Run)") and given == RUN
    assert source(qrels, "qrels")[1] == QRELS


def test_a_pandas_frame_becomes_three_lists():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"query_id": RUN_COLS[0], "doc_id": RUN_COLS[1], "score": RUN_COLS[2],
                       "rank": [1, 2, 1]})
    assert source(df) == ("columns", *RUN_COLS, "run (DataFrame)")
    qd = pd.DataFrame({"query_id": QRELS_COLS[0], "doc_id": QRELS_COLS[1],
                       "relevance": QRELS_COLS[2], "iteration": ["0"] * 3})
    assert source(qd, "qrels") == ("columns", *QRELS_COLS, "qrels (DataFrame)")
    out = source(df)
    assert all(type(x) is str for x in out[1] + out[2]) and all(type(x) is float for x in out[3])
    assert all(type(g) is int for g in source(qd, "qrels")[3])


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_column_aliases_of_ranx_pyterrier_and_ir_datasets(library):
    lib = pytest.importorskip(library)
    q, d, v = RUN_COLS
    for names in (("q_id", "doc_id", "score"), ("qid", "docno", "score")):
        df = lib.DataFrame(dict(zip(names, (q, d, v))))
        assert source(df)[1:4] == RUN_COLS, names
    q, d, g = QRELS_COLS
    for names in (("query_id", "doc_id", "relevance"), ("q_id", "doc_id", "score"),
                  ("qid", "docno", "label")):
        df = lib.DataFrame(dict(zip(names, (q, d, g))))
        assert source(df, "qrels")[1:4] == QRELS_COLS, names


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_named_columns(hopbench, library):
    lib = pytest.importorskip(library)
    df = lib.DataFrame({"qid": RUN_COLS[0], "docno": RUN_COLS[1], "sim": RUN_COLS[2]})
    assert source(df, columns={"query_id": "qid", "doc_id": "docno", "score": "sim"})[1:4] \
        == RUN_COLS
    # keys left out keep their default name
    df2 = lib.DataFrame({"query_id": RUN_COLS[0], "doc_id": RUN_COLS[1], "sim": RUN_COLS[2]})
    assert source(df2, columns={"score": "sim"})[1:4] == RUN_COLS
    qd = lib.DataFrame({"topic": QRELS_COLS[0], "doc": QRELS_COLS[1], "grade": QRELS_COLS[2]})
    for key in ("relevance", "score"):
        cols = {"query_id": "topic", "doc_id": "doc", key: "grade"}
        assert source(qd, "qrels", columns=cols)[1:4] == QRELS_COLS
    msg = refused(hopbench, df, columns={"query": "qid"})
    assert "run_columns" in msg and "'query'" in msg
    assert "no column 'sim2'" in refused(hopbench, df, columns={"query_id": "qid",
                                                                "doc_id": "docno",
                                                                "score": "sim2"})
    # a relevance key is a qrels' column name only
    assert "run_columns" in refused(hopbench, df, columns={"relevance": "sim"})


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_a_frame_without_known_columns_is_refused_with_what_it_has(hopbench, library):
    lib = pytest.importorskip(library)
    msg = refused(hopbench, lib.DataFrame({"a": ["q"], "b": ["d"], "c": [1.0]}))
    assert "(query_id, doc_id, score)" in msg and "(qid, docno, score)" in msg
    assert "['a', 'b', 'c']" in msg and "run_columns=" in msg
    msg = refused(hopbench, lib.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1]}),
                  "qrels")
    assert "(query_id, doc_id, relevance)" in msg and "qrels_columns=" in msg


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_a_null_names_its_row_and_column(hopbench, library):
    lib = pytest.importorskip(library)
    cases = [
        ({"query_id": ["q1", "q1", None], "doc_id": ["a", "b", "c"], "score": [1.0, 2.0, 3.0]},
         "row 2: column 'query_id' is null"),
        ({"query_id": ["q1"] * 3, "doc_id": ["a", None, "c"], "score": [1.0, 2.0, 3.0]},
         "row 1: column 'doc_id' is null"),
        ({"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "score": [1.0, 2.0, None]},
         "row 2: column 'score' is null"),
    ]
    for columns, text in cases:
        msg = refused(hopbench, lib.DataFrame(columns), label="run_a")
        assert msg.startswith("run_a DataFrame: ") and text in msg, msg
    if library == "pandas":  # pandas reads a float NaN as null: named the same way
        df = lib.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "score": [float("nan")]})
        assert "row 0: column 'score' is null" in refused(hopbench, df)


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_id_columns_integers_become_str_and_other_types_are_refused(hopbench, library):
    lib = pytest.importorskip(library)
    df = lib.DataFrame({"query_id": [1, 1, 2], "doc_id": [10, 11, 12], "score": [3, 2, 1]})
    out = source(df)
    assert out[1:3] == (["1", "1", "2"], ["10", "11", "12"]) and out[3] == [3, 2, 1]
    qd = lib.DataFrame({"query_id": [1], "doc_id": [10], "relevance": [2]})
    assert source(qd, "qrels")[1:4] == (["1"], ["10"], [2])
    for bad in ([1.0, 2.0, 3.0], [True, False, True]):
        df = lib.DataFrame({"query_id": bad, "doc_id": ["a", "b", "c"], "score": [1, 2, 3]})
        msg = refused(hopbench, df)
        assert "column 'query_id' holds" in msg and "not str ids" in msg, msg
    df = lib.DataFrame({"query_id": ["q"], "doc_id": [0.5], "score": [1.0]})
    assert "column 'doc_id' holds" in refused(hopbench, df)


Scored = collections.namedtuple("GenericScoredDoc", "query_id doc_id score")
Qrel = collections.namedtuple("TrecQrel", "query_id doc_id relevance iteration")


@dataclasses.dataclass
class Judgement:
    query_id: str
    doc_id: str
    relevance: int


def test_records_become_three_lists_in_one_pass():
    rows = list(zip(*RUN_COLS))
    expected = ("columns", *map(list, RUN_COLS), "run (records)")
    assert source([Scored(*r) for r in rows]) == expected
    assert source([{"query_id": q, "doc_id": d, "score": s} for q, d, s in rows]) == expected
    # a generator (ir_datasets' iterators) is read once
    assert source(Scored(*r) for r in rows) == expected
    qrows = list(zip(*QRELS_COLS))
    qexpected = ("columns", *map(list, QRELS_COLS), "qrels (records)")
    assert source([Qrel(*r, "0") for r in qrows], "qrels") == qexpected
    assert source(iter([Judgement(*r) for r in qrows]), "qrels") == qexpected
    assert source([], "qrels") == ("columns", [], [], [], "qrels (records)")


def test_ir_datasets_records():
    formats = pytest.importorskip("ir_datasets.formats")
    rows = list(zip(*RUN_COLS))
    assert source([formats.GenericScoredDoc(*r) for r in rows])[1:4] == tuple(map(list, RUN_COLS))
    qrows = list(zip(*QRELS_COLS))
    assert source([formats.TrecQrel(*r, "0") for r in qrows], "qrels")[1:4] \
        == tuple(map(list, QRELS_COLS))
    assert source([formats.GenericQrel(*r) for r in qrows], "qrels")[1:4] \
        == tuple(map(list, QRELS_COLS))


def test_a_record_without_a_field_names_the_record_and_the_field(hopbench):
    records = [Scored("q1", "d1", 1.0), Scored("q1", "d2", 0.5), {"query_id": "q2", "doc": "x"}]
    msg = refused(hopbench, records)
    assert "run record 2: no field 'doc_id'" in msg and "dict" in msg, msg
    # a run's records need a score; qrels' a relevance
    msg = refused(hopbench, [Scored("q1", "d1", 1.0)], "qrels", label="qrels")
    assert "qrels record 0: no field 'relevance'" in msg and "GenericScoredDoc" in msg, msg
    msg = refused(hopbench, [Qrel("q1", "d1", 1, "0")], label="run_b")
    assert "run_b record 0: no field 'score'" in msg, msg
    assert "record 0: no field 'query_id'" in refused(hopbench, [("q1", "d1", 1.0)])


def test_anything_else_is_refused_saying_what_was_expected(hopbench):
    for obj in (42, 3.5, None, b"run.trec"):
        msg = refused(hopbench, obj)
        assert "expected a path, a dict" in msg and type(obj).__name__ in msg, msg


def test_measures_from_a_list_or_a_comma_string(hopbench):
    assert hopbench._measures(None) is None
    assert hopbench._measures("nDCG@10, AP,R@100") == ["nDCG@10", "AP", "R@100"]
    assert hopbench._measures(("P@5",)) == ["P@5"]
    for empty in ("", " , ", []):
        with pytest.raises(hopbench.MeasureError, match="none given"):
            hopbench._measures(empty)


def test_unknown_queries_is_error_or_drop(hopbench):
    assert hopbench._unknown("error") is False and hopbench._unknown("drop") is True
    with pytest.raises(hopbench.InputError, match="'error' or 'drop'"):
        hopbench._unknown("ignore")


def test_the_exceptions_are_one_hierarchy(hopbench):
    assert issubclass(hopbench.MeasureError, hopbench.InputError)
    assert issubclass(hopbench.ResultsError, hopbench.InputError)
    assert issubclass(hopbench.InputError, ValueError)
    assert issubclass(hopbench.RunError, RuntimeError)
    from hopbench import InputError  # from-import resolves through the module's __getattr__

    assert InputError is hopbench.InputError
    with pytest.raises(AttributeError):
        hopbench.NoSuchThing


def test_the_source_tree_imports_without_the_compiled_module():
    """scripts/backends/*.py put python/ on the path and import hopbench.backend; importing the
    package (and reading its functions) must not load the compiled core."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import hopbench.backend, hopbench; "
            "hopbench.evaluate, hopbench.run_matrix, hopbench.load_results; "
            "assert 'hopbench._native' not in sys.modules, 'loaded'; "
            "assert hopbench.__file__.startswith(sys.argv[1]), hopbench.__file__")
    p = subprocess.run([sys.executable, "-c", code, str(PYTHON)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
