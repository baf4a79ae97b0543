"""The matrix from Python: `run_matrix` runs the installed package's own `run-matrix` in a child
process, and `load_results` reads a results directory through the CLI's verification.

The matrix runs in a child, not in process, for two reasons: a notebook's Ctrl-C (an interrupt
sent to the kernel alone) must stop a run of many minutes, and the Rust code never looks at
Python's interrupt flag; and the harness writes every file whole and renames it into place, so a
child stopped at any moment leaves nothing half-written for the next run to trust."""

import os
import signal
import subprocess
import sys
import threading
import warnings

from . import _frames

# The lines of the command's stderr a `RunError` carries.
TAIL_LINES = 20
# How long a child stopped by an interrupt may take to exit before it is killed.
STOP_SECONDS = 30


class RunError(RuntimeError):
    """`run_matrix`'s command failed.

    Attributes:
        status: its exit status (negative: the signal that stopped it).
        tail: the last lines it wrote to stderr.
    """

    __module__ = "hopbench"

    def __init__(self, status, tail):
        self.status = status
        self.tail = tail
        super().__init__(f"hopbench run-matrix exited with status {status}:\n{''.join(tail)}")


class Results:
    """A results directory's cells, each read through the CLI's verification.

    Attributes:
        path: the results directory.
        cells: a DataFrame with a row per verified cell: `dataset`, `leg`, `status`, `reason`,
            `queries`, then every metric with `<metric>_ci_lo` and `<metric>_ci_hi`, then the
            token spend.
        rejected: a DataFrame of the cells that do not verify (`dataset`, `leg`, `reason`):
            their numbers are never returned.
    """

    __module__ = "hopbench"

    def __init__(self, path, cells, rejected, polars=False):
        self.path = path
        self.cells = cells
        self.rejected = rejected
        self._polars = polars

    def per_query(self, dataset, leg):
        """One verified cell's per-query values: `query_id`, then a column per metric.

        Args:
            dataset: the cell's dataset.
            leg: the cell's leg.

        Raises:
            ResultsError: the cell does not verify (or there is no such cell).
        """
        from . import _native

        return _frames.frame(_native.per_query(self.path, dataset, leg), polars=self._polars)

    def curves(self, dataset, leg):
        """One verified cell's budget curve: a row per token budget, each curve metric's mean
        and CI, and the tokens spent.

        Args:
            dataset: the cell's dataset.
            leg: the cell's leg (a selecting leg: the others have no curve).

        Raises:
            ResultsError: the cell has no curve or does not verify.
        """
        from . import _native

        return _frames.frame(_native.curves(self.path, dataset, leg), polars=self._polars)

    def __repr__(self):
        datasets = sorted(set(self.cells["dataset"])) if len(self.cells) else []
        shown = ", ".join(datasets[:5]) + (", ..." if len(datasets) > 5 else "")
        return (f"<hopbench.Results {self.path!s}: {len(self.cells)} verified cells"
                f"{f' ({shown})' if shown else ''}, {len(self.rejected)} rejected>")


def load_results(results="results", *, polars=False):
    """Reads a results directory's cells through the same verification as the CLI.

    A cell whose summary, records or run file is not the one its summary names (edited,
    truncated, of another run) is listed in `.rejected` with the reason and a warning, never
    returned with numbers.

    Args:
        results: the results directory (a str or a path).
        polars: the tables as polars DataFrames instead of pandas.

    Returns:
        `Results`.

    Raises:
        ResultsError: the directory is not a results directory.
    """
    from . import _native

    path = os.fspath(results)
    out = _native.load_results(path)
    cells = _frames.rows(out["cells"], polars=polars,
                         columns=["dataset", "leg", "status", "reason", "queries"])
    rejected = _frames.rows(out["rejected"], polars=polars, columns=["dataset", "leg", "reason"])
    for r in out["rejected"]:
        warnings.warn(f"cell {r['dataset']} x {r['leg']} not trusted: {r['reason']}",
                      stacklevel=2)
    return Results(path, cells, rejected, polars=polars)


def _list_arg(value):
    """A comma list for `--datasets` / `--legs` from a list or a str ("all" stays "all")."""
    if value is None or isinstance(value, str):
        return value
    return ",".join(value)


