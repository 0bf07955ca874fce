"""The synthetic generators, the demo and the aggregates: an independent review's tests
(2026-11-27) of their documented claims, against independent computations (exact pair counts
with fractions.Fraction, numpy).

Found by review (the tests before "held"; each fails before its fix): make_jigsaw_like took a
toxic_fraction outside (0, 1) (no toxic row), a non-finite bias_shift (NaN scores of both
models), an identity_fraction_range the annotated rows cannot hold (shares below it), a
string of biased identities (read letter by letter) and a fractional n_rows without naming
them; the demo's --seed help said it seeded the bootstrap only.
"""
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from fastbias.synthetic import (
    JIGSAW_IDENTITIES,
    MADLIBS_METRIC_GROUPS,
    make_jigsaw_like,
    make_madlibs_like,
)

# ---------------------------------------------------------------- independent references

def _u(a, b):
    """Exact P(b > a) + 1/2 P(b == a) over all pairs, as a Fraction."""
    a = np.sort(np.asarray(a, dtype=np.float64))
    b = np.asarray(b, dtype=np.float64)
    lt = np.searchsorted(a, b, "left")
    le = np.searchsorted(a, b, "right")
    return Fraction(int((2 * lt + (le - lt)).sum()), 2 * len(a) * len(b))


def _metrics(y, s, g):
    dgm, dgp, dm, dp = s[g & ~y], s[g & y], s[~g & ~y], s[~g & y]
    return {"subgroup_auc": _u(dgm, dgp), "bpsn_auc": _u(dgm, dp), "bnsp_auc": _u(dm, dgp),
            "negative_aeg": Fraction(1, 2) - _u(dgm, dm),
            "positive_aeg": Fraction(1, 2) - _u(dgp, dp)}


def _power_mean(values, p=-5):
    values = np.asarray(values, dtype=np.float64)
    return float(np.mean(values ** p) ** (1.0 / p))


def _bernstein_t(n, sigma2, c, gamma, rho=0.95):
    ln = math.log(2 / (1 - rho))
    b = 2 * c * ln / (3 * gamma)
    return (b + math.sqrt(b * b + 8 * n * sigma2 * ln)) / (2 * n)


# ---------------------------------------------------------------- make_jigsaw_like: defects

@pytest.mark.parametrize("value", [1.5, -0.1, 1.0])
def test_jigsaw_toxic_fraction_outside_0_1_is_refused_by_name(value):
    # toxic_fraction is documented as a share ("approximate share of toxic rows"), but
    # it is not validated: 1.5 or -0.1 silently give a data set with NO toxic row at all
    # (log of a negative number -> NaN logits -> `random < NaN` is False), announced only by
    # numpy's "invalid value encountered in log"; 1.0 is a bare ZeroDivisionError.
    # Right: a ValueError naming toxic_fraction, like annotated_fraction's check
    # (fastbias/synthetic.py, make_jigsaw_like: base_logit = np.log(tf / (1 - tf))).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="toxic_fraction"):
            make_jigsaw_like(n_rows=2_000, n_identities=2, toxic_fraction=value)


@pytest.mark.parametrize("shift", [np.inf, np.nan])
def test_jigsaw_bias_shift_never_corrupts_the_fair_model(shift):
    # bias_shift is "the logit shift of model_biased", yet bias_shift=inf or NaN makes
    # every score of model_fair NaN (0.0 * inf/NaN = NaN in `shift * bias`, and in
    # `bias_shift * member` for non-members), silently apart from numpy RuntimeWarnings.
    # Right: refuse a non-finite bias_shift with a ValueError naming it (or at least keep
    # model_fair finite and independent of bias_shift).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            df = make_jigsaw_like(n_rows=2_000, n_identities=4, bias_shift=shift)
        except ValueError as exc:
            assert "bias_shift" in str(exc)
            return
    assert np.isfinite(df["model_fair"].to_numpy()).all()
    assert np.isfinite(df["model_biased"].to_numpy()).all()


def test_jigsaw_identity_shares_lie_in_the_documented_range():
    # "Each identity covers a log-uniform share of all rows in this range"
    # (identity_fraction_range). With annotated_fraction=0.01 and the range (0.02, 0.03),
    # member_rate = share / annotated_fraction is capped at 1 and every identity covers
    # ~0.0099 of the rows: below the documented range, silently. Right: a ValueError naming
    # identity_fraction_range/annotated_fraction when the range cannot be met (upper end above
    # annotated_fraction), or shares in the range.
    try:
        df = make_jigsaw_like(n_rows=100_000, n_identities=4, annotated_fraction=0.01,
                              identity_fraction_range=(0.02, 0.03))
    except ValueError as exc:
        assert "identity_fraction_range" in str(exc) or "annotated_fraction" in str(exc)
        return
    shares = (df[JIGSAW_IDENTITIES[:4]] >= 0.5).mean()
    # 100k rows: binomial sd of a 2% share is 0.00044; allow a wide margin
    assert (shares > 0.02 - 0.003).all(), shares.to_dict()


