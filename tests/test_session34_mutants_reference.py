"""An independent review's tests (2026-11-27): a mutation audit of the thirty-fourth
session's library changes (906a38f..HEAD, 67 mutants, 37 killed by the suite before, 7
equivalent): each test kills a user-visible survivor (named in its docstring); no defect was
found. Expected values from independent references (Fractions, hand computation), never from
fastbias itself."""
import warnings

import numpy as np
import pytest

import fastbias
from tests.test_delong_guards_reference import (
    G12,
    S12,
    Y12,
    _w12,
    assert_contract,
    exact_se,
    fb_se,
)


@pytest.mark.parametrize("T,eps", [(1e4, 3e-12), (1e9, 1e-7)])
def test_background_negatives_just_over_one_in_a_heavy_class(T, eps):
    """The mirror of test_background_weighing_just_over_one_in_a_heavy_class: labels flipped
    and scores mirrored, so the background NEGATIVES weigh 1 + eps beside a subgroup negative
    class of weight ~T (the Y sample of BNSP and negative AEG). Contract: within 1% of the
    exact (Fraction) DeLong standard error, or NaN. Kills mutant m18 (delong.py
    ``_delong_variance``: ``scale_y`` = ``wy``, the ``scales[1]`` of a background ignored),
    which gives finite standard errors several % off."""
    y, s = 1 - Y12, 1.0 - S12
    w = _w12(T, eps)
    got = fb_se(y, s, G12, w)
    for m in ("bnsp_auc", "negative_aeg"):
        ex = exact_se(y, s, G12, w, m)
        assert_contract(got[m], ex, m)


def _omitted_weight_result():
    import pandas as pd
    df = pd.DataFrame({"y": [0, 1, 0, 1, 0, 1, 0, 1, 1, 0],
                       "s": [.1, .9, .2, .8, .3, .7, .4, .6, .55, .45],
                       "g": [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]})
    w = np.ones(10)
    w[0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                   sample_weight=w, nan_policy="omit")
    return df, result


def test_histograms_name_a_different_count_of_missing_weights():
    """The result left out 1 row of missing weight; weights missing on 2 rows are refused
    saying the counts (2 of 10 rows against 1), not "as many as the result left out" (false
    here). Kills mutant m27 (histograms.py: the count comparison dropped, so the digest check
    answers with its "as many as" wording)."""
    from fastbias.report import score_histograms
    df, result = _omitted_weight_result()
    w = np.ones(10)
    w[[0, 9]] = np.nan
    with pytest.raises(ValueError) as info:
        score_histograms(df, result, bins=4, sample_weight=w)
    text = str(info.value)
    assert "2 missing value(s) in 10 rows" in text and "left out 1 row(s)" in text, text
    assert "as many as" not in text, text


@pytest.mark.parametrize("name", ["sigma2", "max_cost", "gamma"])
def test_bernstein_parameters_refuse_a_one_element_list(name):
    """sigma2/max_cost/gamma are one number each: [0.25] (a list of one) is a TypeError naming
    the argument, not silently taken as 0.25 (numpy's float() of a size-1 array). Kills mutant
    m12 (bernstein.py ``_bernstein_parameters``: ``np.ndim(value) != 0`` -> ``> 1``)."""
    kwargs = {"sigma2": 0.25, "max_cost": 1.0, "gamma": 0.5}
    kwargs[name] = [kwargs[name]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=rf"{name} must be one number"):
            fastbias.bernstein_halfwidth(100, **kwargs)


def _threshold_report(confidence):
    import pandas as pd

    from fastbias.reports.report import BiasReport
    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                       "g": rng.integers(0, 2, n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                   thresholds=[0.5], threshold_interval="wilson",
                                   gap_interval="bernstein", confidence=confidence)
        return BiasReport.from_result(df, result)


def test_report_states_threshold_intervals_level():
    """confidence=0.8: the report's settings say the threshold intervals are 80% ones, and the
    gap figure's caption says "80% Bernstein intervals" (hand-written strings); neither says
    95%. Kills mutants m28 (report.py settings item: ``percent_text(0.95)``) and m29 (the gap
    figure's caption: ``percent_text(0.95)``)."""
    html = _threshold_report(0.8).to_html()
    assert "bernstein; 80%)" in html, "settings line lacks the level"
    assert "bars: 80% Bernstein intervals" in html
    assert "bars: 95% Bernstein intervals" not in html


