"""Significance tests out of core: placement sums joined from chunks, on the streaming and
Dask paths and the streamed CLI.

The chunks' sums are checked against sums counted pair by pair here, the p-values against
the pair-matrix DeLong reference of tests/test_significance.py, and the bounds that replace
the drawn permutation tests of tiny cells against the exact permutation p-value (every
subset enumerated).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.intervals.delong import weight_bits_of
from fastbias.intervals.placement_sums import (
    combine_placement_sums,
    gather_placement_sums,
    placement_sums,
    tied_placement_sums,
)
from fastbias.metrics import METRIC_COLUMNS
from fastbias.prepare.memberships import prepare_memberships_dense
from fastbias.sort.order import SortedScores
from fastbias.streaming import evaluate_csv, evaluate_parquet
from fastbias.validate.errors import UndefinedMetricWarning
from tests.every_path import evaluate_on_every_path
from tests.test_significance import exact_permutation_p, kernel_matrix, reference_tests

PVALUES = [f"{metric}_pvalue" for metric in METRIC_COLUMNS]


def brute_sums(y, s, member, w=None):
    """Every placement sum of one subgroup, counted over pairs: a dict of named sums."""
    y = np.asarray(y, bool)
    member = np.asarray(member, bool)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    cells = {"gn": member & ~y, "gp": member & y, "bn": ~member & ~y, "bp": ~member & y,
             "on": ~y, "op": y}

    def below(x, yc):
        """Weight of cell ``yc`` below each row of cell ``x`` (ties 1/2)."""
        return kernel_matrix(s[cells[x]], s[cells[yc]]) @ w[cells[yc]]

    def above(yc, x):
        """Weight of cell ``x`` above each row of cell ``yc`` (ties 1/2)."""
        return kernel_matrix(s[cells[x]], s[cells[yc]]).T @ w[cells[x]]

    out = {}
    for j, (x, yc) in enumerate((("gp", "gn"), ("bp", "gn"), ("gp", "bn"), ("bn", "gn"),
                                 ("bp", "gp"))):
        c, d = below(x, yc), above(yc, x)
        wx, wy = w[cells[x]], w[cells[yc]]
        out[f"u{j}"], out[f"sqx{j}"], out[f"sqy{j}"] = wx @ c, wx @ c ** 2, wy @ d ** 2
    c_o = {x: below(x, "on") for x in ("gp", "op")}
    d_o = {yc: above(yc, "op") for yc in ("gn", "on")}
    c_g = {x: below(x, "gn") for x in ("gp", "op")}
    d_g = {yc: above(yc, "gp") for yc in ("gn", "on")}
    wc = {name: w[mask] for name, mask in cells.items()}
    out["cross"] = np.array([
        wc["gp"] @ (c_g["gp"] * c_o["gp"]), wc["gp"] @ c_o["gp"],
        wc["gp"] @ ((c_o["gp"] - c_g["gp"]) * c_o["gp"]), wc["on"] @ (d_g["on"] * d_o["on"]),
        wc["gn"] @ (d_g["gn"] * d_o["gn"]), wc["gn"] @ d_o["gn"],
        wc["gn"] @ ((d_o["gn"] - d_g["gn"]) * d_o["gn"]), wc["op"] @ (c_g["op"] * c_o["op"])])
    out["overall"] = np.array([wc["op"] @ c_o["op"], wc["op"] @ c_o["op"] ** 2,
                               wc["on"] @ d_o["on"] ** 2])
    own = []
    for name in ("on", "op"):  # own class above, itself left out
        k = kernel_matrix(s[cells[name]], s[cells[name]])
        a = k.T @ wc[name] - 0.5 * wc[name]
        own += [wc[name] @ a, wc[name] @ a ** 2]
    out["above"] = np.array(own)
    out["weights"] = np.array([wc[c].sum() for c in ("gn", "gp", "bn", "bp")])
    return out


def assert_sums_equal(sums, y, s, groups, w=None, rtol=1e-12):
    for g, member in enumerate(groups):
        ref = brute_sums(y, s, member, w)
        for j in range(5):
            for block, name in ((0, "u"), (5, "sqx"), (10, "sqy")):
                np.testing.assert_allclose(sums.delong[g, block + j], ref[f"{name}{j}"],
                                           rtol=rtol, atol=1e-9, err_msg=f"{name}{j} of {g}")
        for name in ("cross", "overall", "weights"):
            np.testing.assert_allclose(getattr(sums, name)[g], ref[name], rtol=rtol, atol=1e-9,
                                       err_msg=f"{name} of {g}")
        if w is None:
            np.testing.assert_allclose(sums.above[g], ref["above"], rtol=rtol, atol=1e-9)


def random_rows(rng, n, weighted, levels):
    y = rng.random(n) < 0.4
    s = rng.integers(0, levels, n).astype(np.float64)  # heavy ties
    w = rng.integers(1, 4, n) * rng.choice([1.0, 0.75]) if weighted else None
    groups = [rng.random(n) < p for p in (0.3, 0.5, 0.08)]
    return y, s, w, groups


def chunk_sums_of(y, s, w, groups, cuts):
    """The chunks' own sums: rows cut at the score values ``cuts`` (ties never split);
    a chunk whose rows all share a score through the closed form of ``tied_placement_sums``
    (as a streaming bucket of one score is), the others through a sort of their rows."""
    matrix = np.column_stack(groups).astype(np.uint8)
    edges = [-np.inf, *sorted(cuts), np.inf]
    parts = []
    for lo, hi in zip(edges, edges[1:]):
        rows = np.flatnonzero((s >= lo) & (s < hi))
        if rows.size == 0:
            continue
        if np.unique(s[rows]).size == 1:
            member = matrix[rows].astype(bool)
            ww = np.ones(rows.size) if w is None else w[rows]
            yy = y[rows]
            weights = np.column_stack([ww @ (member & ~yy[:, None]), ww @ (member & yy[:, None]),
                                       ww @ (~member & ~yy[:, None]),
                                       ww @ (~member & yy[:, None])])
            cell_rows = np.column_stack([(member & ~yy[:, None]).sum(0),
                                         (member & yy[:, None]).sum(0)])
            class_rows = np.tile([(~yy).sum(), yy.sum()], (len(groups), 1))
            squares = None if w is None else np.tile([ww[~yy] @ ww[~yy], ww[yy] @ ww[yy]],
                                                     (len(groups), 1))
            bits = None if w is None else weight_bits_of(ww)  # (as a streamed bucket says)
            parts.append(tied_placement_sums(weights, cell_rows, class_rows, squares, bits))
        else:
            memberships = prepare_memberships_dense(y[rows], matrix[rows], list(range(len(groups))))
            walked = placement_sums(SortedScores(s[rows], memberships),
                                    None if w is None else w[rows], workers=1)[0]
            # (as a streamed chunk gathers its universes: what keeps its exact sums)
            parts.append(gather_placement_sums([(walked, np.arange(len(groups)))], len(groups),
                                               w is not None))
    return combine_placement_sums(parts)


@pytest.mark.parametrize("weighted", [False, True])
def test_chunked_placement_sums_equal_pair_counts(weighted):
    rng = np.random.default_rng(5)
    for _ in range(8):
        n = int(rng.integers(40, 160))
        levels = int(rng.integers(2, 9))
        y, s, w, groups = random_rows(rng, n, weighted, levels)
        cuts = rng.choice(np.arange(levels + 1), size=int(rng.integers(1, levels + 1)),
                          replace=False)
        sums = chunk_sums_of(y, s, w, groups, cuts)
        assert_sums_equal(sums, y, s, groups, w)
        # and the one walk of all rows agrees
        memberships = prepare_memberships_dense(y, np.column_stack(groups).astype(np.uint8),
                                                [0, 1, 2])
        whole, _, _ = placement_sums(SortedScores(s, memberships), w)
        assert_sums_equal(whole, y, s, groups, w)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("in_numpy", [False, True])
def test_class_rows_kept_for_draws_equal_pair_counts(weighted, in_numpy):
    """What a drawn permutation test reads of each class (placement against the other class,
    own class above, and where weighted the weight: ``packed``), the own-class sums and the prefix sums the cross
    sums read, against pair counts (dyadic weights: every value exact)."""
    from fastbias.intervals.placement_sums import placement_sums_in_numpy

    rng = np.random.default_rng(11)
    for _ in range(6):
        n = int(rng.integers(2, 120))
        y, s, w, groups = random_rows(rng, n, weighted, int(rng.integers(1, 7)))
        memberships = prepare_memberships_dense(y, np.column_stack(groups).astype(np.uint8),
                                                [0, 1, 2])
        for draws in ((0, 1), (1, 0), (0,), (1,), ()):
            if in_numpy:
                sums, _, classes = placement_sums_in_numpy(s, memberships, w)
            else:
                sums, _, classes = placement_sums(SortedScores(s, memberships), w)
            ww = np.ones(n) if w is None else w
            want_above, rows_of = [], {}
            for label in (0, 1):
                own, other = (y == label), (y != label)
                k_own = kernel_matrix(s[own], s[own])  # [i, j]: 1 if own i > own j, 1/2 tied
                above = k_own.T @ ww[own] - 0.5 * ww[own]
                versus = kernel_matrix(s[other], s[own]).T @ ww[other] if label == 0 else \
                    kernel_matrix(s[own], s[other]) @ ww[other]
                rows_of[label] = np.column_stack([versus, above] + ([ww[own]] if weighted
                                                                     else []))
                want_above += [ww[own] @ above, ww[own] @ above ** 2]
                if label == 1:
                    u_overall = ww[own] @ versus
            np.testing.assert_allclose(classes.above, want_above, rtol=1e-14)
            np.testing.assert_allclose(sums.above[:, :], np.tile(want_above, (3, 1)), rtol=1e-14)
            assert classes.u_overall == u_overall
            assert classes.prefix_sums() is None  # (given to the cross sums, then freed)
            assert classes.packed == {}  # rows are made for a class drawn from, when drawn
            for label in draws:
                got = classes.rows(label)
                assert classes.rows(label) is got  # (made once)
                assert got.flags.c_contiguous and got.shape == rows_of[label].shape
                # rows in score order (a placement depends on the score alone), tied rows in
                # any order (compared as sorted sets of rows)
                in_order = np.argsort(s[y == label], kind="stable")
                np.testing.assert_array_equal(got[:, 0], rows_of[label][in_order, 0])
                np.testing.assert_array_equal(got[np.lexsort(got.T[::-1])],
                                              rows_of[label][np.lexsort(rows_of[label].T[::-1])])


@pytest.mark.parametrize("in_numpy", [False, True])
def test_unweighted_own_class_sums_are_exact_to_the_last_rounding(in_numpy):
    """Unweighted, each row's own class above is a multiple of 1/2, so the own-class sums (a
    permutation variance is a small difference of them) have exact values; on a class where
    adding the squares in order rounds, both tiers still give them correctly rounded."""
    from fractions import Fraction

    from fastbias.intervals.first_call import class_sums_in_numpy
    from fastbias.sweep import _kernels as SK

    rng = np.random.default_rng(3)
    n = 200_000
    values = np.sort(rng.integers(0, 50_000, n)).astype(np.float64)  # ties
    others = np.sort(rng.random(1_000) * 50_000)
    # twice each row's own class above: 2 x the rows above its score + its tied rows but itself
    _, first, tied = np.unique(values, return_index=True, return_counts=True)
    twice = np.repeat(2 * (n - first - tied) + (tied - 1), tied).astype(np.int64)
    exact = (Fraction(int(twice.sum()), 2), Fraction(int((twice * twice).sum()), 4))
    assert Fraction(float(np.cumsum((twice / 2.0) ** 2)[-1])) != exact[1]  # (in order: rounds)
    sums_of = class_sums_in_numpy if in_numpy else SK.class_sums
    got = sums_of(values, np.empty(0), others, np.empty(0), True, np.empty(n + 1),
                  np.empty((0, 3)), np.empty(0))
    for value, want in zip(got, exact):
        assert abs(Fraction(float(value)) - want) <= Fraction(float(np.spacing(value))) / 2


def test_a_chunk_of_one_score_in_closed_form_equals_its_sweep():
    rng = np.random.default_rng(9)
    n = 50
    y = rng.random(n) < 0.4
    s = np.full(n, 0.25)
    groups = [rng.random(n) < 0.3, rng.random(n) < 0.6]
    tied = chunk_sums_of(y, s, None, groups, [])
    memberships = prepare_memberships_dense(y, np.column_stack(groups).astype(np.uint8), [0, 1])
    swept, _, _ = placement_sums(SortedScores(s, memberships))
    for name in ("delong", "cross", "overall", "above", "weights"):
        np.testing.assert_allclose(getattr(tied, name), getattr(swept, name), rtol=1e-13,
                                   err_msg=name)
    assert_sums_equal(tied, y, s, groups)


@pytest.fixture
def delong_everywhere(monkeypatch):
    from fastbias.intervals import significance
    monkeypatch.setattr(significance, "PERMUTATION_BELOW", 0)


def frame_of(rng, n, weighted):
    y, s, w, groups = random_rows(rng, n, weighted, int(rng.integers(3, 12)))
    s = s + 2.0 * (groups[1] & ~y)  # a biased subgroup
    df = pd.DataFrame({"y": y, "s": s, **{f"g{j}": g.astype(float) for j, g in enumerate(groups)}})
    if weighted:  # whole numbers: the reference replicates each row w times
        df["w"] = rng.integers(1, 4, n).astype(np.float64)
    return df


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reader", ["parquet", "csv"])
def test_streamed_pvalues_match_pair_matrix_reference(tmp_path, weighted, reader,
                                                      delong_everywhere):
    if reader == "parquet":
        pytest.importorskip("pyarrow")
    rng = np.random.default_rng(31)
    for i in range(3):
        df = frame_of(rng, int(rng.integers(120, 260)), weighted)
        path = tmp_path / f"d{i}.{reader}"
        if reader == "parquet":
            df.to_parquet(path)
            run = evaluate_parquet
        else:
            df.to_csv(path, index=False)
            run = evaluate_csv
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            res = run(path, label="y", scores="s", subgroups=["g0", "g1", "g2"],
                      sample_weight="w" if weighted else None, significance="holm",
                      bucket_rows=40)
        table = res.for_model()
        assert res.settings["significance"] == "holm" and res.settings["engine"] == "streaming"
        for j in range(3):
            member = df[f"g{j}"].to_numpy() == 1
            ref = reference_tests(df["y"].to_numpy(), df["s"].to_numpy(), member,
                                  df["w"].to_numpy() if weighted else None)
            for metric in METRIC_COLUMNS:
                np.testing.assert_allclose(table.loc[f"g{j}", f"{metric}_pvalue"],
                                           ref[metric][2], rtol=1e-7, atol=0,
                                           err_msg=f"g{j} {metric}")


def scored_frame(n, seed, weighted=False):
    """Identities that meet often (intersections of every size from a few rows to thousands),
    some unannotated, two of them scored with a bias; scores with heavy ties."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    df = pd.DataFrame({"toxicity": y.astype(float)})
    score = y * 1.2 + rng.normal(0, 1, n)
    for name, share, shift in zip(SUBGROUPS, (0.3, 0.2, 0.04, 0.006), (0.0, 0.3, -0.4, 0.0)):
        member = rng.random(n) < share
        score += shift * (member & ~y)
        column = member.astype(float)
        column[rng.random(n) < 0.1] = np.nan
        df[name] = column
    df["model_biased"] = np.round(score, 1)  # ties across buckets' edges
    if weighted:
        df["w"] = rng.integers(1, 5, n) * 0.5
    return df


