"""Column dicts from the compiled core as DataFrames: pandas by default, polars when asked (each
imported only when used)."""


def frame(columns, polars=False):
    """A DataFrame of `columns` (a dict of equally long lists), column order kept."""
    if polars:
        import polars as pl

        return pl.DataFrame(columns, strict=False)
    import pandas as pd

    return pd.DataFrame(columns)


def per_query(packed, polars=False):
    """The per-query table (`query_id`, `measure`, `value`, a row per query and measure, query
    by query) from the core's packed form: each query id once, the measure names once, and the
    values as little-endian f64 bytes in row order (NaN: undefined for the query, NaN in pandas
    as before, null in polars). The ids and names are repeated here, with the frame library's
    vector operations where it has them."""
    ids, names, values = packed["query_ids"], packed["measures"], packed["values"]
    m = len(names)
    if polars:
        import array
        import sys

        import polars as pl

        floats = array.array("d")
        floats.frombytes(values)
        if sys.byteorder != "little":
            floats.byteswap()
        # NaN marks a value undefined for its query: null in polars, as a list's None gives
        return pl.DataFrame({"query_id": [q for q in ids for _ in range(m)],
                             "measure": names * len(ids),
                             "value": [None if v != v else v for v in floats.tolist()]},
                            strict=False)
    import numpy as np
    import pandas as pd

    # each id made a pandas string once, then repeated by pandas (the column dtype is the one a
    # list of str gives)
    return pd.DataFrame({
        "query_id": pd.Series(ids, dtype="str").repeat(m).reset_index(drop=True),
        "measure": pd.Series(names, dtype="str").iloc[np.tile(np.arange(m), len(ids))]
        .reset_index(drop=True),
        "value": np.frombuffer(values, dtype="<f8"),
    })


def rows(records, polars=False, columns=None):
    """A DataFrame of `records` (a list of dicts that may differ in keys), one row each; with
    `columns`, those columns in that order even when there is no record."""
    keys = list(columns or [])
    for r in records:
        keys.extend(k for k in r if k not in keys)
    return frame({k: [r.get(k) for r in records] for k in keys}, polars=polars)