def _fake_files(monkeypatch, files):
    """fastbias.cli's open() reads these texts (path -> text); other paths: FileNotFoundError."""
    import io

    import fastbias.cli as cli

    def fake_open(path, *args, **kwargs):
        if str(path) in files:
            return io.StringIO(files[str(path)])
        raise FileNotFoundError(path)
    monkeypatch.setattr(cli, "open", fake_open, raising=False)


def test_cgroup_headroom_is_limit_less_usage(monkeypatch):
    """cgroup v2: memory.max 8 GiB, memory.current 3 GiB -> 5 GiB of headroom (by hand); v1 alike;
    "max" is no limit. Kills mutant m38 (``int(text) - used`` -> ``int(text)``)."""
    import fastbias.cli as cli
    g = 2 ** 30
    _fake_files(monkeypatch, {"/proc/self/cgroup": "0::/user.slice/job\n",
                              "/sys/fs/cgroup/user.slice/job/memory.max": f"{8 * g}\n",
                              "/sys/fs/cgroup/user.slice/job/memory.current": f"{3 * g}\n"})
    assert cli._cgroup_headroom() == 5 * g
    _fake_files(monkeypatch, {"/proc/self/cgroup": "4:memory:/job\n3:cpu:/x\n",
                              "/sys/fs/cgroup/memory/job/memory.limit_in_bytes": f"{2 * g}",
                              "/sys/fs/cgroup/memory/job/memory.usage_in_bytes": f"{g // 2}"})
    assert cli._cgroup_headroom() == 2 * g - g // 2
    _fake_files(monkeypatch, {"/proc/self/cgroup": "0::/\n",
                              "/sys/fs/cgroup/memory.max": "max\n",
                              "/sys/fs/cgroup/memory.current": "123\n"})
    assert cli._cgroup_headroom() is None


def test_process_headroom_is_the_tightest_limit(monkeypatch):
    """An address-space rlimit of 6 GiB with 2 GiB mapped (4 GiB left) and a cgroup with 1 GiB
    left: the headroom is 1 GiB, the smaller (and 4 GiB when the cgroup leaves 9). Kills mutant
    m36 (``min(found)`` -> ``max(found)``)."""
    import resource

    import fastbias.cli as cli
    g = 2 ** 30
    monkeypatch.setattr(resource, "getrlimit",
                        lambda which: (6 * g, resource.RLIM_INFINITY)
                        if which == resource.RLIMIT_AS else (resource.RLIM_INFINITY,) * 2)
    monkeypatch.setattr(cli, "_address_space", lambda: 2 * g)
    monkeypatch.setattr(cli, "_cgroup_headroom", lambda: 1 * g)
    assert cli._process_headroom() == 1 * g
    monkeypatch.setattr(cli, "_cgroup_headroom", lambda: 9 * g)
    assert cli._process_headroom() == 4 * g


def test_memory_limit_respects_process_headroom(monkeypatch):
    """No --max-memory, 16 GiB available (share 0.5: 8 GiB), but only 1 GiB of headroom under
    the process's own limits with 256 MiB resident: the limit is 256 MiB + 0.5 GiB (by hand),
    not 8 GiB. Kills mutant m37 (the headroom's ``min`` dropped)."""
    import types

    import fastbias.cli as cli
    g = 2 ** 30
    monkeypatch.setattr(cli, "_available_memory", lambda: 16 * g)
    monkeypatch.setattr(cli, "_process_headroom", lambda: 1 * g)
    monkeypatch.setattr(cli, "_resident_memory", lambda: 256 * 2 ** 20)
    args = types.SimpleNamespace(max_memory=None)
    assert cli._memory_limit(args) == 256 * 2 ** 20 + g // 2
    monkeypatch.setattr(cli, "_process_headroom", lambda: None)
    assert cli._memory_limit(args) == 8 * g