SUBGROUPS = ["male", "female", "transgender", "other_gender"]


def _evaluate_everywhere(tmp_path, df, kw, bucket_rows=6_000):
    """evaluate, then evaluate_parquet and fastbias.dask.evaluate of the same rows (tables)."""
    ref, others = evaluate_on_every_path(tmp_path, df, bucket_rows=bucket_rows, npartitions=5,
                                         csv=False, row_group_size=9_000, **kw)
    return ref.for_model(), [res.for_model() for res in others]


@pytest.mark.jit_heavy  # large inputs; the kernels are covered uncompiled by the small tests
@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("weighted", [False, True])
def test_streaming_and_dask_give_the_pvalues_of_evaluate(tmp_path, policy, weighted):
    """Every raw p-value but those of cells under 30 rows is evaluate's (DeLong, exact
    moments), intersections included; equal to the bit unweighted."""
    df = scored_frame(40_000, 4, weighted)
    kw = dict(label="toxicity", scores="model_biased", subgroups=SUBGROUPS,
              missing_subgroup=policy, intersections=2, significance="bh",
              sample_weight="w" if weighted else None)
    ref, others = _evaluate_everywhere(tmp_path, df, kw)
    cells = ref[["subgroup_negatives", "subgroup_positives", "background_negatives",
                 "background_positives"]].min(axis=1)
    large = cells >= 30
    assert large.sum() >= 6 and (cells < 300).any() and (cells < 30).any()
    tolerance = dict(rtol=1e-10, atol=1e-300) if weighted else dict(rtol=0, atol=0)
    for table in others:
        np.testing.assert_allclose(table.loc[large, PVALUES], ref.loc[large, PVALUES],
                                   **tolerance)


