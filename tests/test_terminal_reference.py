"""An independent review's tests (2026-11-27) of what the terminal states: the `fastbias
report` table, its wrapping, --top, footnotes, stars, intervals and names from the data.

Found by review (each fails before its fix): --top cut within a tie without saying so;
zero-width, byte-order-mark and tag characters in names were printed raw (two subgroups
read alike, text hidden); names differing by a trailing space read alike; the n/a
footnote counted and explained the AUC table's alone; the CLI dropped the warning that
cells' weights overflowed; wide (CJK) names pushed the table past its width.

Every expected number comes from an independent brute-force reference (fractions.Fraction
pair counts, the Jigsaw final metric by hand); fastbias is only the thing under test.
"""
import json
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from fastbias.cli import main

AUCS = ["subgroup_auc", "bpsn_auc", "bnsp_auc"]
SHORT = {"subgroup_auc": "subgroup_auc", "bpsn_auc": "bpsn_auc", "bnsp_auc": "bnsp_auc",
         "negative_aeg": "neg_aeg", "positive_aeg": "pos_aeg"}


# ----------------------------------------------------------------------------- reference

def p_greater(a, b):
    """P(s(a) > s(b)) over all pairs, ties 1/2, as a Fraction (None when a pair set is empty)."""
    if len(a) == 0 or len(b) == 0:
        return None
    total = Fraction(0)
    for x in a:
        for y in b:
            total += 1 if x > y else (Fraction(1, 2) if x == y else 0)
    return total / (len(a) * len(b))


def reference(df, label, model, groups):
    """Per subgroup: counts and the five metrics (Fractions / None), brute force."""
    y = df[label].to_numpy()
    s = [Fraction(str(v)) for v in df[model]]
    rows = {}
    for g in groups:
        m = df[g].to_numpy() == 1
        sn = [s[i] for i in range(len(s)) if m[i] and y[i] == 0]
        sp = [s[i] for i in range(len(s)) if m[i] and y[i] == 1]
        bn = [s[i] for i in range(len(s)) if not m[i] and y[i] == 0]
        bp = [s[i] for i in range(len(s)) if not m[i] and y[i] == 1]
        pg = p_greater(bn, sn)
        pp = p_greater(bp, sp)
        rows[g] = {"size": int(m.sum()), "sub-": len(sn), "sub+": len(sp), "bg-": len(bn),
                   "bg+": len(bp),
                   "subgroup_auc": p_greater(sp, sn), "bpsn_auc": p_greater(bp, sn),
                   "bnsp_auc": p_greater(sp, bn),
                   "negative_aeg": None if pg is None else Fraction(1, 2) - pg,
                   "positive_aeg": None if pp is None else Fraction(1, 2) - pp}
    neg = [s[i] for i in range(len(s)) if y[i] == 0]
    pos = [s[i] for i in range(len(s)) if y[i] == 1]
    return rows, p_greater(pos, neg)


def final_metric_by_hand(rows, overall, omit=False):
    """0.25 overall AUC + 0.75 * mean of the three power means (p = -5) over subgroups."""
    means = []
    for metric in AUCS:
        values = [float(r[metric]) for r in rows.values() if r[metric] is not None]
        if not omit and len(values) < len(rows):
            return float("nan")
        means.append((sum(v ** -5 for v in values) / len(values)) ** (-1 / 5))
    return 0.25 * float(overall) + 0.75 * sum(means) / 3


def shown(value, aeg=False):
    """The value as the table shows it (4 decimals, AEGs signed, n/a when undefined)."""
    if value is None:
        return "n/a"
    text = ("{:+.4f}" if aeg else "{:.4f}").format(float(value))
    if text.lstrip("+-").strip("0.") == "":
        text = ("{:+.4f}" if aeg else "{:.4f}").format(0.0)
    return text


# ----------------------------------------------------------------------------- the terminal

def run_cli(tmp_path, capsys, df, args, name="d.csv"):
    path = tmp_path / name
    df.to_csv(path, index=False)
    status = main(["report", str(path), *args])
    out, err = capsys.readouterr()
    return status, out, err