def _jsonl_with_raw_tabs(tmp_path, scores):
    ys = [False, True, False, True, False, True]
    lines = ['{"y": %s, "s": %s, "g": %s, "note": "a\tb"}' % (
        "true" if y else "false", t, "true" if i % 2 == 0 else "false")
        for i, (t, y) in enumerate(zip(scores, ys))]
    path = tmp_path / "tabs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_integer_beyond_uint64_named_on_a_line_with_a_raw_tab(tmp_path, capsys):
    """As test_integer_beyond_uint64_is_named, every line also holding a raw tab inside a
    string (which pandas reads): the error names column 's' and the integer. Kills mutant m45
    (textfile.py ``_refuse_unreadable_json`` without ``strict=False``: the line does not parse
    there, and pandas' "Value is too big!" is all the user gets)."""
    from fastbias.cli import main
    big = 2 ** 64 + 2
    path = _jsonl_with_raw_tabs(tmp_path, ["0.1", "0.2", "0.3", str(big), "0.5", "0.6"])
    status = main(["report", path, "--label", "y", "--scores", "s", "--subgroups", "g", "-q"])
    err = capsys.readouterr().err
    assert status == 1
    assert "'s'" in err and str(big) in err, err


def test_big_integers_refused_as_such_on_lines_with_raw_tabs(tmp_path, capsys):
    """2**53 + 1 beside 2**53 (they would tie as floats) on lines holding a raw tab: refused as
    "float64 cannot hold exactly", not as a line that cannot be read again. Kills mutant m46
    (textfile.py ``_WrittenIntegers`` without ``strict=False``)."""
    from fastbias.cli import main
    path = _jsonl_with_raw_tabs(tmp_path, [str(2 ** 53 + 1), str(2 ** 53), str(2 ** 53 + 3),
                                           str(2 ** 53 + 2), "1", "2"])
    status = main(["report", path, "--label", "y", "--scores", "s", "--subgroups", "g", "-q"])
    err = capsys.readouterr().err
    assert status == 1
    assert "float64 cannot hold exactly" in err and "'s'" in err, err


def test_signalling_nan_decimal_threshold_named():
    """label_threshold=Decimal('sNaN') is a ValueError naming label_threshold (not Python's
    "cannot convert signaling NaN to float"). Kills mutant m49 (settings.py
    ``check_threshold``: the is_snan() check dropped)."""
    from decimal import Decimal
    y = np.array([0, 1, 0, 1])
    s = np.array([.1, .9, .2, .8])
    with pytest.raises(ValueError, match="label_threshold must be finite"):
        fastbias.bias_metrics(y, s, {"g": np.array([1, 1, 0, 0], bool)},
                              label_threshold=Decimal("sNaN"))


def test_decimal_threshold_taken_as_its_number():
    """label_threshold=Decimal('0.5') is the number 0.5 (labels 0.3 -> 0, 0.7 -> 1): the
    subgroup AUC (negative .2 vs positive .6) is 1 and the overall AUC (positives {.6, .1}
    vs negatives {.2, .9}: only .6 > .2 of 4 pairs) 0.25, by hand. Kills mutant m50
    (settings.py: Decimal no longer a number, a TypeError)."""
    from decimal import Decimal
    y = np.array([0.3, 0.7, 0.7, 0.3])
    s = np.array([.2, .6, .1, .9])
    t = fastbias.bias_metrics(y, s, {"g": np.array([1, 1, 0, 0], bool)},
                              label_threshold=Decimal("0.5"))
    assert float(t.iloc[0]["subgroup_auc"]) == 1.0
    assert float(t.attrs["overall_auc"]) == 0.25