@pytest.mark.jit_heavy  # large inputs; the kernels are covered uncompiled by the small tests
@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("weighted", [False, True])
def test_without_tiny_cells_the_adjusted_pvalues_and_flags_are_evaluates(tmp_path, policy,
                                                                        weighted):
    """With every cell of 30 rows or more the families are the same: the adjusted p-values
    and the flags equal evaluate's on both out-of-core paths."""
    df = scored_frame(40_000, 5, weighted)
    kw = dict(label="toxicity", scores="model_biased", subgroups=SUBGROUPS[:3],
              missing_subgroup=policy, significance="holm",
              sample_weight="w" if weighted else None)
    ref, others = _evaluate_everywhere(tmp_path, df, kw)
    assert (ref[["subgroup_negatives", "subgroup_positives"]] >= 30).all(axis=None)
    flags = [f"{m}_significant" for m in METRIC_COLUMNS]
    assert ref[flags].to_numpy().any()
    adjusted = [f"{m}_pvalue_adjusted" for m in METRIC_COLUMNS]
    for table in others:
        np.testing.assert_allclose(table[adjusted], ref[adjusted], rtol=1e-10, atol=1e-300)
        pd.testing.assert_frame_equal(table[flags], ref[flags])


@pytest.mark.jit_heavy  # large inputs; the kernels are covered uncompiled by the small tests
def test_dask_significance_equals_streaming(tmp_path):
    pytest.importorskip("dask.dataframe")
    import dask
    import dask.dataframe as dd

    import fastbias.dask
    df = scored_frame(20_000, 6)
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    kw = dict(label="toxicity", scores="model_biased", subgroups=SUBGROUPS,
              intersections=2, significance="holm", confidence=0.9)
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        streamed = evaluate_parquet(path, bucket_rows=5_000, **kw)
        on_dask = fastbias.dask.evaluate(dd.from_pandas(df, npartitions=3), npartitions=4, **kw)
        lazy = fastbias.dask.evaluate(str(path), compute=False, **kw)
        later = lazy.compute()
    columns = [c for c in streamed.table.columns if "pvalue" in c or "significant" in c]
    assert len(columns) == 15
    for res in (on_dask, later):
        assert res.settings["significance"] == "holm" and res.settings["confidence"] == 0.9
        pd.testing.assert_frame_equal(res.table[columns], streamed.table[columns],
                                      check_exact=False, rtol=1e-12)
    assert streamed.for_model().attrs["significance_level"] == pytest.approx(0.1)