def model_blocks(out):
    """{model head line: [table parts]}: the stdout split at each model's head line."""
    blocks, current = [], None
    for part in out.split("\n\n"):
        lines = part.split("\n")
        if "  overall AUC " in lines[0]:
            current = [lines[0], ["\n".join(lines[1:])]]
            blocks.append(current)
        elif current is not None and len(lines) > 1 and set(lines[1]) <= {"-", " "} \
                and lines[1].strip():
            current[1].append(part)
    return blocks


def parse_part(part):
    """Rows of one wrapped part, split by the rule line's column spans: (header, rows)."""
    lines = part.split("\n")
    spans = [m.span() for m in re.finditer(r"-+", lines[1])]

    def cells(line):
        return [line[a:b].strip() for a, b in spans]

    return cells(lines[0]), [cells(line) for line in lines[2:]]


def merged_table(parts):
    """The parts of one model's table joined back: {subgroup: {column: text}} in order,
    checking that every part lists the same subgroups in the same order."""
    header0, rows0 = parse_part(parts[0])
    table = {r[0]: dict(zip(header0, r)) for r in rows0}
    order = [r[0] for r in rows0]
    columns = list(header0)
    for part in parts[1:]:
        header, rows = parse_part(part)
        assert header[0] == "subgroup"
        assert [r[0] for r in rows] == order, "a continued part names other subgroups"
        for r in rows:
            table[r[0]].update(dict(zip(header[1:], r[1:])))
        columns += header[1:]
    return order, columns, table


def small_data(n=60, seed=3, groups=("a", "b", "c", "d", "e"), decimals=1):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"y": rng.integers(0, 2, n),
                       "m1": np.round(rng.random(n), decimals),
                       "m2": np.round(rng.random(n), decimals + 1)})
    for g in groups:
        df[g] = (rng.random(n) < 0.35).astype(int)
    return df


# ----------------------------------------------------------------------------- (1) numbers

@pytest.mark.parametrize("wide", [True, False])
def test_every_printed_number_equals_brute_force(tmp_path, capsys, wide):
    df = small_data()
    groups = ["a", "b", "c", "d", "e"]
    status, out, err = run_cli(tmp_path, capsys, df,
                               ["--label", "y", "--scores", "m1", "m2", "--subgroups", *groups]
                               + (["--wide"] if wide else []))
    assert status == 0, err
    blocks = model_blocks(out)
    assert [b[0].split("  ")[0] for b in blocks] == ["m1", "m2"]
    for (head, parts), model in zip(blocks, ["m1", "m2"]):
        if wide:
            assert len(parts) == 1
        else:
            assert all(len(line) <= 100 for p in parts for line in p.split("\n"))
        rows, overall = reference(df, "y", model, groups)
        assert f"overall AUC {shown(overall)}" in head
        assert f"final metric {final_metric_by_hand(rows, overall):.4f}" in head
        order, columns, table = merged_table(parts)
        assert columns == ["subgroup", "size", "sub-", "sub+", "bg-", "bg+",
                           "subgroup_auc", "bpsn_auc", "bnsp_auc", "neg_aeg", "pos_aeg"]
        assert sorted(order) == groups
        for g in groups:
            for c in ["size", "sub-", "sub+", "bg-", "bg+"]:
                assert table[g][c] == f"{rows[g][c]:,}"
            for metric, short in SHORT.items():
                assert table[g][short] == shown(rows[g][metric], "aeg" in metric), (g, metric)
        # worst first: by the model's own lowest of the three AUCs (stable in the given order)
        lowest = {g: min(rows[g][m] for m in AUCS) for g in groups}
        assert order == sorted(groups, key=lambda g: lowest[g])


