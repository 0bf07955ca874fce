"""One data set through every entry point that reads it: in memory, then out of core.

The out-of-core paths (``evaluate_parquet``, ``evaluate_csv``, ``fastbias.dask.evaluate``)
must give what ``fastbias.evaluate`` gives on the same rows; the tests that check so for a
feature (thresholds, sensitive features, significance) share this one runner.
"""
from __future__ import annotations

import warnings

import pytest

import fastbias
from fastbias.validate.errors import UndefinedMetricWarning


def evaluate_on_every_path(tmp_path, df, *, bucket_rows: int, npartitions: int, csv: bool = True,
                           row_group_size: int | None = None, **kw) -> tuple:
    """``(evaluate(df, **kw), [the same by evaluate_parquet, evaluate_csv (unless not
    csv), fastbias.dask.evaluate of a 3-partition Dask DataFrame (synchronous)]``), with
    UndefinedMetricWarning silenced; skips without pyarrow or dask."""
    pytest.importorskip("pyarrow")
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    on_dask = pytest.importorskip("fastbias.dask")
    df.to_parquet(tmp_path / "d.parquet", row_group_size=row_group_size)
    if csv:
        df.to_csv(tmp_path / "d.csv", index=False)
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        ref = fastbias.evaluate(df, **kw)
        got = [fastbias.evaluate_parquet(tmp_path / "d.parquet", bucket_rows=bucket_rows, **kw)]
        if csv:
            got.append(fastbias.evaluate_csv(tmp_path / "d.csv", bucket_rows=bucket_rows, **kw))
        got.append(on_dask.evaluate(dd.from_pandas(df, npartitions=3), npartitions=npartitions,
                                    **kw))
    return ref, got
