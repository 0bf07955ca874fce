"""The CSV guard, the threshold intervals and the overall interval under exclude out of core
(an independent review's tests of 4b6e231, 88dad2e and 1aaaf4f)."""
import io

import numpy as np
import pandas as pd
import pytest

from fastbias.intervals.thresholds import exact_interval, wilson_interval
from fastbias.validate.textfile import DataFileError, open_text


def _guard(tmp_path, data: bytes, fields: int, sep: str = ",", limit: int = 10 ** 6):
    path = tmp_path / "g.csv"
    path.write_bytes(data)
    with open_text(str(path), line_limit=limit, quotes=True, sep=sep, fields=fields) as s:
        while s.read(5):
            pass


# ---- 88dad2e: exact interval where one beta parameter is huge (betaincinv path) ----
@pytest.mark.parametrize("k,n", [(1e3, 1e20), (1e3, 1e50), (1.0, 1e200), (5.0, 1e300),
                                 (1e6, 1e300), (1e9, 1e300)])
def test_exact_interval_one_huge_parameter_holds_estimate(k, n):
    # reference (mpmath bisection / Cornish-Fisher): a finite interval around k/n
    lo, hi = exact_interval(np.array([k]), np.array([n]), 0.95)
    assert np.isfinite(lo[0]) and np.isfinite(hi[0])
    assert lo[0] <= k / n <= hi[0]


def test_exact_interval_nan_successes_is_nan():
    lo, hi = exact_interval(np.array([np.nan]), np.array([10.0]), 0.95)
    wl, wh = wilson_interval(np.array([np.nan]), np.array([10.0]), 0.95)
    assert np.isnan(wl[0]) and np.isnan(wh[0])  # passes
    assert np.isnan(lo[0]) and np.isnan(hi[0])  # fails: (0, 1)


def test_exact_interval_pinned_large_both():  # passes: within 1e-9 half-width of CF ref
    lo, hi = exact_interval(np.array([1e8]), np.array([1e15]), 0.95)
    assert lo[0] == pytest.approx(9.998040130830443e-08, rel=1e-12)
    assert hi[0] == pytest.approx(1.0001960158609888e-07, rel=1e-12)


def test_wilson_fractional_and_tiny_totals():  # passes
    lo, hi = wilson_interval(np.array([0.3, 1e-310]), np.array([0.5, 2e-310]), 0.95)
    assert np.all(np.isfinite(lo)) and np.all(lo <= [0.6, 0.5]) and np.all(hi >= [0.6, 0.5])


# ---- 4b6e231: CSV guard vs pandas' C parser ----
def test_lone_cr_blank_line_then_separator_led_record(tmp_path):
    # pandas' EAT_CRNL_NOP swallows the separator: ",3" is read as ["3", NaN] (wrong column)
    data = b"a,b\n1,2\r\r,3\r4,5\r"
    assert pd.read_csv(io.BytesIO(data), dtype=str).values.tolist()[1][0] == "3"
    with pytest.raises(DataFileError):
        _guard(tmp_path, data, 2)


def test_form_feed_line_is_not_blank_to_pandas(tmp_path):
    data = b"a,b\n1,2\n\x0c\n3,4\n"
    assert len(pd.read_csv(io.BytesIO(data), dtype=str)) == 3  # a row with a field missing
    with pytest.raises(DataFileError):
        _guard(tmp_path, data, 2)


def test_bom_then_quoted_header_field_with_separator(tmp_path):
    data = b'\xef\xbb\xbf"a,x",b\n1,2\n'
    assert list(pd.read_csv(io.BytesIO(data)).columns) == ["a,x", "b"]
    _guard(tmp_path, data, 2)  # refused: "line 1 ... has 3 field(s)"


@pytest.mark.parametrize("limit", [6, 10 ** 6])
@pytest.mark.parametrize("data", [b'a,b\n1,2\n"",\n', b'a,b\n1,2\n   \n3,4\n', b'a,b\n1,2\n,\n',
                                  b'a,b\n"1\r\n",2\r\n', b'a,b\n1,"2"\r\n3,4'])
def test_guard_accepts_pandas_valid(tmp_path, data, limit):  # passes (limit 6: CRLF quoted
    _guard(tmp_path, data, 2, limit=limit if b"\r" not in data else 10 ** 6)


def test_guard_refuses_short_and_long(tmp_path):  # passes
    with pytest.raises(DataFileError, match="line 3"):
        _guard(tmp_path, b"a,b\n1,2\n3\n", 2, limit=6)
    with pytest.raises(DataFileError, match="line 2"):
        _guard(tmp_path, b'a,b\n"1,2",3,4\n', 2)


# ---- 1aaaf4f: overall AUC's DeLong interval out of core under exclude (passes) ----
def _own_delong(y, s, w):
    pos, neg, wp, wn = s[y == 1], s[y == 0], w[y == 1], w[y == 0]
    cmp = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    Wp, Wn = wp.sum(), wn.sum()
    auc = wp @ cmp @ wn / (Wp * Wn)
    v10, v01 = cmp @ wn / Wn, wp @ cmp / Wp
    return np.sqrt(wp @ (v10 - auc) ** 2 / (Wp * (Wp - 1)) + wn @ (v01 - auc) ** 2 / (Wn * (Wn - 1)))


@pytest.mark.parametrize("weighted", [False, True])
def test_exclude_delong_overall_out_of_core(tmp_path, weighted):
    from fastbias.streaming import evaluate_csv
    rng = np.random.default_rng(3)
    n = 200
    df = pd.DataFrame({"y": rng.integers(0, 2, n).astype(float), "s": np.round(rng.random(n), 1),
                       "g": rng.choice([0.0, 1.0, np.nan], n),
                       "w": np.where(rng.random(n) < 0.2, 0.0, rng.exponential(1, n))})
    df.loc[:3, "w"] = 500.0
    df.to_csv(tmp_path / "d.csv", index=False)
    kw = dict(label="y", scores=["s"], subgroups=["g"], ci="delong",
              missing_subgroup="exclude", sample_weight="w" if weighted else None)
    se = _own_delong(df.y.values, df.s.values, df.w.values if weighted else np.ones(n))
    for r in (evaluate_csv(str(tmp_path / "d.csv"), bucket_rows=17, **kw),
              __import__("fastbias").evaluate(df, **kw)):
        assert r.model_attrs["s"]["overall_auc_se"] == pytest.approx(se, rel=1e-9)