@pytest.mark.parametrize("bad", [(0.0, 0.03), (0.5, 0.03), (-0.5, 0.03), (0.01, 2.0)])
def test_jigsaw_identity_fraction_range_is_validated_by_name(bad):
    # (0.0, 0.03) and (-0.5, 0.03) give numpy's "OverflowError: high - low range exceeds
    # valid bounds", (0.5, 0.03) "ValueError: high - low < 0" (no argument named), and
    # (0.01, 2.0) is accepted although a share above 1 is impossible. Right: a ValueError
    # naming identity_fraction_range and the bad value.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="identity_fraction_range"):
            make_jigsaw_like(n_rows=1_000, n_identities=2, identity_fraction_range=bad)


def test_jigsaw_biased_identities_as_a_string_is_reported_clearly():
    # biased_identities="male" (documented: list of str) is iterated by character and
    # the error says "biased_identities ['a', 'e', 'l', 'm'] are not among the identity
    # columns": it names letters the user never wrote. Right: accept a single name as
    # ["male"], or raise a TypeError saying a list of names is expected.
    try:
        df = make_jigsaw_like(n_rows=2_000, n_identities=2, biased_identities="male")
    except TypeError as exc:
        assert "biased_identities" in str(exc)
        return
    except ValueError as exc:
        assert "['a', 'e', 'l', 'm']" not in str(exc), str(exc)
        return
    assert list(df.columns[:3]) == ["toxicity", "male", "female"]


@pytest.mark.parametrize("n_rows", [1000.5, True])
def test_jigsaw_n_rows_type_error_names_the_argument(n_rows):
    # a non-integer n_rows gives numpy's "expected a sequence of integers or a single
    # integer, got '1000.5'" (no argument named); make_madlibs_like names n_rows for the same
    # input. Right: an error naming n_rows.
    with pytest.raises((TypeError, ValueError), match="n_rows"):
        make_jigsaw_like(n_rows=n_rows, n_identities=2)


# ---------------------------------------------------------------- make_jigsaw_like: held

def test_jigsaw_layout_dtypes_rates_and_reproducibility():
    df = make_jigsaw_like(n_rows=120_000, random_state=3)
    ids = JIGSAW_IDENTITIES
    assert list(df.columns) == ["toxicity", *ids, "model_fair", "model_biased"]
    assert all(df[c].dtype == np.float64 for c in ["toxicity", *ids])
    assert df["model_fair"].dtype == np.float32 and df["model_biased"].dtype == np.float32
    annotated = df[ids[0]].notna()
    assert (df[ids].notna().eq(annotated, axis=0)).all().all()   # NaN pattern shared
    assert abs(annotated.mean() - 0.25) < 0.01
    member = df[ids] >= 0.5
    toxic = df["toxicity"] >= 0.5
    outside = ~member.any(axis=1)
    assert abs(toxic[outside].mean() - 0.08) < 0.005            # toxic_fraction outside
    assert toxic[~outside].mean() > toxic[outside].mean() + 0.02  # identity rows more toxic
    shares = member.mean()
    assert (shares > 0.001 * 0.6).all() and (shares < 0.03 * 1.2).all()
    for m in ("model_fair", "model_biased"):
        s = df[m].to_numpy(np.float64)
        assert (s >= 0).all() and (s <= 1).all()
        assert np.allclose(s, np.round(s, 3), atol=1e-6)           # score_decimals=3
    assert df.equals(make_jigsaw_like(n_rows=120_000, random_state=3))
    assert not df.equals(make_jigsaw_like(n_rows=120_000, random_state=4))


def test_jigsaw_biased_model_raises_negative_aeg_only_on_biased_identities():
    df = make_jigsaw_like(n_rows=200_000, n_identities=6, random_state=0)
    y = (df["toxicity"] >= 0.5).to_numpy()
    names = JIGSAW_IDENTITIES[:6]
    for j, name in enumerate(names):
        g = (df[name] >= 0.5).to_numpy()
        fair = _metrics(y, df["model_fair"].to_numpy(), g)
        biased = _metrics(y, df["model_biased"].to_numpy(), g)
        gap = float(biased["negative_aeg"] - fair["negative_aeg"])
        if j % 2 == 0:  # default biased_identities: every other identity
            assert gap > 0.1, (name, gap)
            assert biased["bpsn_auc"] < fair["bpsn_auc"]


# ---------------------------------------------------------------- demo (docs/cli.md)