def command():
    """The installed package's `hopbench` command: this interpreter's `-m hopbench` (so the
    child is the same build as the caller's `_native`, whatever `hopbench` is on PATH)."""
    return [sys.executable, "-m", "hopbench"]


def matrix_args(campaign, datasets, legs, results, threads, data_dir, force, quiet, extra_args):
    """`run-matrix`'s arguments (the flags `hopbench run-matrix --help` lists)."""
    args = ["run-matrix", "--results", os.fspath(results)]
    for flag, value in (("--campaign", campaign), ("--datasets", _list_arg(datasets)),
                        ("--legs", _list_arg(legs)), ("--threads", threads),
                        ("--data-dir", data_dir)):
        if value is not None:
            args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    if force:
        args.append("--force")
    if quiet:
        args.append("--quiet")
    return args + [str(a) for a in extra_args]


def _forward(stream, out):
    """Copies the child's `stream` to `out` line by line (a notebook shows `sys.stdout`, not
    the kernel's file descriptor 1)."""
    for line in stream:
        out.write(line)
    out.flush()


def _stop(child):
    """Stops `child` as Ctrl-C stops the command in a terminal (SIGINT, whose default action
    the command keeps); kills it when it has not exited after `STOP_SECONDS` or on a second
    interrupt."""
    try:
        if os.name == "nt":
            child.terminate()
        else:
            child.send_signal(signal.SIGINT)
        child.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    except BaseException:
        child.kill()
        child.wait()
        raise


def run_child(argv):
    """Runs `argv`, its stdout to `sys.stdout` and its stderr to `sys.stderr` as they come;
    returns (exit status, the last `TAIL_LINES` lines of stderr). An interrupt stops the child
    (`_stop`) and is raised again."""
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             errors="replace")
    out = threading.Thread(target=_forward, args=(child.stdout, sys.stdout), daemon=True)
    out.start()
    tail = []
    try:
        for line in child.stderr:
            sys.stderr.write(line)
            tail.append(line)
            del tail[:-TAIL_LINES]
        status = child.wait()
    except BaseException:
        _stop(child)
        raise
    finally:
        out.join(timeout=STOP_SECONDS)
        child.stdout.close()
        child.stderr.close()
    return status, tail


def run_matrix(campaign=None, datasets=None, legs=None, results="results", threads=None,
               data_dir=None, force=False, quiet=False, extra_args=(), polars=False):
    """Runs `hopbench run-matrix` (this package's own build of it) and loads what it wrote.

    The command runs in a child process, so Ctrl-C in a notebook stops it (the interrupt is
    passed on to the child, then raised here); every file it writes is written whole and renamed
    into place, so an interrupted run leaves no half-written cell, and running again computes
    only the cells that are missing. What the command prints goes to `sys.stdout` (the matrix
    table) and `sys.stderr` (its progress lines) as it comes.

    Args:
        campaign: a campaign YAML file (None: ./campaign.yaml, else the compiled-in default).
        datasets: dataset names, a list or a comma string, or "all" (None: the campaign's).
        legs: leg names, a list or a comma string, or "all" (None: the campaign's).
        results: the results directory (relative paths are from the current directory).
        threads: worker threads (None: $RAYON_NUM_THREADS, else the campaign's `run.threads`;
            the command refuses to guess, as the thread count is part of the determinism
            contract).
        data_dir: the raw datasets' directory (None: $HOPBENCH_DATA, else the campaign's).
        force: recompute cells even when a verified cached one exists.
        quiet: no progress output.
        extra_args: more `run-matrix` arguments, e.g. `["--no-report", "--limit", "20"]`.
        polars: the returned `Results` tables as polars DataFrames.

    Returns:
        `load_results(results)`.

    Raises:
        RunError: the command failed (`.status`, and `.tail`: the last lines of its stderr).
        KeyboardInterrupt: interrupted; the child has been stopped.
    """
    status, tail = run_child(command() + matrix_args(
        campaign, datasets, legs, results, threads, data_dir, force, quiet, extra_args))
    if status != 0:
        raise RunError(status, tail)
    return load_results(results, polars=polars)