def test_subgroup_key_first_seen_on_later_lines_with_raw_tabs(tmp_path, capsys):
    """The subgroup key 'g' is absent from the first line and every later line holds a raw
    tab inside a string (read by pandas): 'g' is found (exit 0; its rows, missing on line 1,
    count as background by default), and the subgroup AUC is that of lines 2-6's subgroup
    rows: negatives {.2, .4}, positive {.9} -> 1 (by hand). Kills mutant m48 (textfile.py
    ``_later_json_keys`` without ``strict=False``: the later lines skipped, 'g' unknown)."""

    from fastbias.cli import main
    lines = ['{"y": 1, "s": 0.5, "note": "a\tb"}']
    for y, s, g in [(0, .2, 1), (1, .9, 1), (0, .4, 1), (1, .3, 0), (0, .6, 0)]:
        lines.append('{"y": %d, "s": %s, "g": %s, "note": "c\td"}' % (y, s, "true" if g else "false"))
    path = tmp_path / "later.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.json"
    status = main(["report", str(path), "--label", "y", "--scores", "s", "--subgroups", "g",
                   "--out", str(out), "-q"])
    assert status == 0, capsys.readouterr().err
    assert out.exists()
    text = out.read_text()
    assert '"subgroup_auc": 1.0' in text or '"subgroup_auc":1.0' in text, text[:2000]


def test_line_of_an_object_and_an_array_refused_with_a_raw_tab(tmp_path, capsys):
    """A line '{..., "note": "a<TAB>b"}, []' (an object then an array, which pandas would read
    as a row of missing values) is refused naming line 3, as it is without the tab. Kills
    mutant m47 (textfile.py ``_objects_only`` without ``strict=False``: the line does not
    parse there, so it passes as objects only)."""
    from fastbias.cli import main
    lines = ['{"y": 0, "s": 0.1, "g": true, "note": "a\tb"}',
             '{"y": 1, "s": 0.9, "g": true, "note": "a\tb"}',
             '{"y": 0, "s": 0.4, "g": false, "note": "a\tb"}, []',
             '{"y": 1, "s": 0.6, "g": false, "note": "a\tb"}']
    path = tmp_path / "arr.jsonl"
    path.write_text("\n".join(lines) + "\n")
    status = main(["report", str(path), "--label", "y", "--scores", "s", "--subgroups", "g",
                   "-q"])
    err = capsys.readouterr().err
    assert status == 1
    assert "line 3" in err and "is not a JSON object" in err, err


def test_in_cli_terms_error_is_one_line_and_warning_keeps_lines():
    """An error's message is said on one line (white space collapsed), Python words outside
    quotes as options, quoted names kept; a warning's (bare_words=False) keeps its lines and
    bare words, only keyword forms becoming options. Expected strings written by hand. Kills
    mutant m55 (``" ".join(...split())`` dropped)."""
    from fastbias.cli import _in_cli_terms
    msg = "bad sample_weight\n  in column 'sample_weight';\tpass nan_policy='omit'"
    assert _in_cli_terms(msg) == ("bad --weight in column 'sample_weight'; pass "
                                  "--nan-policy omit")
    assert _in_cli_terms(msg, bare_words=False) == (
        "bad sample_weight\n  in column 'sample_weight';\tpass --nan-policy omit")


def test_cost_threshold_of_text_is_a_type_error_nan_a_value_error():
    """threshold='0.5' (text) is a TypeError, threshold=NaN a ValueError, each naming
    threshold. Kills mutant m58 (bernstein.py ``_predictions`` re-raising every refusal as
    ValueError)."""
    s, g = np.array([0.2, 0.7, 0.4, 0.9]), np.array([1, 1, -1, -1])
    with pytest.raises(TypeError, match="threshold must be a number"):
        fastbias.demographic_parity_cost(s, g, threshold="0.5")
    with pytest.raises(ValueError, match="threshold must be a number"):
        fastbias.demographic_parity_cost(s, g, threshold=float("nan"))


def test_histograms_refuse_weights_of_another_length():
    """The result (10 rows) left out row 0 of missing weight; weights of 11 rows missing at
    row 0 (the same count) are refused naming the 11 rows, not said to be "as many ... on
    other rows". Kills mutant m60 (histograms.py: the shape comparison dropped)."""
    from fastbias.report import score_histograms
    df, result = _omitted_weight_result()
    w = np.ones(11)
    w[0] = np.nan
    with pytest.raises(ValueError) as info:
        score_histograms(df, result, bins=4, sample_weight=w)
    text = str(info.value)
    assert "1 missing value(s) in 11 rows" in text, text