def test_weighted_dask_pvalues_do_not_depend_on_the_order_of_the_rows():
    """Rows of equal scores reach a score-range partition in an order the shuffle chooses
    (it changed with Python's hash seed from run to run), and weighted float sums over them
    moved in their last bits with it. Each partition puts them in the order of their
    weights: the same rows in another order give the same table, bit for bit. (On data this
    small the partitions' score ranges come from every row; on large data they come from a
    sample, which another order of the rows may change.)"""
    pytest.importorskip("dask.dataframe")
    import dask
    import dask.dataframe as dd

    import fastbias.dask
    df = scored_frame(6_000, 7)
    rng = np.random.default_rng(7)
    # weights whose sums round; half of them of four values, so that many rows of one score
    # and one weight differ in their label or their subgroups
    df["w"] = np.where(rng.random(len(df)) < 0.5, rng.random(len(df)) * 3,
                       rng.choice([0.1, 0.3, 0.7, 1.9], len(df)))
    kw = dict(label="toxicity", scores="model_biased", subgroups=SUBGROUPS, sample_weight="w",
              significance="holm", npartitions=3)
    tables = []
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for seed in (None, 1, 2, 3, 4):
            rows = df if seed is None else df.sample(frac=1.0, random_state=seed)
            tables.append(fastbias.dask.evaluate(dd.from_pandas(rows, npartitions=4),
                                                 **kw).table)
    assert tables[0]["subgroup_auc_pvalue"].notna().sum() >= 3  # (a tiny weighted cell: none)
    for table in tables[1:]:
        pd.testing.assert_frame_equal(table, tables[0], check_exact=True)