def test_final_metric_without_the_na_aucs_and_na_footnote_by_hand(tmp_path, capsys):
    """A subgroup with no positive: its subgroup and BNSP AUCs are n/a, the final metric n/a
    with the value leaving them out next to it (by hand), and every n/a explained."""
    df = small_data(n=50, seed=11, groups=("a", "b", "c"))
    df.loc[df["c"] == 1, "y"] = 0
    groups = ["a", "b", "c"]
    status, out, err = run_cli(tmp_path, capsys, df,
                               ["--label", "y", "--scores", "m1", "--subgroups", *groups])
    assert status == 0, err
    rows, overall = reference(df, "y", "m1", groups)
    head, parts = model_blocks(out)[0]
    assert "final metric n/a" in head
    assert f"({final_metric_by_hand(rows, overall, omit=True):.4f} without the n/a AUCs)" in head
    order, columns, table = merged_table(parts)
    for metric, short in SHORT.items():
        assert table["c"][short] == shown(rows["c"][metric], "aeg" in metric)
    n_na = sum(v is None for r in rows.values() for m, v in r.items() if m in SHORT)
    assert f"n/a: {n_na} undefined value(s)" in out
    assert "warning" in err and "subgroup_positives=0" in err


@pytest.mark.parametrize("method", ["holm", "bh"])
@pytest.mark.parametrize("ci", ["delong", "bernstein"])
def test_stars_are_exactly_the_adjusted_p_values_at_the_level(tmp_path, capsys, method, ci):
    """The stars and the `significant` column against Holm / Benjamini-Hochberg applied by
    hand to the raw p-values the JSON carries; every printed interval holds its point."""
    rng = np.random.default_rng(5)
    n = 3000
    y = rng.integers(0, 2, n)
    shares = [0.3, 0.1, 0.05, 0.01, 0.003, 0.5]
    mem = {f"g{i}": (rng.random(n) < q).astype(int) for i, q in enumerate(shares)}
    score = y + rng.normal(0, 1, n) + mem["g0"] * 0.8 - mem["g1"] * 0.3 * y
    df = pd.DataFrame({"y": y, "s": np.round(1 / (1 + np.exp(-score)), 3), **mem})
    groups = list(mem)
    status, out, err = run_cli(tmp_path, capsys, df,
                               ["--label", "y", "--scores", "s", "--subgroups", *groups,
                                "--ci", ci, "--significance", method, "--wide",
                                "--out", str(tmp_path / "o.json"), "-q"])
    assert status == 0, err
    rows = json.loads((tmp_path / "o.json").read_text())["models"][0]["subgroups"]
    keys = [(r["subgroup"], m) for r in rows for m in SHORT if r.get(f"{m}_pvalue") is not None]
    p = [next(r for r in rows if r["subgroup"] == g)[f"{m}_pvalue"] for g, m in keys]
    order = sorted(range(len(p)), key=lambda i: p[i])
    adjusted = [0.0] * len(p)
    if method == "holm":
        running = 0.0
        for k, i in enumerate(order):
            running = max(running, min(1.0, (len(p) - k) * p[i]))
            adjusted[i] = running
    else:
        running = 1.0
        for k in range(len(p) - 1, -1, -1):
            running = min(running, p[order[k]] * len(p) / (k + 1))
            adjusted[order[k]] = running
    significant = {key for key, a in zip(keys, adjusted) if a <= 0.05}
    assert significant, "the data should give some significant gap"
    order_, columns, table = merged_table(model_blocks(out)[0][1])
    for g in groups:
        for metric, short in SHORT.items():
            assert ("*" in table[g][short].split(" [")[0]) == ((g, metric) in significant)
        flagged = [SHORT[m] for m in SHORT if (g, m) in significant]
        assert table[g]["significant"] == (",".join(flagged) or "-")
    for point, low, high in re.findall(
            r"([+-]?\d\.\d{4})\*?°? \[([+-]?\d\.\d{3}), ([+-]?\d\.\d{3})\]", out):
        assert float(low) <= float(point) <= float(high)


@pytest.mark.parametrize("bad", ["x\ny", "r\x1b[31mred", "cr\rret", "t\tab", "rlm\u200fx",
                                 "nel\x85x", "ls\u2028x"])