def test_dask_numbers_as_text_example_is_the_first_partitions():
    """A Dask score column of numbers written as text only, in two partitions: the example
    named is the first one met, '0.1' at position 0 of partition 0 (as in memory, the first
    row). Kills mutant m61 (dask.py ``_example_of`` keeping the last partition's example)."""
    dask = pytest.importorskip("dask")
    import dask.dataframe as dd
    import pandas as pd

    import fastbias.dask as fd
    s = ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8"]
    df = pd.DataFrame({"y": [0, 1] * 4, "s": pd.Series(s, dtype=object),
                       "g": [1, 0, 1, 0, 0, 1, 1, 0]})
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(TypeError) as info:
            fd.evaluate(dd.from_pandas(df, npartitions=2, sort=False), label="y",
                        scores="s", subgroups=["g"])
    text = str(info.value)
    assert "'0.1'" in text and "Dask partition 0" in text, text


def test_bernstein_halfwidth_refuses_a_list_of_booleans():
    """n=[True, True] (booleans, not counts) is a TypeError, as n=True is. Kills mutant m64
    (bernstein.py ``_check_positive``: dtype kind 'b' no longer refused, [True, True] read as
    n = [1, 1])."""
    with pytest.raises(TypeError, match="n must be a number"):
        fastbias.bernstein_halfwidth([True, True], sigma2=0.25, gamma=0.5)


def test_boosting_metric_pickles_after_a_set_was_displaced():
    """Training continued on a fresh DMatrix of the same validation rows displaces the first
    one (kept alive); the metric must still pickle (its weak references are not state), and
    its copy start unbound. Kills mutant m62 (boosting.py ``__getstate__`` keeping
    ``_displaced``: "cannot pickle 'weakref' object")."""
    import pickle
    xgb = pytest.importorskip("xgboost")
    from fastbias.boosting import xgboost_metric
    rng = np.random.default_rng(0)
    xtr = rng.normal(size=(300, 3))
    ytr = (xtr[:, 0] + rng.normal(size=300) > 0).astype(float)
    xv = rng.normal(size=(150, 3))
    yv = (xv[:, 0] + rng.normal(size=150) > 0).astype(float)
    metric = xgboost_metric(fastbias.BiasEvaluator(yv, {"g": xv[:, 1] > 0}),
                            metrics=["min_bpsn_auc"])
    dtrain, dvalid = xgb.DMatrix(xtr, ytr), xgb.DMatrix(xv, yv)
    params = {"objective": "binary:logistic"}
    first = xgb.train(params, dtrain, 2, evals=[(dvalid, "v")], custom_metric=metric,
                      verbose_eval=False)
    dvalid_again = xgb.DMatrix(xv, yv)
    xgb.train(params, dtrain, 1, evals=[(dvalid_again, "v")], custom_metric=metric,
              xgb_model=first, verbose_eval=False)
    copy = pickle.loads(pickle.dumps(metric))
    assert copy._displaced == {} and copy._bound == {}
    del dvalid


def test_bootstrap_memory_bound_with_no_subgroups_counts_one():
    """With no subgroups a replicate still keeps one row of counts (the overall's): 1,500 +
    7 columns x 8 bytes x 3 = 1,668 bytes, so 2**31 // 1,668 = 1,287,460 replicates fit and
    one more is refused (hand arithmetic on the documented bound). Kills mutant m65
    (bootstrap.py ``replicate_bytes``: ``max(n_groups, 1)`` -> ``n_groups``)."""
    from fastbias.intervals.bootstrap import check_bootstrap_memory
    check_bootstrap_memory(1_287_460, 0)
    with pytest.raises(ValueError, match="n_boot"):
        check_bootstrap_memory(1_287_461, 0)


def test_address_space_reads_vmsize_in_kib(monkeypatch):
    """/proc/self/status's "VmSize:  2048 kB" is 2048 * 1024 bytes; none there is 0. Kills
    mutant m56 (``_address_space``: ``* 1024`` -> ``* 1000``)."""
    import fastbias.cli as cli
    _fake_files(monkeypatch, {"/proc/self/status": "Name:\tpython\nVmPeak:\t 9999 kB\n"
                                                   "VmSize:\t    2048 kB\n"})
    assert cli._address_space() == 2048 * 1024
    _fake_files(monkeypatch, {})
    assert cli._address_space() == 0
