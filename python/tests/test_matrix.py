"""`run_matrix` and `load_results`: the Python call runs what `hopbench run-matrix` runs (the
summaries equal the command's outside timing and code identity), and a cell whose files were
changed is reported, never returned."""

import json
import pathlib
import subprocess
import sys

import pytest

from conftest import REPO, cli, native

LEGS = ["lexical", "graph_rescue"]


def matrix_args(results):
    return ["run-matrix", "--datasets", "synthetic", "--legs", ",".join(LEGS), "--threads", "2",
            "--quiet", "--no-report", "--results", str(results)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same cells from the command and from `run_matrix` (from the repository root, where
    the campaign's model directory is)."""
    native()
    import hopbench

    base = tmp_path_factory.mktemp("matrix")
    by_cli = base / "cli"
    subprocess.run(cli() + matrix_args(by_cli), check=True, cwd=REPO)
    by_python = base / "python"
    import os

    here = os.getcwd()
    os.chdir(REPO)
    try:
        results = hopbench.run_matrix(datasets="synthetic", legs=LEGS, threads=2, quiet=True,
                                      results=by_python, extra_args=["--no-report"])
    finally:
        os.chdir(here)
    return by_cli, by_python, results


def test_run_matrix_equals_the_command(runs):
    by_cli, by_python, _ = runs
    check = subprocess.run([sys.executable, str(REPO / "scripts" / "behaviour_check.py"),
                            str(by_cli), str(by_python)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_load_results_returns_the_verified_cells(runs):
    _, by_python, results = runs
    cells = results.cells
    assert sorted(cells["leg"]) == sorted(LEGS) and set(cells["status"]) == {"ok"}
    assert len(results.rejected) == 0
    summary = json.loads((by_python / "cells" / "synthetic" / "lexical.summary.json").read_text())
    row = cells[cells["leg"] == "lexical"].iloc[0]
    # serde_json's default float reader may land one ulp from Python's on the same text
    assert row["ndcg@10"] == pytest.approx(summary["metrics"]["ndcg@10"], rel=1e-15)
    assert [row["ndcg@10_ci_lo"], row["ndcg@10_ci_hi"]] == pytest.approx(
        summary["metrics_ci95"]["ndcg@10"], rel=1e-15)
    pq = results.per_query("synthetic", "lexical")
    assert len(pq) == summary["queries"]
    assert pq["ndcg@10"].mean() == pytest.approx(summary["metrics"]["ndcg@10"], abs=1e-12)


def test_a_changed_cell_is_rejected_not_returned(runs, tmp_path):
    import shutil

    import hopbench

    _, by_python, _ = runs
    copy = tmp_path / "results"
    shutil.copytree(by_python, copy)
    summary = copy / "cells" / "synthetic" / "lexical.summary.json"
    text = json.loads(summary.read_text())
    text["metrics"]["ndcg@10"] = 0.99
    summary.write_text(json.dumps(text, indent=2))
    with pytest.warns(UserWarning, match="lexical not trusted"):
        results = hopbench.load_results(copy)
    assert list(results.cells["leg"]) == ["graph_rescue"]
    assert list(results.rejected["leg"]) == ["lexical"]
    with pytest.raises(hopbench.ResultsError, match="not trusted"):
        results.per_query("synthetic", "lexical")
