"""Every code block of README.md and docs/*.md runs, or says where it is run instead.

A reader copies the blocks of a page into one session, in order, with their own data
under the names the page uses (``y_true``, ``df``, ``identity_frame``, ...). This test
does the same: ``PAGES`` lists, per file and in order, what each fenced block is:

* ``Run(before)``: Python, executed in the page's namespace (in a fresh working
  directory) after ``before(ns)`` adds the data the block names; any DeprecationWarning
  or FutureWarning while it runs fails it (a deprecated call in the docs; libraries such as
  LightGBM point theirs into their own code, not at the caller);
* ``Output(check)``: text a block prints or a message the library gives, which
  ``check`` reproduces and compares;
* ``Elsewhere(reason)``: run by another test or by CI, or needs what a test machine
  lacks (a remote cluster, root); the reason says which.

A block added, removed or changed in kind fails ``test_every_block_is_registered``, so
none can go stale unnoticed.
"""
from __future__ import annotations

import contextlib
import io
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fastbias

REPO_ROOT = Path(__file__).resolve().parents[1]
FENCE = "`" * 3


@dataclass
class Block:
    path: str
    line: int
    language: str
    code: str


def blocks_of(path: Path) -> list:
    """The fenced blocks of a Markdown file, with their first line and language."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        m = re.match(r"^\s*" + FENCE + r"(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(FENCE):
            j += 1
        found.append(Block(str(path.relative_to(REPO_ROOT)), i + 1, m.group(1),
                           "\n".join(lines[i + 1:j]) + "\n"))
        i = j + 1
    return found


@dataclass
class Run:
    before: object = None
    kind: str = "python"


@dataclass
class Output:
    check: object
    kind: str = "output"


@dataclass
class Elsewhere:
    reason: str
    kind: str = "elsewhere"


@dataclass
class Session:
    """A page's namespace, what each block printed and where the page runs."""

    ns: dict = field(default_factory=dict)
    printed: list = field(default_factory=list)


# ----------------------------------------------------------------------------- data the pages name

