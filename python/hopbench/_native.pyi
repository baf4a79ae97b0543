"""The compiled core (`hopbench._native`, built from `py/` with PyO3): the same Rust code as the
`hopbench` command. The public API (`hopbench.evaluate`, ...) normalises its inputs and builds
DataFrames around these calls; nothing here is meant to be called directly.

A run or qrels argument (`Source`) is one of:

- `("path", path: str, format: str | None)`: a file; a run is TREC, JSON or parquet (format
  `"trec"`, `"json"`, `"parquet"`, or `None`: from the extension), qrels are TREC qrels
  (`format` must be `None`).
- `("dict", mapping[, name])`: `{query_id: {doc_id: score}}` for a run (score: float or int),
  `{query_id: {doc_id: grade}}` for qrels (grade: int). Ids are `str`.
- `("columns", query_ids, doc_ids, values[, name])`: three equally long iterables, one record
  per index (a run's scores, or qrels' integer grades), in record order.

`name` (default `run (dict)`, `qrels (columns)`, ...) stands for the file name in messages.

Errors in the inputs raise `InputError` (or a subclass) whose message names the record: the file
and line for a file, `$["q1"]["d7"]` for a dict entry, `row 12` for a column record. Nothing
panics across the boundary: a Rust panic becomes `RuntimeError`.
"""

from typing import Any, Optional, Sequence, Tuple, Union

Source = Tuple[Any, ...]

class InputError(ValueError):
    """A run, qrels or results file, or a record of one, that hopbench refuses."""

class MeasureError(InputError):
    """A measure name hopbench does not know (the message lists the known spellings)."""

class ResultsError(InputError):
    """A results directory, or a cell of one, that does not verify."""

def evaluate(
    run: Source,
    qrels: Source,
    measures: Optional[Sequence[str]],
    relevance_level: int,
    ties: str,
    drop_unknown: bool,
    per_query: bool,
    ci: bool,
    resamples: int,
    seed: int,
) -> dict:
    """Scores `run` against `qrels` as `hopbench eval` does (`measures=None`: eval's default
    set; `ties`: `"id"` or `"trec_eval"`). Returns:

    - `"measure"`: list[str], the measure names in report order;
    - `"mean"`: list[float | None] (None: undefined for every query);
    - `"ci_lo"`, `"ci_hi"`: list[float | None] (bootstrap 95%, None when `ci` is false or
      undefined);
    - `"queries"`: list[int] (queries where the measure is defined);
    - `"per_query"` (only when `per_query`): `{"query_ids": list[str], "measures": list[str],
      "values": bytes}`: each evaluated query's id once (qrels order), the measure names once,
      and a value per (query, measure) as little-endian f64, query-major (NaN where a measure
      is undefined for the query);
    - `"info"`: `{"records", "queries", "queries_absent", "queries_without_relevant",
      "ties_broken", "dropped_unknown_queries": int, "ties": str, "relevance_level": int,
      "run_in_place", "qrels_in_place": bool}` (the last two: whether the run and the qrels
      were dicts read where Python keeps them, rather than as records; the values are the
      same either way).
    """

def compare(
    run_a: Source,
    run_b: Source,
    qrels: Source,
    measures: Optional[Sequence[str]],
    relevance_level: int,
    ties: str,
    drop_unknown: bool,
    resamples: int,
    permutations: int,
    seed: int,
) -> dict:
    """Paired comparison of `run_b` against `run_a` over the queries both define, per measure.
    Returns columns (lists, one entry per measure): `"measure"`, `"mean_a"`, `"mean_b"`,
    `"diff"` (mean of b - a), `"ci_lo"`, `"ci_hi"` (paired bootstrap 95% of the diff), `"p"`
    (two-sided paired randomization test), `"p_holm"` (Holm over the measures), `"queries"`."""

def cli(argv: Sequence[str]) -> int:
    """Runs the `hopbench` command line in this process with `argv` (argv[0] is the program
    name) and returns its exit status; what the command prints goes to this process's stdout
    and stderr."""

def load_results(results: str) -> dict:
    """Reads every cell of a results directory through the same verification as the CLI.
    Returns `{"cells": list[dict], "rejected": list[dict]}`: each cell a flat dict (`dataset`,
    `leg`, `status`, `queries`, then per metric `<metric>`, `<metric>_ci_lo`,
    `<metric>_ci_hi`), each rejected one `{"dataset", "leg", "reason"}`."""

def per_query(results: str, dataset: str, leg: str) -> dict:
    """One verified cell's per-query values: `{"query_id": list[str], <metric>: list[float |
    None], ...}`. Raises `ResultsError` when the cell does not verify."""

def curves(results: str, dataset: str, leg: str) -> dict:
    """One verified cell's budget curve points: columns `budget`, then per metric its mean and
    CI (`<metric>`, `<metric>_ci_lo`, `<metric>_ci_hi`), then the spend columns. Raises
    `ResultsError` when the cell has no curve or does not verify."""

def version() -> str:
    """`hopbench --version`'s line: the version and the build's features."""
