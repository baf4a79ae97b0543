"""hopbench from Python: the benchmark harness's evaluation, matrix and results, in process.

- `evaluate(run, qrels, measures)`: trec_eval's numbers (graded nDCG, AP, P@k, ...) with
  bootstrap CIs, from a path, a dict, a DataFrame or records; the code of `hopbench eval`.
- `compare(run_a, run_b, qrels, measures)`: paired differences, CIs, p-values, Holm.
- `run_matrix(...)`: what `hopbench run-matrix` runs; `load_results(dir)`: its verified cells.
- `hopbench.backend.serve(search)`: an external first-stage engine as one Python function.

The compiled core is imported on first use, so `hopbench.backend` works from a source tree.
"""

from . import _frames, _inputs
from ._results import Results, RunError, load_results, run_matrix

__all__ = [
    "evaluate",
    "compare",
    "run_matrix",
    "load_results",
    "Results",
    "InputError",
    "MeasureError",
    "ResultsError",
    "RunError",
    "__version__",
]

# The CLI's statistics defaults (the compiled-in campaign's `stats`: `StatsConfig::default` in
# harness/src/pipeline/campaign.rs, and campaign.yaml), so `evaluate` gives `hopbench eval`'s CIs.
RESAMPLES = 2000
PERMUTATIONS = 10000
SEED = 20261129


def __getattr__(name):
    # the exceptions are the compiled core's own classes (so `except hopbench.InputError`
    # catches what it raises), and the version is its build's
    if name in ("InputError", "MeasureError", "ResultsError"):
        from . import _native

        return getattr(_native, name)
    if name == "__version__":
        try:
            from . import _native
        except ImportError:  # a source tree without the compiled core: the installed metadata
            from importlib import metadata

            try:
                return metadata.version("hopbench")
            except metadata.PackageNotFoundError:
                raise AttributeError("hopbench.__version__: the package is not installed "
                                     "(pip install .)") from None
        return _native.version().split()[1]
    raise AttributeError(f"module 'hopbench' has no attribute {name!r}")


def _measures(measures):
    """A list of measure names from a list or a comma string; None stays None (eval's default
    set). An empty selection is refused: it would silently return an empty table."""
    if measures is None:
        return None
    if isinstance(measures, str):
        measures = measures.split(",")
    names = [m.strip() for m in measures if m.strip()]
    if not names:
        from . import _native

        raise _native.MeasureError("measures: none given (None selects eval's default set)")
    return names


def _unknown(unknown_queries):
    if unknown_queries not in ("error", "drop"):
        from . import _native

        raise _native.InputError(
            f"unknown_queries {unknown_queries!r}: expected 'error' or 'drop'")
    return unknown_queries == "drop"


