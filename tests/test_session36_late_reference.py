"""An independent review's tests (2026-11-27) of the thirty-sixth session's late changes:
add_intervals' table check and the CLI's --positive reading of a CSV label as text. Expected
values come from sklearn / hand counts.

Found by review (each failed before its fix): "NaN" label text beside numbers (pandas' parse
error leaked); the rows given twice to add_intervals (every metric alike, the counts not).
The others pin properties that held."""
import json
import random
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
import fastbias.cli as cli
from fastbias.intervals import add_intervals

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


# ----------------------------------------------------------------------------- CLI helpers

def _write_csv(path, labels, seed=0):
    rng = random.Random(seed)
    s = [round(rng.random(), 2) for _ in labels]
    g = [rng.random() < 0.5 for _ in labels]
    with open(path, "w") as f:
        f.write("y,s,g\n")
        for a, b, c in zip(labels, s, g):
            f.write(f"{a},{b},{int(c)}\n")
    return np.array(s), np.array(g)


def _run(monkeypatch, capsys, path, positive, stream, out):
    if stream:
        monkeypatch.setattr(cli, "_row_bytes", lambda args, n: 10 ** 13)
    try:
        status = cli.main(["report", str(path), "--label", "y", "--positive", positive,
                           "--scores", "s", "--subgroups", "g", "--out", str(out),
                           "--force", "-q"])
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    return status, err


def _labels(values, n=40, seed=5):
    rng = random.Random(seed)
    out = [rng.choice(values) for _ in range(n)]
    # every value occurs
    out[:len(values)] = values
    return out


CASES = [
    (["0", "1"], "1", lambda v: v == "1"),
    (["0", "1"], "0", lambda v: v == "0"),
    (["0", "1", "1.0"], "1", lambda v: float(v) == 1),
    (["0", "1e0"], "1", lambda v: float(v) == 1),
    (["0", " 1"], "1", lambda v: float(v) == 1),
    (["0", "+1"], "1", lambda v: float(v) == 1),
    (["-1", "1"], "-1", lambda v: float(v) == -1),
    (["0", "ok"], "0", lambda v: v == "0"),
    (["0", "ok"], "ok", lambda v: v == "ok"),
    (["1", "toxic"], "1", lambda v: v == "1"),
    (["True", "False"], "True", lambda v: v == "True"),
]


@pytest.mark.parametrize("stream", [False, True], ids=["memory", "streamed"])
@pytest.mark.parametrize("values,positive,is_pos", CASES,
                         ids=[f"{'/'.join(c[0])}-pos{c[1]}" for c in CASES])
