"""Runs and qrels as Python users hold them, turned into the three shapes the compiled core reads
(see `_native.pyi`): a path, a dict, or three columns. A dict is passed through untouched (the
core walks it, no copy); a DataFrame becomes its three columns as lists; an iterable of records
(ir_datasets' `scoreddocs_iter()` / `qrels_iter()` namedtuples, dicts) becomes three lists in one
pass. Anything else is an `InputError` that says what was expected."""

import os

# Column names tried, in order, when the caller names none: hopbench's and ir_datasets', ranx's,
# then PyTerrier's.
RUN_COLUMNS = [
    {"query_id": "query_id", "doc_id": "doc_id", "score": "score"},
    {"query_id": "q_id", "doc_id": "doc_id", "score": "score"},
    {"query_id": "qid", "doc_id": "docno", "score": "score"},
]
QRELS_COLUMNS = [
    {"query_id": "query_id", "doc_id": "doc_id", "score": "relevance"},
    {"query_id": "q_id", "doc_id": "doc_id", "score": "score"},
    {"query_id": "qid", "doc_id": "docno", "score": "label"},
]
RUN_FORMATS = ("trec", "json", "parquet")


def _input_error(message):
    from . import InputError

    return InputError(message)


def _is_frame(obj):
    """A pandas or polars DataFrame, recognised without importing either."""
    module = type(obj).__module__
    return type(obj).__name__ == "DataFrame" and module.split(".")[0] in ("pandas", "polars")


def _columns_of(frame, what, given, defaults):
    names = list(frame.columns)
    if given is not None:
        unknown = set(given) - {"query_id", "doc_id", "score"}
        if unknown:
            raise _input_error(
                f"{what}_columns: unknown key(s) {sorted(unknown)}; the keys are query_id, "
                f"doc_id and score")
        choice = {**defaults[0], **given}
        missing = [c for c in choice.values() if c not in names]
        if missing:
            raise _input_error(f"{what} DataFrame: no column {missing[0]!r} (it has {names})")
        return choice
    for choice in defaults:
        if all(c in names for c in choice.values()):
            return choice
    wanted = " or ".join(f"({', '.join(c.values())})" for c in defaults)
    raise _input_error(
        f"{what} DataFrame: expected the columns {wanted}, or name them with "
        f"{what}_columns={{'query_id': ..., 'doc_id': ..., 'score': ...}}; it has {names}")


def _column_list(frame, name, what, ids):
    """One column as a Python list, checked with the frame library's own vector operations (a
    loop over ten million values in Python would cost more than the evaluation): a null is an
    `InputError` naming the row and the column; integer ids become str. Anything else about a
    value (an id that is not a str, a score that is not finite) the compiled core reports,
    naming the row."""
    column = frame[name]
    polars = type(frame).__module__.split(".")[0] == "polars"
    nulls = column.is_null() if polars else column.isna()
    if nulls.any():
        row = int(nulls.arg_true()[0]) if polars else int(nulls.to_numpy().argmax())
        raise _input_error(f"{what} DataFrame: row {row}: column {name!r} is null")
    if ids:
        if polars and column.dtype.is_integer():
            column = column.cast(str)
        elif not polars:
            from pandas.api.types import is_integer_dtype

            if is_integer_dtype(column):
                column = column.astype(str)
    return column.to_list()


def _from_records(records, what, value_field):
    """Three lists from an iterable of records with fields query_id, doc_id and `value_field`
    (attributes, as namedtuples have, or keys)."""
    qs, ds, vs = [], [], []
    fields = ("query_id", "doc_id", value_field)
    for i, rec in enumerate(records):
        try:
            if isinstance(rec, dict):
                q, d, v = (rec[f] for f in fields)
            else:
                q, d, v = (getattr(rec, f) for f in fields)
        except (KeyError, AttributeError) as e:
            missing = e.args[0] if isinstance(e, KeyError) else str(e).rsplit("'", 2)[-2]
            raise _input_error(
                f"{what} record {i}: no field {missing!r} (each record needs query_id, doc_id "
                f"and {value_field})") from None
        qs.append(q)
        ds.append(d)
        vs.append(v)
    return qs, ds, vs


def source(obj, what, *, columns=None, run_format=None):
    """The native source tuple for a run (`what="run"`) or qrels (`what="qrels"`)."""
    value_field = "score" if what == "run" else "relevance"
    if run_format is not None and run_format not in RUN_FORMATS:
        raise _input_error(f"run_format {run_format!r}: expected one of {RUN_FORMATS}")
    if isinstance(obj, (str, os.PathLike)):
        if what == "qrels" and run_format is not None:
            raise _input_error("qrels files are TREC qrels: give no format")
        return ("path", os.fspath(obj), run_format)
    if isinstance(obj, dict):
        return ("dict", obj, f"{what} (dict)")
    to_dict = getattr(obj, "to_dict", None)
    if type(obj).__module__.split(".")[0] == "ranx" and callable(to_dict):
        return ("dict", to_dict(), f"{what} (ranx {type(obj).__name__})")
    if _is_frame(obj):
        choice = _columns_of(obj, what, columns, RUN_COLUMNS if what == "run" else QRELS_COLUMNS)
        return (
            "columns",
            _column_list(obj, choice["query_id"], what, ids=True),
            _column_list(obj, choice["doc_id"], what, ids=True),
            _column_list(obj, choice["score"], what, ids=False),
            f"{what} (DataFrame)",
        )
    if hasattr(obj, "__iter__") and not isinstance(obj, (bytes, bytearray)):
        qs, ds, vs = _from_records(obj, what, value_field)
        return ("columns", qs, ds, vs, f"{what} (records)")
    raise _input_error(
        f"{what}: expected a path, a dict {{query_id: {{doc_id: {value_field}}}}}, a pandas or "
        f"polars DataFrame, or an iterable of records; got {type(obj).__name__}")
