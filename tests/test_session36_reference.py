"""Inputs found wrong or refused wrongly in the thirty-sixth session (2026-11-27), each test
failing before its fix, against sklearn's ``roc_auc_score`` on the right rows."""
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias.cli as cli
from fastbias.cli import main


def _label_file(tmp_path):
    """A CSV whose text label ("0" and "toxic") holds only "0" in its first 300 rows, with
    3,000 empty columns besides: pandas' C reader then parses 256 lines at a time, and a
    column of numbers in some and text in others comes out mixed (0 beside '0')."""
    rng = np.random.default_rng(3)
    n = 600
    y = np.where(np.arange(n) < 300, "0", np.where(np.arange(n) % 2, "toxic", "0"))
    df = pd.DataFrame({"y": y, "s": np.round(rng.random(n), 1), "g": rng.random(n) < 0.4})
    pad = pd.DataFrame(np.full((n, 3000), np.nan), columns=[f"x{i}" for i in range(3000)])
    path = tmp_path / "d.csv"
    pd.concat([df, pad], axis=1).to_csv(path, index=False)
    return path, df


@pytest.mark.parametrize("streamed", [False, True])
def test_text_label_reads_as_text_in_memory_as_streamed(tmp_path, capsys, monkeypatch,
                                                        streamed):
    """In memory the label was read as pandas types it, part of it as the number 0 and part
    as the text '0', and the report refused the file as holding three labels ("'0', '0',
    'toxic'"). Streamed, the label was already read as its text; now one rule reads both."""
    path, df = _label_file(tmp_path)
    if streamed:  # (every row taken as 10 TB: over any budget, so streamed in batches of 10)
        monkeypatch.setattr(cli, "_row_bytes", lambda args, n: 10 ** 13)
        monkeypatch.setattr(cli, "_streaming_settings", lambda *a, **kw: (10, 100_000))
    rc = main(["report", str(path), "--label", "y", "--positive", "toxic", "--scores", "s",
               "--subgroups", "g", "--out", str(tmp_path / "o.csv"), "--progress", "never"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert ("streaming" in err) == streamed, err
    out = pd.read_csv(tmp_path / "o.csv")
    y = (df["y"] == "toxic").to_numpy()
    s = df["s"].to_numpy()
    member = df["g"].to_numpy()
    assert out.overall_auc.iloc[0] == pytest.approx(roc_auc_score(y, s), abs=1e-15)
    assert out.subgroup_auc.iloc[0] == pytest.approx(
        roc_auc_score(y[member], s[member]), abs=1e-15)


@pytest.mark.parametrize("positive", ["1", "1.0", "0", "ok"])
def test_label_of_numbers_written_two_ways_beside_text(tmp_path, capsys, positive):
    """A text label read as text under --positive: number texts are numbers value by value,
    so "1" and "1.0" are one class (as pandas reads a column of numbers) and "0" is 0 beside
    "ok"; a label of 0/1 written "1" and "1.0" stays two classes."""
    rng = np.random.default_rng(5)
    n = 60
    y = rng.random(n) < 0.5
    labels = np.where(y, np.where(np.arange(n) % 2, "1", "1.0"), "0")
    df = pd.DataFrame({"y": labels, "s": np.round(rng.random(n), 1), "g": rng.random(n) < 0.4})
    if positive == "ok":
        df["y"] = np.where(y, "0", "ok")
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    rc = main(["report", str(path), "--label", "y", "--positive", positive, "--scores", "s",
               "--subgroups", "g", "--out", str(tmp_path / "o.csv"), "--progress", "never"])
    err = capsys.readouterr().err
    if positive in ("ok", "0"):  # the positives are then the rows written so
        y = ~y
    assert rc == 0, err
    out = pd.read_csv(tmp_path / "o.csv")
    assert out.overall_auc.iloc[0] == pytest.approx(roc_auc_score(y, df["s"]), abs=1e-15)