def test_control_characters_in_every_name_are_escaped_on_both_streams(tmp_path, capsys, bad):
    rng = np.random.default_rng(0)
    n = 60
    model = "m\x1b[2Jodel\n2"
    df = pd.DataFrame({"y": rng.integers(0, 2, n), model: rng.random(n),
                       "feat\x07": np.where(rng.random(n) < 0.5, bad, "other"),
                       "g\u202e": rng.integers(0, 2, n)})
    path = tmp_path / "da\x1b[31mta.csv"
    df.to_csv(path, index=False, quoting=1)
    status = main(["report", str(path), "--label", "y", "--scores", model,
                   "--sensitive-features", "feat\x07", "--subgroups", "g\u202e",
                   "--thresholds", "0.5", "--progress", "always", "--top", "2"])
    out, err = capsys.readouterr()
    assert status == 0, err
    unsafe = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                        "\u202a-\u202e\u2066-\u2069]")
    assert not unsafe.findall(out)
    assert set(unsafe.findall(err)) <= {"\r"}  # tqdm's own carriage returns only
    assert r"m\x1b[2Jodel\x0a2  overall AUC" in out


def test_top_keeps_the_documented_order_nan_last_and_says_it_cut(tmp_path, capsys):
    """--top N: the N first of the model's own ranking by its lowest AUC, subgroups with
    every AUC undefined last, and a note that it cut (none when nothing is cut)."""
    df = tie_data()
    args = ["--label", "y", "--scores", "s", "--subgroups", "nopos", "t1", "empty", "t2",
            "t3", "bad"]
    _, full, _ = run_cli(tmp_path, capsys, df, args)
    order = merged_table(model_blocks(full)[0][1])[0]
    assert order == ["bad", "t1", "t2", "t3", "nopos", "empty"]
    assert "worst of" not in full
    _, cut, _ = run_cli(tmp_path, capsys, df, args + ["--top", "5"])
    assert merged_table(model_blocks(cut)[0][1])[0] == order[:5]
    assert "(5 worst of 6 subgroups shown for each model" in cut
    assert "those not shown included" in cut  # the n/a count covers hidden rows too


def tie_data():
    """t1, t2 and t3 all have the lowest AUC 4/5 (exactly); bad is worse; nopos has no
    positive; empty no row."""
    df = pd.DataFrame({"y": [0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0, 1],
                       "s": [.1, .2, .3, .4, .5, .6, .7, .8, .35, .45, .9, .05]})
    df["t1"] = [1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    df["t2"] = [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
    df["t3"] = [0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    df["nopos"] = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    df["empty"] = 0
    df["bad"] = [0] * 10 + [1, 1]
    return df


# ----------------------------------------------------------------------------- found by review

def test_top_cuts_through_a_tie_without_saying_so(tmp_path, capsys):
    """Was: t1, t2, t3 have the same lowest AUC (4/5, by hand: each has 1 negative and 1
    positive; the BPSN/BNSP AUC compare with 5 background positives / negatives, one of
    which is out of order). `--top 2` prints `bad, t1` and the note "(2 worst of 6 subgroups
    shown ...)": t2 and t3 are exactly as bad as t1, and nothing says that the cut fell in a
    tie (the summary knows ties: `lowest_auc_ties`). Correct: keep the tied subgroups, or
    say that N more tie with the last one shown."""
    df = tie_data()
    rows, _ = reference(df, "y", "s", ["t1", "t2", "t3"])
    assert len({min(r[m] for m in AUCS) for r in rows.values()}) == 1  # a real tie
    assert min(rows["t1"][m] for m in AUCS) == Fraction(4, 5)
    status, out, err = run_cli(tmp_path, capsys, df,
                               ["--label", "y", "--scores", "s", "--subgroups", "nopos",
                                "t1", "empty", "t2", "t3", "bad", "--top", "2"])
    assert status == 0, err
    printed = merged_table(model_blocks(out)[0][1])[0]
    assert printed[:2] == ["bad", "t1"]
    shown_all_tied = {"t2", "t3"} <= set(printed)
    says_tie = re.search(r"\btie", out) is not None
    assert shown_all_tied or says_tie, out


def test_invisible_format_characters_in_names_are_not_escaped(tmp_path, capsys):
    """Was: Names with Unicode format characters (category Cf: zero-width space U+200B,
    word joiner U+2060, BOM U+FEFF, tag characters U+E0041...) are printed raw: the table
    shows the subgroups 'gay' and 'gay\\u200b' as two identical rows, and 'tag' followed by
    invisible tag letters (ASCII smuggling). Correct: shown as visible escapes like the
    bidirectional marks already are (fastbias/validate/errors.py _UNSAFE lists only some Cf
    characters)."""
    import unicodedata

    names = ["gay", "gay\u200b", "wj\u2060", "x\ufeffy", "tag\U000E0041\U000E0042"]
    rng = np.random.default_rng(0)
    n = 60
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                       **{g: rng.integers(0, 2, n) for g in names}})
    status, out, err = run_cli(tmp_path, capsys, df,
                               ["--label", "y", "--scores", "s", "--subgroups", *names, "-q"])
    assert status == 0, err
    order = merged_table(model_blocks(out)[0][1])[0]
    assert len(set(order)) == len(names)  # (as code points they differ...)
    visible = {"".join(c for c in name if unicodedata.category(c) != "Cf") for name in order}
    assert len(visible) == len(names), f"two subgroups print the same: {order!r}"
    assert not [c for c in out if unicodedata.category(c) == "Cf"]


def test_names_differing_by_trailing_space_print_identically(tmp_path, capsys):
    """Was (minor): Columns 'a' and 'a ' are two subgroups; the table pads the name
    column with spaces, so both rows read 'a'. Correct: a name's edge whitespace made
    visible (quoted or escaped), as messages already do with repr()."""
    rng = np.random.default_rng(1)
    n = 60
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                       "a": rng.integers(0, 2, n), "a ": rng.integers(0, 2, n)})
    status, out, err = run_cli(tmp_path, capsys, df,
                               ["--label", "y", "--scores", "s", "--subgroups", "a", "a ",
                                "-q"])
    assert status == 0, err
    order = merged_table(model_blocks(out)[0][1])[0]  # (cells stripped, as a reader sees)
    assert len(set(order)) == 2, f"both subgroups read {order!r}"


