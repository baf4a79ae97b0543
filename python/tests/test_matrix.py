"""`run_matrix` and `load_results`: the Python call runs what `hopbench run-matrix` runs (the
summaries equal the command's outside timing and code identity), and a cell whose files were
changed is reported, never returned."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

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


def test_load_results_reads_polars_and_curves(runs):
    pytest.importorskip("polars")
    import hopbench

    _, by_python, _ = runs
    results = hopbench.load_results(by_python, polars=True)
    assert sorted(results.cells["leg"].to_list()) == sorted(LEGS)
    assert "1 rejected" not in repr(results) and str(by_python) in repr(results)
    # neither leg selects under a budget: a curve is refused, naming why
    with pytest.raises(hopbench.ResultsError):
        results.curves("synthetic", "lexical")


def test_a_failing_run_raises_run_error_with_its_status_and_message(tmp_path):
    native()
    import hopbench

    with pytest.raises(hopbench.RunError) as e:
        hopbench.run_matrix(datasets="no_such_dataset", legs="lexical", threads=1,
                            results=tmp_path / "r", quiet=True)
    assert e.value.status != 0 and "no_such_dataset" in "".join(e.value.tail)
    assert f"status {e.value.status}" in str(e.value)


class InterruptOn:
    """A stand-in for `sys.stderr` that raises KeyboardInterrupt (a Ctrl-C in the notebook: the
    kernel alone is interrupted, not the child) when a line containing `text` is written."""

    def __init__(self, text):
        self.text, self.lines = text, []

    def write(self, line):
        self.lines.append(line)
        if self.text in line:
            raise KeyboardInterrupt

    def flush(self):
        pass


def test_an_interrupted_run_leaves_only_cells_that_verify_and_resumes(runs, tmp_path,
                                                                      monkeypatch):
    """Ctrl-C while the cells are computed stops the child. Every file it left under its own
    name verifies (a dead writer's temporaries, `.<name>.tmp-<pid>`, are never read, and the
    next writer removes them), and a run afterwards completes the same cells as an
    uninterrupted run."""
    import hopbench

    by_cli, by_python, _ = runs
    results = tmp_path / "results"
    # the embedding cache of the earlier run (the export is rebuilt): the cells come sooner
    shutil.copytree(by_python / "embeddings", results / "embeddings")
    monkeypatch.chdir(REPO)
    # the second cell's progress line: the first cell is written, the second is being written
    stderr = InterruptOn("synthetic x graph_rescue")
    with monkeypatch.context() as m:
        m.setattr(sys, "stderr", stderr)
        with pytest.raises(KeyboardInterrupt):
            hopbench.run_matrix(datasets="synthetic", legs=LEGS, threads=2, results=results,
                                extra_args=["--no-report"])
    assert not (results / "matrix.md").exists(), "".join(stderr.lines)
    if (results / "cells").is_dir():
        left = hopbench.load_results(results)
        assert len(left.rejected) == 0 and set(left.cells["leg"]) <= set(LEGS)
    hopbench.run_matrix(datasets="synthetic", legs=LEGS, threads=2, quiet=True,
                        results=results, extra_args=["--no-report"])
    assert not [p for p in results.rglob(".*.tmp-*")], "the next writer sweeps temporaries"
    check = subprocess.run([sys.executable, str(REPO / "scripts" / "behaviour_check.py"),
                            str(by_cli), str(results)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_command_is_the_binarys(tmp_path):
    """`python -m hopbench` runs the command line of the compiled core: its version line, and
    its exit status."""
    n = native()
    out = subprocess.run(cli() + ["--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == n.version()
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    bad = subprocess.run(cli() + ["eval", str(tmp_path / "none.trec"),
                                  str(tmp_path / "qrels.txt")], capture_output=True, text=True)
    assert bad.returncode != 0 and "none.trec" in bad.stderr


# The Python side of run_matrix, with a stand-in for the command (no compiled module needed).

FAKE = textwrap.dedent(r"""
    import os, signal, sys, time
    results = sys.argv[sys.argv.index("--results") + 1]
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "argv.json"), "w") as f:
        import json; json.dump(sys.argv[1:], f)
    mode = os.environ["FAKE_MODE"]
    if mode == "fail":
        for i in range(30):
            sys.stderr.write(f"line {i}\n")
        sys.exit(3)
    if mode == "wait":
        def stopped(*_):
            open(os.path.join(results, "got-sigint"), "w").close()
            os._exit(130)
        signal.signal(signal.SIGINT, stopped)
        sys.stderr.write("started\n")
        sys.stderr.flush()
        time.sleep(60)
        sys.exit(0)
""")


@pytest.fixture
def fake_command(tmp_path, monkeypatch):
    from hopbench import _results

    script = tmp_path / "fake_hopbench.py"
    script.write_text(FAKE)
    monkeypatch.setattr(_results, "command", lambda: [sys.executable, str(script)])
    return lambda mode: monkeypatch.setenv("FAKE_MODE", mode)


def test_the_command_line_run_matrix_builds(tmp_path):
    from hopbench import _results

    args = _results.matrix_args(campaign=tmp_path / "c.yaml", datasets=["a", "b"], legs="all",
                                results=tmp_path / "r", threads=2, data_dir="data", force=True,
                                quiet=True, extra_args=["--limit", 5])
    assert args == ["run-matrix", "--results", str(tmp_path / "r"), "--campaign",
                    str(tmp_path / "c.yaml"), "--datasets", "a,b", "--legs", "all", "--threads",
                    "2", "--data-dir", "data", "--force", "--quiet", "--limit", "5"]
    assert _results.matrix_args(None, None, None, "results", None, None, False, False, ()) \
        == ["run-matrix", "--results", "results"]
    assert _results.command()[:3] == [sys.executable, "-m", "hopbench"]


def test_run_error_carries_the_status_and_the_last_lines(fake_command, tmp_path, capsys):
    import hopbench

    fake_command("fail")
    with pytest.raises(hopbench.RunError) as e:
        hopbench.run_matrix(results=tmp_path / "r", legs=["x"])
    assert e.value.status == 3
    assert e.value.tail == [f"line {i}\n" for i in range(10, 30)]
    assert str(e.value).startswith("hopbench run-matrix exited with status 3:\nline 10\n")
    # every line went to the caller's stderr as it came
    assert capsys.readouterr().err == "".join(f"line {i}\n" for i in range(30))
    assert json.loads((tmp_path / "r" / "argv.json").read_text()) == [
        "run-matrix", "--results", str(tmp_path / "r"), "--legs", "x"]


def test_an_interrupt_stops_the_child_and_is_raised_again(fake_command, tmp_path, monkeypatch):
    import hopbench

    fake_command("wait")
    stderr = InterruptOn("started")
    monkeypatch.setattr(sys, "stderr", stderr)
    with pytest.raises(KeyboardInterrupt):
        hopbench.run_matrix(results=tmp_path / "r")
    assert stderr.lines == ["started\n"]
    assert (tmp_path / "r" / "got-sigint").exists(), "the child was not sent SIGINT"


def test_the_childs_output_goes_to_sys_stdout_and_sys_stderr(capsys):
    from hopbench import _results

    status, tail = _results.run_child([sys.executable, "-c",
                                       "import sys; print('| matrix |'); "
                                       "sys.stderr.write('progress\\n'); sys.exit(0)"])
    assert (status, tail) == (0, ["progress\n"])
    out = capsys.readouterr()
    assert out.out == "| matrix |\n" and out.err == "progress\n"
