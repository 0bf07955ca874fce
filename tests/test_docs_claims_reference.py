"""Claims of the documentation, kept by the code: an independent review's tests
(2026-11-27, thirty-first session).

Found by review (each failed before its fix): ``evaluate`` dropped an explicit
``label_threshold`` beside ``pos_label`` without a word (docs/validation.md says a
ValueError, as ``bias_metrics`` gives); the CLI said nothing of the rows
``--nan-policy omit`` dropped (README: "a warning that counts them"); docs/validation.md
gave the CLI's bad numbers as data errors of status 1, which are usage errors (status 2).
"""
import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.cli import main


def _frame(n=60, seed=3):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"toxicity": (np.arange(n) % 2).astype(float),
                         "model_a": rng.random(n).round(3),
                         "model_b": rng.random(n).round(3),
                         "male": (np.arange(n) % 3 == 0).astype(float)})


def _cli(capsys, *args):
    try:
        status = main([str(a) for a in args])
    except SystemExit as exc:  # argparse's usage errors
        status = exc.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_evaluate_refuses_pos_label_with_label_threshold():
    """docs/validation.md, table row "`pos_label` and `label_threshold` together | `ValueError`"
    and the scorer row "... not both` (as everywhere ...)": bias_metrics raises, but evaluate
    takes both silently and drops the threshold (settings["label_threshold"] is None)."""
    df = _frame()
    with pytest.raises(ValueError, match="pos_label"):
        fastbias.evaluate(df, label="toxicity", scores="model_a", subgroups=["male"],
                          pos_label=1.0, label_threshold=0.3)


def test_cli_nan_policy_omit_says_how_many_rows_it_dropped(tmp_path, capsys):
    """README.md: nan_policy="omit" drops rows "with a warning that counts them"; docs/cli.md:
    "notes, warnings (...) go to stderr". The CLI catches the OmittedRowsWarning and prints
    nothing about the dropped rows on the terminal (only the HTML report's settings say it)."""
    df = _frame()
    df.loc[[5, 9], "model_b"] = np.nan
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    status, out, err = _cli(capsys, "report", path, "--label", "toxicity",
                            "--scores", "model_a", "model_b", "--subgroups", "male",
                            "--nan-policy", "omit")
    assert status == 0, err
    said = (out + err).lower()
    assert "dropped" in said or "left out" in said or "omitted" in said, err


@pytest.mark.parametrize("args, message", [
    (["--label-threshold", "inf"], "argument --label-threshold: must be finite, got inf"),
    (["--seed", "-3"], "argument --seed: must be 0 or more"),
])
def test_cli_bad_numbers_are_usage_errors_as_documented(args, message, tmp_path, capsys):
    """docs/validation.md's row "`--label-threshold inf`, `--seed -3`" (it had said status 1
    and another wording): usage errors, exit status 2, as docs/cli.md says of them."""
    path = tmp_path / "d.csv"
    _frame().to_csv(path, index=False)
    status, _, err = _cli(capsys, "report", path, "--label", "toxicity", "--scores", "model_a",
                          "--subgroups", "male", "-q", *args)
    assert status == 2, err
    assert message in err, err


def test_pos_label_with_a_label_threshold_is_refused_on_every_path(tmp_path, capsys):
    """As bias_metrics: a label threshold other than the default beside pos_label is an
    error on every path (it had been dropped without a word), the default passes."""
    df = _frame().assign(verdict=lambda d: np.where(d["toxicity"] > 0, "toxic", "ok"))
    kw = dict(label="verdict", scores="model_a", subgroups=["male"], pos_label="toxic")
    df.to_csv(tmp_path / "d.csv", index=False)
    for call in (lambda **k: fastbias.evaluate(df, **k),
                 lambda **k: fastbias.evaluate_csv(tmp_path / "d.csv", **k)):
        with pytest.raises(ValueError, match="either pos_label or label_threshold"):
            call(**kw, label_threshold=0.3)
        assert call(**kw, label_threshold=0.5).settings["label_threshold"] is None
    status, _, err = _cli(capsys, "report", tmp_path / "d.csv", "--label", "verdict",
                          "--scores", "model_a", "--subgroups", "male", "--positive", "toxic",
                          "--label-threshold", "0.3", "-q")
    assert status == 1 and "either --positive or --label-threshold, not both" in err, err