def test_cli_positive_matches_sklearn(values, positive, is_pos, stream, tmp_path, capsys,
                                      monkeypatch):
    """Held: the positive class as sklearn counts it, in memory and streamed."""
    labels = _labels(values)
    s, g = _write_csv(tmp_path / "d.csv", labels)
    y = np.array([is_pos(v) for v in labels])
    status, err = _run(monkeypatch, capsys, tmp_path / "d.csv", positive, stream,
                       tmp_path / "o.json")
    assert status in (0, None), err
    d = json.loads((tmp_path / "o.json").read_text())
    m = d["models"][0]
    assert d["n_positives"] == int(y.sum())
    assert m["overall_auc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    row = m["subgroups"][0]
    assert row["subgroup_auc"] == pytest.approx(roc_auc_score(y[g], s[g]), abs=1e-12)
    assert row["bpsn_auc"] == pytest.approx(
        roc_auc_score(y[(g & ~y) | (~g & y)], s[(g & ~y) | (~g & y)]), abs=1e-12)


@pytest.mark.parametrize("stream", [False, True], ids=["memory", "streamed"])
def test_cli_third_value_named_is_not_the_positive(stream, tmp_path, capsys, monkeypatch):
    """Held: labels 1,1,0,...,2 (2 first at row 5) under --positive 1: the third value named
    is 2 at row 5 (hand count), never the positive class."""
    labels = ["1", "1", "0", "1.0", "0", "2", "0", "1"]
    _write_csv(tmp_path / "d.csv", labels)
    status, err = _run(monkeypatch, capsys, tmp_path / "d.csv", "1", stream, tmp_path / "o.json")
    assert status not in (0, None)
    assert "3 distinct values" in err
    assert "5" in err.split("third")[1][:40]
    assert "2" in err.split("third")[1][:15]


@pytest.mark.parametrize("stream", [False, True], ids=["memory", "streamed"])
def test_cli_nan_text_label_beside_numbers_is_named(stream, tmp_path, capsys, monkeypatch):
    """Found by review. CSV label 0/1 with the text "NaN" at row 3, --positive 1. Under
    --positive only an empty field is missing (docs/cli.md), so "NaN" is a third value: the
    error names the label column, the value 'NaN' and its row 3. Got pandas' own message from
    _label_numbers' pd.to_numeric: "fastbias: error: Unable to parse string 'NaN' at position 3"
    (no column named, not the CLI's third-value message; with text beside, the position is
    that in the list of distinct values, not the row)."""
    labels = ["0", "1", "0", "NaN", "1", "0", "1", "1"]
    _write_csv(tmp_path / "d.csv", labels)
    status, err = _run(monkeypatch, capsys, tmp_path / "d.csv", "1", stream, tmp_path / "o.json")
    assert status not in (0, None)
    assert "Unable to parse" not in err
    assert "'y'" in err and "NaN" in err and "3" in err


def test_cli_positive_inf_report_is_strict_json(tmp_path, capsys, monkeypatch):
    """Held: CSV label 0/inf with --positive inf counts the inf rows as positive and the report
    is strict JSON (no Infinity/NaN constants)."""
    labels = _labels(["0", "inf"])
    _write_csv(tmp_path / "d.csv", labels)
    status, err = _run(monkeypatch, capsys, tmp_path / "d.csv", "inf", False, tmp_path / "o.json")
    assert status in (0, None), err

    def strict(name):
        raise ValueError(f"non-JSON constant {name}")
    d = json.loads((tmp_path / "o.json").read_text(), parse_constant=strict)
    assert d["n_positives"] == labels.count("inf")


# ----------------------------------------------------------------------------- add_intervals

def _data(n=1500, seed=1):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    s = y + rng.normal(0, 1, n)
    g = pd.DataFrame({"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.5})
    return rng, y, s, g


def _inside(out):
    for m in METRICS:
        ok = out[m].isna() | ((out[f"{m}_low"] <= out[m] + 1e-12) & (out[m] <= out[f"{m}_high"] + 1e-12))
        assert ok.all(), m


def test_add_intervals_legitimate_tables_accepted():
    """Held: tables of bias_metrics with weights, thresholds, pos_label, a one-class cell (NaN
    metrics), int and float16 scores, Series with a shuffled index, and evaluate().for_model
    take intervals; each interval holds its estimate."""
    rng, y, s, g = _data()
    w = rng.uniform(0.1, 5, len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _inside(add_intervals(fastbias.bias_metrics(y, s, g, sample_weight=w), y, s, g,
                              method="delong", sample_weight=w))
        _inside(add_intervals(fastbias.bias_metrics(y, s, g, sample_weight=w), y, s, g,
                              method="bootstrap", sample_weight=w, n_boot=30, random_state=0))
        ys = rng.random(len(y))
        gs = pd.DataFrame({"a": rng.random(len(y)), "b": rng.random(len(y))})
        t = fastbias.bias_metrics(ys, s, gs, label_threshold=0.6, subgroup_threshold=0.7)
        _inside(add_intervals(t, ys, s, gs, method="delong", label_threshold=0.6,
                              subgroup_threshold=0.7))
        yl = np.where(y == 1, "tox", "ok")
        _inside(add_intervals(fastbias.bias_metrics(yl, s, g, pos_label="tox"), yl, s, g,
                              method="delong", pos_label="tox"))
        g2 = g.assign(c=(y == 1) & (rng.random(len(y)) < 0.1))
        t = fastbias.bias_metrics(y, s, g2)
        assert np.isnan(t.loc["c", "subgroup_auc"])
        _inside(add_intervals(t, y, s, g2, method="delong"))
        for sc in (np.round(s * 3).astype(np.int64), s.astype(np.float16)):
            _inside(add_intervals(fastbias.bias_metrics(y, sc, g), y, sc, g, method="delong"))
        idx = np.arange(len(y))[::-1] * 3
        ys_, ss_, gg = pd.Series(y, index=idx), pd.Series(s, index=idx), g.set_index(pd.Index(idx))
        _inside(add_intervals(fastbias.bias_metrics(ys_, ss_, gg), ys_, ss_, gg, method="delong"))
        df = g.assign(y=y, m=s)
        res = fastbias.evaluate(df, label="y", scores="m", subgroups=["a", "b"])
        _inside(add_intervals(res.for_model("m"), y, s, g, method="delong"))


def test_add_intervals_refuses_other_inputs_and_second_call():
    """Held: a table of other scores, or without the weights it was made with, or with
    intervals already, is a ValueError."""
    rng, y, s, g = _data()
    w = rng.uniform(0.1, 5, len(y))
    t = fastbias.bias_metrics(y, s, g)
    with pytest.raises(ValueError, match="not of these inputs"):
        add_intervals(t, y, -s, g, method="delong")
    with pytest.raises(ValueError, match="not of these inputs"):
        add_intervals(fastbias.bias_metrics(y, s, g, sample_weight=w), y, s, g, method="delong")
    once = add_intervals(t, y, s, g, method="delong")
    with pytest.raises(ValueError, match="already has intervals"):
        add_intervals(once, y, s, g, method="bootstrap", n_boot=10)


def test_add_intervals_refuses_inputs_whose_counts_differ_from_the_table():
    """Found by review. The table of (y, s, g) given the rows twice over (y+y, s+s, g+g): every metric is
    the same, but the table's own count columns (subgroup_size, ...) are half the inputs', and the DeLong intervals attached are those of twice the data (standard errors
    / sqrt(2)), beside counts that do not support them. Right: a ValueError, as for other
    metrics (_check_table_of compares only the five metric columns, not
    subgroup_size/subgroup_negatives/... which the table carries)."""
    _, y, s, g = _data()
    t = fastbias.bias_metrics(y, s, g)
    y2, s2 = np.concatenate([y, y]), np.concatenate([s, s])
    g2 = pd.concat([g, g], ignore_index=True)
    assert int(t.loc["a", "subgroup_size"]) == int(g["a"].sum())  # hand count
    with pytest.raises(ValueError):
        add_intervals(t, y2, s2, g2, method="delong")