def test_tiny_cells_out_of_core_get_a_bound_above_the_exact_permutation_pvalue(tmp_path):
    """Cells under 30 rows: Hoeffding's bound on the permutation p-value, computed here from
    its definition, and never below the exact p-value (every subset enumerated)."""
    from tests.reference import pair_probability
    rng = np.random.default_rng(21)
    n = 24
    y = np.zeros(n, bool)
    y[:11] = True
    s = np.round(rng.normal(size=n) + y, 1)
    member = np.zeros(n, bool)
    member[[0, 1, 2, 3]] = True
    member[[11, 12, 13]] = True
    s[[11, 12, 13]] = [5.0, 5.1, 5.2]
    df = pd.DataFrame({"y": y, "s": s, "g": member.astype(float)})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    result = evaluate_csv(path, label="y", scores="s", subgroups=["g"], significance="holm",
                          bucket_rows=5)
    table = result.for_model()
    assert table.attrs["permutation_bounds"] == 5 and table.attrs["permutation_tests"] == 0
    from fastbias.reports.plots import significance_note
    assert ("out of core 5 p-value(s) of cells under 30 rows are Hoeffding's bound on the "
            "permutation p-value") in significance_note(result)
    exact = exact_permutation_p(y, s, member, None,
                                ["subgroup_auc", "bpsn_auc", "negative_aeg"], 0)
    exact.update(exact_permutation_p(y, s, member, None, ["bnsp_auc", "positive_aeg"], 1))
    neg, pos = s[~y], s[y]
    theta = pair_probability(pos, neg)
    fixed_pos = s[member & y]
    means = {  # the permutation means of the per-row values
        "subgroup_auc": kernel_matrix(fixed_pos, neg).mean(),
        "bpsn_auc": kernel_matrix(pos[4:], neg).mean(),  # background positives over negatives
        "bnsp_auc": kernel_matrix(pos, neg[3:]).mean(),
    }
    sizes = {"subgroup_auc": 3, "bpsn_auc": 3, "negative_aeg": 3, "bnsp_auc": 4,
             "positive_aeg": 4}
    for metric, p_exact in exact.items():
        got = table.loc["g", f"{metric}_pvalue"]
        size = sizes[metric]
        if metric.endswith("aeg"):
            big_n = 13 if metric == "negative_aeg" else 11
            excess = abs(table.loc["g", metric])
            spread = (big_n - 1) / (big_n - size)
        else:
            excess = abs(table.loc["g", metric] - theta) - abs(means[metric] - theta)
            spread = 1.0
        bound = min(1.0, 2 * np.exp(-2 * size * excess ** 2 / spread ** 2)) if excess > 0 else 1
        np.testing.assert_allclose(got, bound, rtol=1e-9, err_msg=metric)
        assert got >= p_exact - 1e-12, (metric, got, p_exact)


