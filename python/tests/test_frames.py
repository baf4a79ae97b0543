"""The compiled core's column dicts and cell records as DataFrames (pandas by default, polars
when asked), and `Results` around them. Pure Python: no compiled module needed."""

import subprocess
import sys

import pytest

from conftest import PYTHON


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_a_column_dict_keeps_its_order_and_its_nones(library):
    lib = pytest.importorskip(library)
    from hopbench import _frames

    columns = {"measure": ["nDCG@10", "Rprec"], "mean": [0.5, None], "ci_lo": [0.25, None],
               "ci_hi": [0.75, None], "queries": [3, 0]}
    df = _frames.frame(columns, polars=library == "polars")
    assert isinstance(df, lib.DataFrame) and list(df.columns) == list(columns)
    assert list(df["measure"]) == ["nDCG@10", "Rprec"] and list(df["queries"]) == [3, 0]
    assert df["mean"][0] == 0.5
    # undefined stays missing (pandas: NaN, polars: null), never 0
    missing = df["mean"].isna()[1] if library == "pandas" else df["mean"].is_null()[1]
    assert missing


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_cell_records_of_different_keys_make_one_table(library):
    lib = pytest.importorskip(library)
    from hopbench import _frames

    records = [
        {"dataset": "s", "leg": "bm25", "status": "ok", "queries": 60, "R@10": 0.5},
        {"dataset": "s", "leg": "packer", "status": "ok", "queries": 60, "R@10": 0.6,
         "tokens": 900},
    ]
    df = _frames.rows(records, polars=library == "polars",
                      columns=["dataset", "leg", "status", "reason", "queries"])
    assert list(df.columns) == ["dataset", "leg", "status", "reason", "queries", "R@10",
                                "tokens"]
    assert len(df) == 2 and list(df["leg"]) == ["bm25", "packer"]
    empty = _frames.rows([], polars=library == "polars", columns=["dataset", "leg", "reason"])
    assert list(empty.columns) == ["dataset", "leg", "reason"] and len(empty) == 0


def test_polars_is_imported_only_when_asked():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from hopbench import _frames; "
            "_frames.frame({'a': [1]}); assert 'polars' not in sys.modules")
    p = subprocess.run([sys.executable, "-c", code, str(PYTHON)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_results_repr_names_the_directory_and_the_counts():
    pd = pytest.importorskip("pandas")
    import hopbench

    cells = pd.DataFrame({"dataset": ["synthetic", "synthetic", "beir"],
                          "leg": ["bm25", "dense", "bm25"]})
    rejected = pd.DataFrame({"dataset": ["beir"], "leg": ["dense"], "reason": ["edited"]})
    r = hopbench.Results("out/results", cells, rejected)
    assert repr(r) == ("<hopbench.Results out/results: 3 verified cells (beir, synthetic), "
                       "1 rejected>")
    none = hopbench.Results("r", cells.iloc[:0], rejected.iloc[:0])
    assert repr(none) == "<hopbench.Results r: 0 verified cells, 0 rejected>"