def arrays(ns, n=6_000, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    groups = pd.DataFrame({g: rng.random(n) < p for g, p in
                           [("male", 0.2), ("female", 0.25), ("black", 0.05), ("muslim", 0.04)]})
    score = np.round(1 / (1 + np.exp(-(2.0 * y - 1 + rng.normal(0, 1, n)
                                       + 0.6 * groups["black"].to_numpy()))), 3)
    ns.update(y_true=y, y_score=score, subgroups=groups, y=y, scores=score)


def kernel_frame(ns):
    """The Kaggle kernel's validation frame: booleans after convert_dataframe_to_bool."""
    df = fastbias.make_jigsaw_like(n_rows=50_000, n_identities=9, random_state=1)
    identity_columns = list(df.columns[1:10])
    frame = df[identity_columns].fillna(0) >= 0.5
    frame["target"] = df["toxicity"] >= 0.5
    frame["my_model"] = df["model_biased"]
    ns.update(validate_df=frame, identity_columns=identity_columns, MODEL_NAME="my_model",
              TOXICITY_COLUMN="target")


def report_frame(ns):
    df = fastbias.make_jigsaw_like(n_rows=40_000, n_identities=6, random_state=2)
    df = df.rename(columns={"model_fair": "model_a", "model_biased": "model_b"})
    ns.update(df=df, identity_columns=list(df.columns[1:7]))


def interval_frame(ns):
    arrays(ns)
    df = fastbias.make_jigsaw_like(n_rows=30_000, n_identities=2, random_state=3)
    ns["df"] = df.rename(columns={"model_fair": "m1", "model_biased": "m2"})


def scored_files(ns):
    """The files the streaming examples read from the working directory."""
    df = fastbias.make_jigsaw_like(n_rows=60_000, n_identities=16, random_state=4)
    df = df.rename(columns={"model_fair": "model_a", "model_biased": "model_b"})
    Path("scored").mkdir()
    for k in range(3):
        df.iloc[k::3].to_parquet(f"scored/part-{k}.parquet", index=False)
    df.to_csv("scored.csv.gz", index=False)


def evaluator_data(ns):
    arrays(ns, seed=5)
    rng = np.random.default_rng(6)
    ns.update(y_valid=ns["y_true"], identity_frame=ns["subgroups"],
              score_matrix=pd.DataFrame({f"model_{k}": rng.permutation(ns["y_score"])
                                         for k in range(3)}))


def fold_data(ns):
    from sklearn.linear_model import LogisticRegression

    arrays(ns, seed=7)
    rng = np.random.default_rng(8)
    X = np.column_stack([ns["y"] + rng.normal(0, 1.5, len(ns["y"])),
                         rng.normal(size=(len(ns["y"]), 3))])
    ns.update(X=X, groups=ns["subgroups"], model=LogisticRegression())


def boosting_data(ns, library):
    arrays(ns, seed=9)
    rng = np.random.default_rng(10)
    n = len(ns["y"])
    X = np.column_stack([ns["y"] + rng.normal(0, 1.5, n), rng.normal(size=(n, 3))])
    train, valid = np.arange(n) < 4_000, np.arange(n) >= 4_000
    ns.update(X=X[train], y=ns["y"][train], X_valid=X[valid], y_valid=ns["y"][valid],
              groups_valid=ns["subgroups"][valid].reset_index(drop=True))
    if library == "lightgbm":
        import lightgbm as lgb

        ns["dtrain"] = lgb.Dataset(ns["X"], ns["y"])
        ns["dvalid"] = lgb.Dataset(ns["X_valid"], ns["y_valid"], reference=ns["dtrain"])
    else:
        import xgboost as xgb

        ns["dtrain"] = xgb.DMatrix(ns["X"], ns["y"])
        ns["dvalid"] = xgb.DMatrix(ns["X_valid"], ns["y_valid"])
        ns["params"] = {"objective": "binary:logistic", "eval_metric": "logloss",
                        "disable_default_eval_metric": 1}


def needs(*modules):
    def before(ns):
        for module in modules:
            pytest.importorskip(module)
    return before


def chain(*steps):
    def before(ns):
        for step in steps:
            step(ns)
    return before


# ----------------------------------------------------------------------------- outputs

def numbers_close(expected: str, actual: str, tolerance: float):
    """Same words, numbers within ``tolerance`` (a fit may move the 4th decimal)."""
    exp, act = expected.split(), actual.split()
    assert len(exp) == len(act), f"expected\n{expected}\ngot\n{actual}"
    for e, a in zip(exp, act):
        try:
            assert abs(float(e) - float(a)) <= tolerance, f"{e} vs {a}\n{actual}"
        except ValueError:
            assert e == a, f"{e!r} vs {a!r}\n{actual}"


def selection_printout(block, session):
    """The table and the two choices the GridSearchCV example prints."""
    printed = session.printed[-1]
    numbers_close(block.code, printed, tolerance=0.003)
    choices = block.code.strip().splitlines()[-2:]
    assert choices == printed.strip().splitlines()[-2:]       # the two choices, exactly
    assert choices[0].startswith("best by auc: all words")
    assert choices[1].startswith("best by final: identity-blind words")


def omitted_rows_message(block, session):
    y_true = [0, 1, np.nan, 1, 0, 1, 0, 1, 0, 1]
    y_score = [0.1, np.nan, 0.3, np.inf, 0.2, 0.6, 0.4, 0.8, 0.3, 0.9]
    weight = [1, 1, 1, 1, np.nan, 1, 1, 1, 1, 1]
    with pytest.warns(fastbias.OmittedRowsWarning) as caught:
        fastbias.overall_auc(y_true, y_score, sample_weight=weight, nan_policy="omit")
    message = f"OmittedRowsWarning: {caught[0].message}"
    assert " ".join(block.code.split()) == " ".join(message.split())


def cli_errors(block, session, tmp_path, capsys):
    """Each documented error line, from the command that gives it."""
    from fastbias.cli import main

    rng = np.random.default_rng(11)
    n = 40
    data = pd.DataFrame({"toxicity": (rng.random(n) < 0.4).astype(float),
                         "model_a": rng.random(n), "model_b": rng.random(n),
                         "verdict": np.where(rng.random(n) < 0.4, "toxic", "fine"),
                         "male": (rng.random(n) < 0.3).astype(float)})
    data.loc[[5, 9], "model_b"] = np.nan
    data.loc[[0, 1], "verdict"] = ["fine", "toxic"]
    data.to_csv(tmp_path / "data.csv", index=False)
    base = ["report", str(tmp_path / "data.csv"), "--subgroups", "male"]
    commands = [["report", "scores.csv", "--label", "toxicity", "--scores", "model_a",
                 "--subgroups", "male"],
                [*base, "--label", "toxcity", "--scores", "model_a"],
                [*base, "--label", "toxicity", "--scores", "model_b"],
                [*base, "--label", "verdict", "--scores", "model_a"],
                [*base, "--label", "toxicity", "--scores", "model_a", "--out", "report.xlsx"]]
    documented = block.code.strip().splitlines()
    assert len(documented) == len(commands)
    for line, command in zip(documented, commands):
        capsys.readouterr()
        assert main(command) == 1
        said = [x for x in capsys.readouterr().err.splitlines() if x.startswith("fastbias: error")]
        assert len(said) == 1, said
        if line.endswith("..."):
            assert said[0].startswith(line[:-3]), (line, said[0])
        else:
            assert said[0] == line


def report_usage(block, session):
    """The synopsis names every option of ``fastbias report`` and no other."""
    from fastbias.cli import build_parser

    parser = build_parser()
    report = next(a for a in parser._actions if a.dest == "command").choices["report"]
    options = {s for a in report._actions for s in a.option_strings
               if s.startswith("--") and s != "--help"}
    shown = set(re.findall(r"--[a-z][a-z-]*", block.code))
    assert shown == options, (sorted(options - shown), sorted(shown - options))


def run_by_ci(block, session):
    """A command the docs say CI runs is, verbatim, a line of .ci/run."""
    ci_lines = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    assert block.code.strip() in ci_lines, f"{block.path}:{block.line} is not in .ci/run"


# ----------------------------------------------------------------------------- the registry

DEMO = "tests/test_cli.py runs `fastbias demo`; the install is the README's first command"
PAGES = {
    "README.md": [
        Elsewhere(DEMO), Output(run_by_ci),      # .ci/run runs it on a fresh machine
        Run(arrays), Run(kernel_frame), Run(needs("matplotlib")),
    ],
    "docs/aggregates.md": [Run(arrays), Run(kernel_frame)],
    "docs/architecture.md": [Elsewhere("a diagram of the stages, not code")],
    "docs/cli.md": [
        Elsewhere(DEMO),
        Output(report_usage),
        Output(cli_errors),
        Run(chain(needs("matplotlib"), report_frame)),
        Elsewhere("installs Debian packages as root (tests/test_browser.py skips without them)"),
    ],
    "docs/distributed.md": [
        Elsewhere("tests/test_dask.py runs this script verbatim as a file (spawned workers)"),
        Elsewhere("needs a remote Dask cluster and an S3 bucket; the same call runs on a "
                  "LocalCluster in tests/test_dask.py"),
        Run(chain(needs("pyarrow"), scored_files)),
        Run(),
    ],
    "docs/intersections.md": [Run()],
    "docs/intervals.md": [
        Run(interval_frame),
        Elsewhere("the output of benchmarks/coverage_study.py (about 12 minutes; its smaller "
                  "runs are in tests/test_intervals.py)"),
    ],
    "docs/model_selection.md": [
        Run(evaluator_data),
        Run(chain(needs("sklearn"), fold_data)),
        Run(needs("sklearn")),
        Output(selection_printout),
        Run(chain(needs("lightgbm"), lambda ns: boosting_data(ns, "lightgbm"))),
        Run(chain(needs("xgboost"), lambda ns: boosting_data(ns, "xgboost"))),
        Elsewhere("benchmark commands (timings are measured in benchmarks/, never in tests)"),
    ],
    "docs/sensitive_features.md": [Run()],
    "docs/significance.md": [Run()],
    "docs/thresholds.md": [Run()],
    "docs/validation.md": [
        Output(omitted_rows_message),
        Output(run_by_ci),
    ],
}
DOCUMENTS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def test_every_block_is_registered():
    found = {str(p.relative_to(REPO_ROOT)): blocks_of(p) for p in DOCUMENTS}
    found = {page: blocks for page, blocks in found.items() if blocks}
    assert sorted(found) == sorted(PAGES), "a page with code blocks was added or removed: " \
                                           "update PAGES"
    for page, blocks in found.items():
        kinds = [k.kind for k in PAGES[page]]
        listing = "\n".join(f"  {b.path}:{b.line} [{b.language}] {b.code.splitlines()[0][:70]}"
                            for b in blocks)
        assert len(blocks) == len(kinds), f"{page}: {len(blocks)} blocks, {len(kinds)} " \
                                          f"registered:\n{listing}"
        for block, kind in zip(blocks, kinds):   # Python runs here or elsewhere; text never runs
            allowed = {"python", "elsewhere"} if block.language == "python" else \
                {"output", "elsewhere"}
            assert kind in allowed, \
                f"{block.path}:{block.line} is [{block.language}] but registered as {kind}"


def run_block(block: Block, session: Session):
    code = compile(block.code, f"{block.path}:{block.line}", "exec")
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        exec(code, session.ns)
    session.printed.append(out.getvalue())
    # (LightGBM's own deprecation warnings point into lightgbm, not at the caller)
    stale = [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught
             if issubclass(w.category, (DeprecationWarning, FutureWarning))
             or "Deprecat" in w.category.__name__]
    assert not stale, f"{block.path}:{block.line} uses something deprecated: {stale}"


@pytest.mark.jit_heavy  # the pages evaluate up to 1.8M rows, as written
@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_runs_as_written(page, tmp_path, monkeypatch, capsys):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    sklearn = pytest.importorskip("sklearn")
    monkeypatch.chdir(tmp_path)
    session = Session()
    with sklearn.config_context():   # a block may switch on metadata routing
        for block, entry in zip(blocks_of(REPO_ROOT / page), PAGES[page]):
            if isinstance(entry, Run):
                if entry.before is not None:
                    entry.before(session.ns)
                run_block(block, session)
            elif isinstance(entry, Output):
                args = {"tmp_path": tmp_path, "capsys": capsys}
                wanted = entry.check.__code__.co_varnames[2:entry.check.__code__.co_argcount]
                entry.check(block, session, **{k: args[k] for k in wanted})
    if not any(isinstance(e, (Run, Output)) for e in PAGES[page]):
        pytest.skip(f"{page}: every block is run elsewhere")