def test_na_footnote_counts_and_explains_only_the_auc_table(tmp_path, capsys):
    """Was: With --thresholds, the threshold table prints n/a gaps (e.g. prec_gap at 0.95,
    where no row of the subgroup is predicted positive), but the stdout footnote "n/a: K
    undefined value(s): the metric compares two cells and one of them is empty" counts
    only the AUC table's n/a (K = 8 here while 20 n/a are printed) and gives a reason that
    is wrong for a precision with no predicted positive. Correct: the footnote counts and
    explains every n/a printed (or is restricted in words to the AUC table)."""
    df = tie_data()
    status, out, err = run_cli(tmp_path, capsys, df,
                               ["--label", "y", "--scores", "s", "--subgroups", "nopos",
                                "t1", "empty", "t2", "t3", "bad", "--thresholds", "0.5",
                                "0.95"])
    assert status == 0, err
    tables = out.split("\n\nn/a:")[0]
    body = tables.split("  overall AUC", 1)[1].split("\n", 1)[1]  # (below the head line)
    printed = len(re.findall(r"(?<![\w/])n/a(?![\w/])", body))
    # by hand: 8 AUC-table values (nopos 3, empty 5) + threshold gaps: nopos 2 x 3 (tpr,
    # fnr, precision), empty 2 x 5, bad/t1/t2/t3 precision at 0.95 (no score >= 0.95) 4
    assert printed == 8 + 6 + 10 + 4
    stated = int(re.search(r"n/a: (\d+) undefined value", out).group(1))
    assert stated == printed


