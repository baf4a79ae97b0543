"""Runs and qrels as Python users hold them, turned into the three shapes the compiled core reads
(see `_native.pyi`): a path, a dict, or three columns. A dict is passed through untouched (the
core walks it, no copy); a DataFrame becomes its three columns as lists; an iterable of records
(ir_datasets' `scoreddocs_iter()` / `qrels_iter()` namedtuples, dicts) becomes three lists in one
pass. Anything else is an `InputError` that says what was expected.

Checks here are the ones the core cannot make as well: a null in a DataFrame (the frame's own
vector operation finds it, where the core would only see a float NaN or a None), a column whose
type cannot hold ids, a record without a field. Every other check (an id that is not a str, a
score that is not finite, a grade that is not an integer, a duplicate) is the core's, with the
message the CLI gives for a file and the record named."""

import os

# Column names tried, in order, when the caller names none: hopbench's and ir_datasets', ranx's,
# then PyTerrier's. Keys: query_id, doc_id, and score (a run's score, qrels' grade).
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


def _columns_of(frame, kind, label, given):
    """Which of `frame`'s columns hold the query ids, document ids and values: `given` (the
    caller's `run_columns` / `qrels_columns`, any keys it omits at their default), else the
    first set of known names the frame has."""
    defaults = RUN_COLUMNS if kind == "run" else QRELS_COLUMNS
    names = list(frame.columns)
    if given is not None:
        given = dict(given)
        # qrels' value column may be named by its meaning
        if kind == "qrels" and "relevance" in given:
            given["score"] = given.pop("relevance")
        keys = ("query_id", "doc_id", "score") + (("relevance",) if kind == "qrels" else ())
        unknown = set(given) - set(keys)
        if unknown:
            raise _input_error(
                f"{kind}_columns: unknown key(s) {sorted(unknown)}; the keys are "
                f"{', '.join(keys)}")
        choice = {**defaults[0], **given}
        missing = [c for c in choice.values() if c not in names]
        if missing:
            raise _input_error(f"{label} DataFrame: no column {missing[0]!r} (it has {names})")
        return choice
    for choice in defaults:
        if all(c in names for c in choice.values()):
            return choice
    wanted = " or ".join(f"({', '.join(c.values())})" for c in defaults)
    raise _input_error(
        f"{label} DataFrame: expected the columns {wanted}, or name them with "
        f"{kind}_columns={{'query_id': ..., 'doc_id': ..., 'score': ...}}; it has {names}")


def _arrow_string(dtype):
    """Whether a pandas dtype holds text in one of Arrow's string layouts (pandas' own
    `StringDtype("pyarrow")` or an `ArrowDtype`: pandas cannot even name the kind of a
    `string_view` one)."""
    import pandas as pd

    if isinstance(dtype, pd.StringDtype):
        return dtype.storage == "pyarrow"
    if not isinstance(dtype, getattr(pd, "ArrowDtype", ())):
        return False
    import pyarrow as pa

    kinds = (pa.types.is_string, pa.types.is_large_string,
             getattr(pa.types, "is_string_view", lambda _: False))
    return any(is_kind(dtype.pyarrow_dtype) for is_kind in kinds)


def _id_column(column, name, label, polars):
    """An id column as str values: integers become str (ids read from numbers); a column of
    another type (floats, dates, booleans) is an `InputError` naming it, as its values cannot be
    ids (`7.0` would not match `7`). Columns of objects keep their values: the compiled core
    names the row of any that is not a str."""
    if polars:
        dtype = column.dtype
        if dtype.is_integer():
            return column.cast(str)
        if dtype.is_numeric() or dtype.is_temporal() or str(dtype) == "Boolean":
            raise _input_error(f"{label} DataFrame: column {name!r} holds {dtype}, not str ids")
        return column
    from pandas.api.types import is_bool_dtype, is_integer_dtype, is_numeric_dtype

    if _arrow_string(column.dtype):
        return column
    if is_integer_dtype(column) and not is_bool_dtype(column):
        return column.astype(str)
    if is_numeric_dtype(column) or column.dtype.kind in "bMm":
        raise _input_error(f"{label} DataFrame: column {name!r} holds {column.dtype}, not str ids")
    return column


def _checked_column(frame, name, label, ids):
    """One column, checked with the frame library's own vector operations (a loop over ten
    million values in Python would cost more than the evaluation): a null is an `InputError`
    naming the row and the column; an id column goes through `_id_column`."""
    column = frame[name]
    polars = type(frame).__module__.split(".")[0] == "polars"
    nulls = column.is_null() if polars else column.isna()
    if nulls.any():
        row = int(nulls.arg_true()[0]) if polars else int(nulls.to_numpy().argmax())
        raise _input_error(f"{label} DataFrame: row {row}: column {name!r} is null")
    if ids:
        column = _id_column(column, name, label, polars)
    return column