def test_weighted_tiny_cells_out_of_core_are_not_tested_and_said(tmp_path):
    rng = np.random.default_rng(3)
    n = 3000
    df = pd.DataFrame({"y": rng.random(n) < 0.4, "s": rng.random(n).round(2),
                       "w": rng.integers(1, 4, n).astype(float),
                       "big": (rng.random(n) < 0.4).astype(float),
                       "tiny": np.zeros(n)})
    df.loc[:14, "tiny"] = 1.0  # about 9 negatives and 6 positives
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    with pytest.warns(UndefinedMetricWarning, match="5 in a weighted cell of fewer than 30 "
                                                    "rows, whose permutation test would draw "
                                                    "rows of its whole class") as caught:
        result = evaluate_csv(path, label="y", scores="s", subgroups=["big", "tiny"],
                              sample_weight="w", significance="bh", bucket_rows=1000)
    table = result.for_model()
    assert sum("not tested for significance" in str(w.message) for w in caught) == 1
    assert table.loc["tiny", PVALUES].isna().all()
    assert not table.loc["tiny", [f"{m}_significant" for m in METRIC_COLUMNS]].any()
    assert table.loc["big", PVALUES].notna().all()
    assert table.attrs["permutation_untested"] == 5 and table.attrs["n_tests"] == 5
    # the reports say which tests were made, and which values were not tested
    from fastbias.report import BiasReport
    report = BiasReport.from_result(df, result)
    text = report.to_text()
    tiny = next(line for line in text.splitlines() if line.startswith("tiny "))
    assert tiny.endswith("(not tested: subgroup_auc,bpsn_auc,bnsp_auc,neg_aeg,pos_aeg)")
    big = next(line for line in text.splitlines() if line.startswith("big "))
    assert "not tested" not in big
    said = "5 value(s) of weighted cells under 30 rows not tested (out of core"
    assert said in text and "a value not tested (no p-value) is never marked" in text
    page = report.to_html()
    assert page.count(said) == 2  # the settings and the note
    assert "cell under 10 rows" not in page