def evaluate(run, qrels, measures=None, *, ci=True, per_query=False, relevance_level=1,
             ties="id", unknown_queries="error", run_format=None, run_columns=None,
             qrels_columns=None, resamples=RESAMPLES, seed=SEED, polars=False):
    """Scores `run` against `qrels` with `hopbench eval`'s code, in this process.

    Args:
        run: the ranked results. A path (TREC `qid Q0 docid rank score tag`, JSON
            `{qid: {docid: score}}` or parquet), a dict `{query_id: {doc_id: score}}`
            (pytrec_eval's and ranx's shape; ranx `Run` objects too), a pandas or polars
            DataFrame with columns `query_id`, `doc_id`, `score` (ranx's `q_id` and PyTerrier's
            `qid`/`docno` are recognised), or an iterable of records with those fields
            (ir_datasets' `scoreddocs_iter()`).
        qrels: the judgements, in the same shapes with an integer `relevance` (grade) in place
            of the score (ranx `Qrels`, ir_datasets' `qrels_iter()`); a path is a TREC qrels
            file (`qid 0 docid rel`).
        measures: a list or a comma string of measure names (`nDCG@10`, `AP`, `P@5`, `R@100`,
            `RR`, `Rprec`, `Bpref`, `Judged@10`, `P(rel=2)@5`, ...; trec_eval's and ranx's
            spellings too). None: `hopbench eval`'s default (recall@k, nDCG@10, MRR@10).
        ci: bootstrap 95% confidence intervals of each mean (`ci_lo`, `ci_hi`).
        per_query: one row per (query, measure) instead of one per measure.
        relevance_level: relevant when grade >= this, for every binary measure (trec_eval's
            `-l`); nDCG's gain is the grade whatever the level.
        ties: the order of equal scores: "id" (ascending document id) or "trec_eval"
            (descending, as trec_eval sorts).
        unknown_queries: a run query the qrels do not judge: "error", or "drop" (its records
            are dropped and counted).
        run_format: a run path's format ("trec", "json", "parquet"); None: from its extension.
        run_columns: a run DataFrame's column names, e.g. `{"query_id": "qid", "doc_id":
            "docno", "score": "sim"}` (keys it omits keep their default names). Integer id
            columns are read as str; an id column of another type (float, date) is refused.
        qrels_columns: a qrels DataFrame's column names, e.g. `{"query_id": "qid",
            "doc_id": "docno", "relevance": "label"}` (keys `query_id`, `doc_id`, and
            `relevance` or `score` for the grade column; ir_datasets', ranx's and PyTerrier's
            names are recognised).
        resamples: bootstrap resamples of each CI.
        seed: the bootstrap's seed (the same seed gives the same CIs on every machine).
        polars: return a polars DataFrame instead of pandas.

    Returns:
        A DataFrame with a row per measure (`measure`, `mean`, `ci_lo`, `ci_hi`, `queries`:
        the queries where it is defined), or with `per_query` a row per query and measure
        (`query_id`, `measure`, `value`; None where undefined). Its `attrs` (pandas) hold the
        counts `hopbench eval` reports (records, absent queries, ties broken, ...).

    Raises:
        InputError: a bad file or record, named (the line, `$["q"]["d"]`, or the row).
        MeasureError: an unknown measure name.
    """
    from . import _native

    out = _native.evaluate(
        _inputs.source(run, "run", columns=run_columns, run_format=run_format),
        _inputs.source(qrels, "qrels", columns=qrels_columns),
        _measures(measures), relevance_level, ties, _unknown(unknown_queries), per_query, ci,
        resamples, seed)
    info = out.pop("info")
    if per_query:
        df = _frames.per_query(out.pop("per_query"), polars=polars)
    else:
        df = _frames.frame(out, polars=polars)
    if not polars:
        df.attrs.update(info)
    return df


def compare(run_a, run_b, qrels, measures=None, *, relevance_level=1, ties="id",
            unknown_queries="error", run_format=None, run_columns=None, qrels_columns=None,
            resamples=RESAMPLES, permutations=PERMUTATIONS, seed=SEED, polars=False):
    """Compares `run_b` with `run_a` on `qrels`, paired by query.

    For each measure, over the queries where both runs define it: both means, the mean
    difference `b - a`, its paired bootstrap 95% CI, the two-sided paired randomization test's
    p-value, and that p-value adjusted by Holm over the measures.

    Args:
        run_a: the baseline run (any shape `evaluate` takes).
        run_b: the run compared with it.
        qrels: the judgements (any shape `evaluate` takes).
        measures: measure names, a list or a comma string (None: `evaluate`'s default).
        relevance_level: relevant when grade >= this, for binary measures.
        ties: "id" or "trec_eval" (see `evaluate`).
        unknown_queries: "error" or "drop" (see `evaluate`).
        run_format: both run paths' format (None: from their extensions).
        run_columns: both run DataFrames' column names (see `evaluate`).
        qrels_columns: a qrels DataFrame's column names.
        resamples: bootstrap resamples of each CI.
        permutations: randomization-test rounds.
        seed: the seed of both (the same seed gives the same numbers on every machine).
        polars: return a polars DataFrame instead of pandas.

    Returns:
        A DataFrame with a row per measure: `measure`, `mean_a`, `mean_b`, `diff`, `ci_lo`,
        `ci_hi`, `p`, `p_holm`, `queries`.
    """
    from . import _native

    out = _native.compare(
        _inputs.source(run_a, "run", columns=run_columns, run_format=run_format, label="run_a"),
        _inputs.source(run_b, "run", columns=run_columns, run_format=run_format, label="run_b"),
        _inputs.source(qrels, "qrels", columns=qrels_columns),
        _measures(measures), relevance_level, ties, _unknown(unknown_queries), resamples,
        permutations, seed)
    return _frames.frame(out, polars=polars)