def test_cli_drops_the_warning_that_cell_weights_overflowed(tmp_path, capsys):
    """Was: `fastbias.evaluate` warns (UserWarning) that cell weights add up past 1.8e308
    and are shown as inf; `fastbias report --weight w` records every warning during the
    evaluation but prints only UndefinedMetricWarning / OmittedRowsWarning /
    NoSubgroupWarning (cli._say_undefined), so the CSV it writes holds `inf` weights with no
    word on stderr. Correct: the warning printed (escaped) like the others."""
    rng = np.random.default_rng(0)
    n = 40
    df = pd.DataFrame({"y": [0] * 20 + [1] * 20, "s": rng.random(n),
                       "g": rng.integers(0, 2, n), "w": 1e308})
    status, out, err = run_cli(tmp_path, capsys, df,
                               ["--label", "y", "--scores", "s", "--subgroups", "g",
                                "--weight", "w", "--out", str(tmp_path / "o.csv")])
    assert status == 0, err
    written = pd.read_csv(tmp_path / "o.csv")
    assert np.isinf(written["subgroup_negative_weight"]).all()  # 10+ rows of 1e308 each
    assert "inf" in err or "1.8e308" in err, err


def test_wrapped_table_exceeds_100_columns_with_wide_characters(tmp_path, capsys):
    """Was (minor): Widths are counted in code points: a CJK subgroup name (each
    character two terminal cells) makes lines wider than the documented 100 columns and
    shifts every column of its row out of alignment. Correct: widths in terminal cells
    (east-asian width)."""
    import unicodedata

    name = "\u6f22\u5b57" * 13
    rng = np.random.default_rng(2)
    n = 60
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                       name: rng.integers(0, 2, n), "b": rng.integers(0, 2, n)})
    status, out, err = run_cli(tmp_path, capsys, df,
                               ["--label", "y", "--scores", "s", "--subgroups", name, "b",
                                "-q"])
    assert status == 0, err

    def cells(line):
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)

    table_lines = [line for line in out.split("\n") if line and "overall AUC" not in line
                   and not line.startswith(("sub-/sub+", "n/a"))]
    assert max(cells(line) for line in table_lines) <= 100


def test_every_format_character_is_escaped_where_names_are_shown():
    """Every character of Unicode category Cf (the version this Python knows) is shown as a
    visible escape, astral ones as \\U........, and nothing else printable is touched."""
    import unicodedata

    from fastbias.validate.errors import visible

    missed = [hex(c) for c in range(0x110000)
              if unicodedata.category(chr(c)) == "Cf" and visible(chr(c)) == chr(c)]
    assert missed == []
    assert visible("tag\U000E0041") == "tag\\U000e0041"
    assert visible("gay\u200b") == "gay\\u200b"
    assert visible("caf\u00e9 \u6f22 a-b") == "caf\u00e9 \u6f22 a-b"



def test_top_names_the_ties_of_each_model_past_the_cut():
    """Two models: the note names, for each model whose cut at 2 falls in a tie, the tied
    subgroups left out, as a by-hand ranking (lowest of the three AUCs as fractions, the
    given order kept among ties, subgroups of no defined AUC last) finds them."""
    import fastbias
    from fastbias.reports.report import BiasReport

    df = tie_data()
    df["u"] = np.round(df["s"] + np.where(df["t2"] == 1, 0.5, 0.0), 2)
    groups = ["nopos", "t1", "empty", "t2", "t3", "bad"]
    expected = []
    for model in ("s", "u"):
        rows, _ = reference(df, "y", model, groups)
        lowest = {g: min((r[m] for m in AUCS if r[m] is not None), default=None)
                  for g, r in rows.items()}
        ranked = sorted((g for g in groups if lowest[g] is not None), key=lambda g: lowest[g])
        ranked += [g for g in groups if lowest[g] is None]
        tied = [g for g in ranked[2:] if lowest[g] is not None and lowest[g] == lowest[ranked[1]]]
        if tied:
            expected.append(f"for {model}, {len(tied)} more tie with the last shown "
                            f"({', '.join(tied)})")
    # (by hand: t2's scores raised by 0.5 in u, so u's cut falls in no tie)
    assert expected == ["for s, 2 more tie with the last shown (t2, t3)"]
    with pytest.warns(fastbias.UndefinedMetricWarning):
        res = fastbias.evaluate(df, label="y", scores=["s", "u"], subgroups=groups)
    text = BiasReport.from_result(df, res).to_text(max_subgroups=2)
    note = text.split("(2 worst of 6 subgroups shown", 1)[1].split(")\n", 1)[0] + ")"
    assert note.endswith("lowest AUC; " + "; ".join(expected) + ")"), note