def _has_pyarrow():
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def _arrow_ready(columns, polars):
    """Whether the three checked columns can be handed over through the Arrow C stream
    interface, for the compiled core to read from their own buffers. Turning them into lists
    makes a Python object per value: 0.76 s per Arrow-backed id column of 10M rows (pandas 3.1),
    more than the evaluation. Columns this path does not fit (Python-object strings,
    categoricals, pandas without pyarrow) go as lists."""
    if not all(hasattr(c, "__arrow_c_stream__") for c in columns):
        return False
    ids, values = columns[:2], columns[2]
    if polars:
        import polars as pl

        return (all(c.dtype == pl.String for c in ids)
                and (values.dtype.is_integer() or values.dtype in (pl.Float32, pl.Float64)))
    from pandas.api.types import is_numeric_dtype

    # integers, and floats of 32 or 64 bits (numpy's or Arrow's); booleans, complex, decimals
    # and half floats go as lists
    dtype = values.dtype
    return (_has_pyarrow() and all(_arrow_string(c.dtype) for c in ids)
            and is_numeric_dtype(dtype)
            and (dtype.kind in "iu"
                 or (dtype.kind == "f" and getattr(dtype, "itemsize", 8) >= 4)))


def _numpy_as_arrow(column):
    """A pandas column of numpy numbers as an Arrow chunked array over the same buffer. Its own
    `__arrow_c_stream__` copies it and looks for NaN to make nulls (20 ms for 10M scores, a
    twentieth of the evaluation); the column's nulls have been refused already. Other columns
    (Arrow-backed ones) are returned as they are."""
    import numpy as np

    if not isinstance(column.dtype, np.dtype):
        return column
    import pyarrow as pa

    return pa.chunked_array([pa.array(column.to_numpy(copy=False))])


_MISSING = object()


def _field(rec, field):
    """`rec`'s `field`: a key of a dict, else an attribute (namedtuples, dataclasses)."""
    if isinstance(rec, dict):
        return rec.get(field, _MISSING)
    return getattr(rec, field, _MISSING)


def _from_records(records, label, value_field):
    """Three lists from an iterable of records with fields query_id, doc_id and `value_field`
    (attributes, as ir_datasets' namedtuples have, or keys), in one pass: a generator such as
    `qrels_iter()` is read once, never held whole."""
    qs, ds, vs = [], [], []
    fields = ("query_id", "doc_id", value_field)
    for i, rec in enumerate(records):
        q, d, v = (_field(rec, f) for f in fields)
        if q is _MISSING or d is _MISSING or v is _MISSING:
            missing = next(f for f, x in zip(fields, (q, d, v)) if x is _MISSING)
            raise _input_error(
                f"{label} record {i}: no field {missing!r} (each record needs query_id, doc_id "
                f"and {value_field}; got {type(rec).__name__})")
        qs.append(q)
        ds.append(d)
        vs.append(v)
    return qs, ds, vs


def source(obj, kind, *, columns=None, run_format=None, label=None, arrow=True):
    """The native source tuple of `obj`, a run (`kind="run"`) or qrels (`kind="qrels"`);
    `label` (default: `kind`) names it in messages (`run_a`, `run_b` in a comparison).
    `arrow=False` hands a DataFrame over as lists even where its columns could go as Arrow
    (the tests compare the two paths)."""
    label = label or kind
    value_field = "score" if kind == "run" else "relevance"
    if run_format is not None and run_format not in RUN_FORMATS:
        raise _input_error(f"run_format {run_format!r}: expected one of {RUN_FORMATS}")
    if isinstance(obj, (str, os.PathLike)):
        if kind == "qrels" and run_format is not None:
            raise _input_error("qrels files are TREC qrels: give no format")
        return ("path", os.fspath(obj), run_format)
    if isinstance(obj, dict):
        return ("dict", obj, f"{label} (dict)")
    to_dict = getattr(obj, "to_dict", None)
    if type(obj).__module__.split(".")[0] == "ranx" and callable(to_dict):
        return ("dict", to_dict(), f"{label} (ranx {type(obj).__name__})")
    if _is_frame(obj):
        choice = _columns_of(obj, kind, label, columns)
        columns = [_checked_column(obj, choice[key], label, ids=key != "score")
                   for key in ("query_id", "doc_id", "score")]
        polars = type(obj).__module__.split(".")[0] == "polars"
        if arrow and _arrow_ready(columns, polars):
            if not polars:
                columns[2] = _numpy_as_arrow(columns[2])
            return ("arrow", *columns, f"{label} (DataFrame)")
        return ("columns", *(c.to_list() for c in columns), f"{label} (DataFrame)")
    if hasattr(obj, "__iter__") and not isinstance(obj, (bytes, bytearray)):
        qs, ds, vs = _from_records(obj, label, value_field)
        return ("columns", qs, ds, vs, f"{label} (records)")
    raise _input_error(
        f"{label}: expected a path, a dict {{query_id: {{doc_id: {value_field}}}}}, a pandas or "
        f"polars DataFrame, or an iterable of records; got {type(obj).__name__}")
