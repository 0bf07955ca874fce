"""An independent review's tests (2026-11-27) of 3135c66..441e25f; found by review, each fails
on 441e25f:

* a Parquet file whose identity column is all missing (Arrow type ``null``, what pandas
  writes for an object column of None) beside files where it is numeric: refused by the new
  footer check of identity column types, where 3135c66 and memory evaluate it;
* the streamed CLI with a CSV of True/False labels and ``--positive true`` (lowercase):
  refused ("does not occur"), where the in-memory report takes it (as it matches booleans
  case-insensitively); with ``--positive True`` the streamed report's settings say
  pos_label "True" (text) where memory's say true (a boolean);
* ``fastbias.dask.evaluate(compute=False)`` with ``divisions`` and no weights nor
  ``pos_label``: the docstring said no pass runs now, but the new kinds pass over object
  identity columns ran eagerly (now part of the first pass, and said).

(The review also measured text labels with ``pos_label`` 2.3x slower at 2M rows, a Python
loop over every row; recorded in benchmarks/RESULTS.md, no timed test here.)
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.streaming import evaluate_parquet

from .test_pos_label_reference import SUBGROUPS, _memory_then_streamed


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def test_parquet_file_with_an_all_null_identity_column_is_evaluated(tmp_path):
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"y": rng.random(200) < .5, "s": rng.random(200),
                      "g": (rng.random(200) < .3).astype(float), "h": rng.random(200) < .4})
    b = pd.DataFrame({"y": rng.random(200) < .5, "s": rng.random(200),
                      "g": [None] * 200, "h": rng.random(200) < .4})
    a.to_parquet(tmp_path / "a.parquet")
    b.to_parquet(tmp_path / "b.parquet")  # g: Arrow type null
    kw = dict(label="y", scores="s", subgroups=["g", "h"], missing_subgroup="exclude")
    expected = _quiet(fastbias.evaluate, pd.concat([a, b], ignore_index=True), **kw)
    result = _quiet(evaluate_parquet, [tmp_path / "a.parquet", tmp_path / "b.parquet"], **kw)
    pd.testing.assert_series_equal(result.table["subgroup_auc"],
                                   expected.table["subgroup_auc"], check_exact=True)


@pytest.mark.jit_heavy  # (the CLI streaming: its kernels run compiled; too slow as Python)
@pytest.mark.parametrize("positive", ["true", "True"])
def test_cli_streamed_csv_boolean_labels_positive_as_in_memory(
        tmp_path, capsys, monkeypatch, positive):
    rng = np.random.default_rng(0)
    n = 40_000
    df = pd.DataFrame({"y": rng.random(n) < .35, "s": np.round(rng.random(n), 1),
                       "t": rng.random(n)})
    for name in SUBGROUPS:
        df[name] = (rng.random(n) < .3).astype(float)
    df.to_csv(tmp_path / "d.csv", index=False)  # labels written True/False
    (m_status, m_err, memory), (s_status, s_err, streamed) = _memory_then_streamed(
        tmp_path / "d.csv", tmp_path, capsys, monkeypatch, "--positive", positive)
    assert m_status == 0, m_err
    assert s_status == 0, s_err  # "true": "--positive 'true' does not occur"
    assert streamed["n_positives"] == memory["n_positives"]
    # "True": the label is read as text, so the streamed report states pos_label 'True'
    # (a string) where the in-memory one states true (a boolean)
    assert streamed["settings"]["pos_label"] == memory["settings"]["pos_label"]
    assert type(streamed["settings"]["pos_label"]) is type(memory["settings"]["pos_label"])


@pytest.mark.parametrize("dtype, passes", [(bool, 0), (object, 1)])
def test_dask_compute_false_with_divisions_runs_what_the_docs_say_now(dtype, passes):
    """With divisions, no weights and no pos_label, compute=False ran a pass over an object
    identity column's partitions (their kinds) before returning, which the docstring did not
    say. That check is now part of the first pass, which the docstring says runs now for such
    columns; a typed column needs none (it is compared with the meta as it is encoded)."""
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    import fastbias.dask as fd

    rng = np.random.default_rng(0)
    n = 2000
    df = pd.DataFrame({"y": rng.random(n) < .4, "s": rng.random(n),
                       "g": pd.Series(rng.random(n) < .3, dtype=dtype)})
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(df, npartitions=4)
        assert ddf.dtypes["g"] == dtype
        calls = []
        original = fd._compute

        def counting(*args, **kwargs):
            calls.append(1)
            return original(*args, **kwargs)

        fd._compute = counting
        try:
            delayed = fd.evaluate(ddf, label="y", scores="s", subgroups=["g"],
                                  divisions=[0.0, 0.5, 1.0], compute=False)
        finally:
            fd._compute = original
    assert len(calls) == passes
    assert "object or categorical label or identity columns" in " ".join(
        fd.evaluate.__doc__.split())
    expected = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"])
    pd.testing.assert_frame_equal(delayed.compute().table, expected.table, check_exact=True)