def test_out_of_core_metrics_on_the_overall_aucs_samples_get_p_1_like_evaluate(tmp_path):
    """A weighted subgroup of every row, in cells under 30 rows: out of core its subgroup AUC
    is no permutation test left untested but p = 1, as in memory (found by review: NaN and a
    warning blaming the draws)."""
    rng = np.random.default_rng(5)
    n = 40
    df = pd.DataFrame({"y": rng.random(n) < 0.4, "s": rng.random(n).round(2),
                       "w": rng.random(n) + 0.5, "all": np.ones(n)})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    kw = dict(label="y", scores="s", subgroups=["all"], sample_weight="w", significance="bh")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        streamed = evaluate_csv(path, bucket_rows=16, **kw).for_model()
        in_memory = fastbias.evaluate(df, **kw).for_model()
    assert streamed.loc["all", "subgroup_auc_pvalue"] == 1.0
    assert in_memory.loc["all", "subgroup_auc_pvalue"] == 1.0


def test_out_of_core_significance_is_checked(tmp_path):
    df = scored_frame(1000, 1)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    with pytest.raises(ValueError, match="significance must be None, 'holm' or 'bh'"):
        evaluate_csv(path, label="toxicity", scores="model_biased", subgroups=["male"],
                     significance="bonferroni")
    with pytest.raises(ValueError, match="confidence"):
        evaluate_csv(path, label="toxicity", scores="model_biased", subgroups=["male"],
                     significance="holm", confidence=1.5)


