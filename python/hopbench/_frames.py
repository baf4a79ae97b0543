"""Column dicts from the compiled core as DataFrames: pandas by default, polars when asked (each
imported only when used)."""


def frame(columns, polars=False):
    """A DataFrame of `columns` (a dict of equally long lists), column order kept."""
    if polars:
        import polars as pl

        return pl.DataFrame(columns, strict=False)
    import pandas as pd

    return pd.DataFrame(columns)


def rows(records, polars=False, columns=None):
    """A DataFrame of `records` (a list of dicts that may differ in keys), one row each; with
    `columns`, those columns in that order even when there is no record."""
    keys = list(columns or [])
    for r in records:
        keys.extend(k for k in r if k not in keys)
    return frame({k: [r.get(k) for r in records] for k in keys}, polars=polars)