def test_demo_table_matches_exact_pair_counts(tmp_path, capsys):
    import json

    from fastbias.cli import main
    out = tmp_path / "demo.json"
    assert main(["demo", "--rows", "20000", "--identities", "4", "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    report = json.loads(out.read_text())
    df = make_jigsaw_like(n_rows=20_000, n_identities=4, random_state=0)
    y = (df["toxicity"] >= 0.5).to_numpy()
    assert report["n_positives"] == int(y.sum())
    for model in report["models"]:
        s = df[model["name"]].to_numpy()
        overall = _u(s[~y], s[y])
        assert abs(model["overall_auc"] - float(overall)) < 1e-12
        rows = []
        for row in model["subgroups"]:
            ref = _metrics(y, s, (df[row["subgroup"]] >= 0.5).to_numpy())
            rows.append(ref)
            for k, v in ref.items():
                assert abs(row[k] - float(v)) < 1e-12, (model["name"], row["subgroup"], k)
        final = 0.25 * float(overall) + 0.25 * sum(
            _power_mean([float(r[k]) for r in rows]) for k in ("subgroup_auc", "bpsn_auc",
                                                                "bnsp_auc"))
        assert abs(model["final_metric"] - final) < 1e-12


def test_demo_seed_help_says_what_it_seeds(capsys):
    # `fastbias demo --help` says --seed is the "random seed of the bootstrap
    # (default 0)", but in the demo it is also the random_state of the generated data
    # (cmd_demo: make_jigsaw_like(..., random_state=args.seed)), so `--seed 1` without --ci
    # changes every number. Right: the demo's help says it seeds the data too.
    from fastbias.cli import main
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    seed_help = text.rsplit("--seed SEED", 1)[1].split(" --", 1)[0]  # the options entry
    assert "data" in seed_help, seed_help


# ---------------------------------------------------------------- make_madlibs_like: held

def test_madlibs_documented_counts_members_and_example():
    kept = [len(make_madlibs_like(None, random_state=r).text) for r in range(3)]
    # 72,000 * (1 - 2 * 3/20 * 1/2 * 0.9) = 62,280 expected: "about 62,000"
    assert all(abs(k - 62_280) < 600 for k in kept), kept
    d = make_madlibs_like(None, random_state=0)
    lower = d.text.str.lower()
    for g in MADLIBS_METRIC_GROUPS:
        assert (lower.str.contains(r"\b" + g + r"\b") == d.subgroups[g]).all()
    hidden = ~d.text.str.contains(r" is a \S+ ", regex=True)
    assert abs(hidden.mean() - 0.5) < 0.01
    for g in ("gay", "muslim", "black"):
        assert d.toxic[d.subgroups[g].to_numpy()].mean() > 0.85
    for g in ("christian", "white", "straight"):
        assert d.toxic[d.subgroups[g].to_numpy()].mean() < 0.15
    small = make_madlibs_like(1_000, random_state=0)
    assert small.text.iloc[0] == "Maria is a white"
    assert not small.toxic[0] and small.subgroups.loc[0, "white"]
    with pytest.raises(ValueError, match="n_rows"):
        make_madlibs_like(70_000)


# ---------------------------------------------------------------- aggregates and Bernstein

def test_final_metric_and_power_mean_match_the_kaggle_formula():
    import pandas as pd

    import fastbias
    tab = pd.DataFrame({"subgroup_auc": [0.9, 0.7, np.nan], "bpsn_auc": [0.8, 0.6, 0.5],
                        "bnsp_auc": [0.95, 0.85, 0.75]})
    for w in (0.25, 0.4):
        exp = w * 0.93 + (1 - w) * np.mean([_power_mean([0.9, 0.7]),
                                            _power_mean([0.8, 0.6, 0.5]),
                                            _power_mean([0.95, 0.85, 0.75])])
        got = fastbias.final_metric(tab, 0.93, overall_weight=w, undefined="omit")
        assert abs(got - exp) < 1e-12
    assert fastbias.power_mean([0.0, 0.8], -5) == 0.0
    assert abs(fastbias.power_mean([0.5, 0.8], 0) - math.sqrt(0.4)) < 1e-15


def test_bernstein_numbers_of_the_docs():
    import fastbias
    assert round(fastbias.bernstein_halfwidth(3160, sigma2=4, max_cost=1, gamma=0.5), 4) == 0.0974
    n = next(n for n in range(1, 10 ** 6) if _bernstein_t(n, 4, 1, 0.5) < 0.05)
    assert n == 11_903 == fastbias.bernstein_min_samples(0.05, sigma2=4, max_cost=1, gamma=0.5)
    n = next(n for n in range(1, 10 ** 6) if _bernstein_t(n, 0.25, 1, 1) < 0.05)
    assert n == 787 == fastbias.ustatistic_min_samples(0.05)