@pytest.mark.parametrize("weighted", [False, True])
def test_class_walks_give_the_overall_delong_sums_of_the_class_walk(weighted):
    """A significance test takes the overall AUC's DeLong sums from the classes' own walks
    (``class_sums``' moments): the bits of ``class_placement_sums``' two halves, whose
    halves add up to its whole, and within rounding of each row's placement summed exactly
    (the weight of the other class below a positive, above a negative, ties 1/2)."""
    from fractions import Fraction

    from fastbias.sweep import _kernels as SK

    rng = np.random.default_rng(5 + weighted)
    for _ in range(40):
        n_neg, n_pos = (int(rng.integers(0, 60)) for _ in range(2))
        levels = int(rng.choice([1, 3, 40, 10 ** 6]))
        neg = np.sort(rng.integers(0, levels, n_neg)).astype(np.uint64)
        pos = np.sort(rng.integers(0, levels, n_pos)).astype(np.uint64)
        w_neg, w_pos = ((np.round(rng.random(size) * 4, 2) if weighted else np.ones(size))
                        for size in (n_neg, n_pos))
        cum_neg, cum_pos = ((np.concatenate([[0.0], np.cumsum(w)]) if weighted else np.empty(0))
                            for w in (w_neg, w_pos))
        whole = SK.class_placement_sums(neg, pos, cum_neg, cum_pos, SK.BOTH_HALVES, None)
        halves = [SK.class_placement_sums(neg, pos, cum_neg, cum_pos, half, None)
                  for half in (SK.POSITIVES_HALF, SK.NEGATIVES_HALF)]
        assert halves[0][2] == 0.0 and halves[1][:2] == (0.0, 0.0)
        assert whole == (halves[0][0], halves[0][1], halves[1][2])
        moments = {}
        for label, (values, cum, others, others_cum) in enumerate(
                [(neg, cum_neg, pos, cum_pos), (pos, cum_pos, neg, cum_neg)]):
            moments[label] = np.full(2, np.nan)
            SK.class_sums(values, cum, others, others_cum, label == 0, np.empty(0),
                          np.empty((0, 2)), moments[label])
        assert (moments[1][0], moments[1][1], moments[0][1]) == whole
        # each row's placement, summed as rationals
        exact = [Fraction(0)] * 3
        for x, wx in zip(pos.tolist(), w_pos.tolist()):
            p = sum(Fraction(wy) * (Fraction(1) if y < x else Fraction(1, 2) if y == x else 0)
                    for y, wy in zip(neg.tolist(), w_neg.tolist()))
            exact[0] += Fraction(wx) * p
            exact[1] += Fraction(wx) * p * p
        for y, wy in zip(neg.tolist(), w_neg.tolist()):
            d = sum(Fraction(wx) * (Fraction(1) if x > y else Fraction(1, 2) if x == y else 0)
                    for x, wx in zip(pos.tolist(), w_pos.tolist()))
            exact[2] += Fraction(wy) * d * d
        for got, want in zip(whole, exact):
            assert abs(Fraction(got) - want) <= abs(want) * Fraction(1, 2 ** 45), (got, want)


def test_chunks_read_ratios_combine_as_each_subgroups_largest():
    """Out of core each chunk reads its own prefix sums, so the read ratios the floors take
    (:func:`~fastbias.sweep.walk.read_ratio`) are, per subgroup and class, the largest of
    any chunk's (a heavy row below light ones in one chunk only), not the first's or the
    last's; a chunk's universes place theirs at their own subgroups; one not known (None)
    leaves them not known."""
    from dataclasses import replace

    from fastbias.intervals.placement_sums import (
        combine_placement_sums,
        empty_placement_sums,
        gather_placement_sums,
        ratios_of,
    )

    chunks = [np.array([[5.0, 1.0], [1.0, 9.0]]), np.array([[2.0, 7.0], [3.0, 1.0]]),
              np.array([[1.0, 1.0], [8.0, 2.0]])]
    parts = [replace(empty_placement_sums(2, True), read_ratios=r) for r in chunks]
    largest = [[max(r[i][c] for r in chunks) for c in range(2)] for i in range(2)]
    np.testing.assert_array_equal(ratios_of(combine_placement_sums(parts)), largest)
    parts[1] = replace(parts[1], read_ratios=None)
    assert ratios_of(combine_placement_sums(parts)) is None
    universes = [(replace(empty_placement_sums(1, True), read_ratios=np.array([[4.0, 6.0]])),
                  np.array([1])),
                 (replace(empty_placement_sums(1, True),
                          read_ratios=lambda: np.array([[3.0, 2.0]])), np.array([0]))]
    np.testing.assert_array_equal(ratios_of(gather_placement_sums(universes, 2, True)),
                                  [[3.0, 2.0], [4.0, 6.0]])
    universes[0] = (replace(universes[0][0], read_ratios=None), universes[0][1])
    assert ratios_of(gather_placement_sums(universes, 2, True)) is None
