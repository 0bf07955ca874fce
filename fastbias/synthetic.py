"""A Jigsaw-sized synthetic evaluation set, for demos, benchmarks and tests.

The layout follows the Civil Comments / Jigsaw Unintended Bias data
(Borkan et al. 2019, section 4): a float toxicity fraction, 24 float identity
columns that are NaN where a comment was not annotated for identities, and
model scores with ties (scores rounded, as production APIs return them).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .validate.values import at_or_above

JIGSAW_ROWS = 1_804_875

#: The 24 identity columns of the Jigsaw Unintended Bias data set.
JIGSAW_IDENTITIES = [
    "male", "female", "transgender", "other_gender",
    "heterosexual", "homosexual_gay_or_lesbian", "bisexual", "other_sexual_orientation",
    "christian", "jewish", "muslim", "hindu", "buddhist", "atheist", "other_religion",
    "black", "white", "asian", "latino", "other_race_or_ethnicity",
    "physical_disability", "intellectual_or_learning_disability",
    "psychiatric_or_mental_illness", "other_disability",
]


def make_jigsaw_like(n_rows: int = JIGSAW_ROWS, n_identities: int = 24, *,
                     toxic_fraction: float = 0.08, annotated_fraction: float = 0.25,
                     identity_fraction_range=(0.001, 0.03), biased_identities=None,
                     bias_shift: float = 0.8, score_decimals: int | None = 3,
                     score_dtype=np.float32, random_state=0) -> pd.DataFrame:
    """Generate a Jigsaw-layout data set with a fair and a biased model.

    Parameters
    ----------
    n_rows : int, default 1,804,875
        Rows (the size of the Jigsaw Unintended Bias training set).
    n_identities : int, default 24
        Identity columns; the first 24 carry Jigsaw's names, more are
        ``identity_24``, ...
    toxic_fraction : float, default 0.08
        Approximate share of toxic rows (``toxicity >= 0.5``) outside identities.
    annotated_fraction : float, default 0.25
        Share of rows annotated for identity; the others have NaN identities.
    identity_fraction_range : (float, float), default (0.001, 0.03)
        Each identity covers a log-uniform share of all rows in this range (at
        most ``annotated_fraction``); identities overlap at random. Identity rows are more often toxic.
    biased_identities : list of str, optional
        Identities on which ``model_biased`` shifts scores up (default: every
        other identity).
    bias_shift : float, default 0.8
        Logit shift of ``model_biased`` on rows of the biased identities.
    score_decimals : int or None, default 3
        Scores are rounded to this many decimals, which creates ties; None
        keeps them continuous (almost all distinct in float32).
    score_dtype : numpy dtype, default float32
    random_state : int, default 0

    Returns
    -------
    pandas.DataFrame
        Columns ``toxicity`` (float fraction), the identity columns (float
        fraction of annotators, NaN if not annotated), ``model_fair`` and
        ``model_biased`` (scores in [0, 1]).

    Examples
    --------
    >>> from fastbias.synthetic import make_jigsaw_like
    >>> df = make_jigsaw_like(n_rows=10_000, n_identities=3, random_state=0)
    >>> list(df.columns)
    ['toxicity', 'male', 'female', 'transgender', 'model_fair', 'model_biased']
    >>> bool(df["male"].isna().any())
    True
    """
    # (found by review: a share outside (0, 1) gave no toxic row, bias_shift=inf NaN scores
    # of both models, a range the annotated rows cannot hold shares below it; each silently)
    for name, value, least in (("n_rows", n_rows, 1), ("n_identities", n_identities, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
    _check_share("toxic_fraction", toxic_fraction, "(0, 1)", one=False)
    _check_share("annotated_fraction", annotated_fraction, "(0, 1]", one=True)
    try:
        lo, hi = (float(v) for v in identity_fraction_range)
    except (TypeError, ValueError):
        raise ValueError(f"identity_fraction_range must be two shares (low, high), got "
                         f"{identity_fraction_range!r}") from None
    if not 0 < lo <= hi <= annotated_fraction:
        raise ValueError(f"identity_fraction_range must satisfy 0 < low <= high <= "
                         f"annotated_fraction ({annotated_fraction!r}: identities are among "
                         f"the annotated rows), got {identity_fraction_range!r}")
    if not np.isfinite(bias_shift):
        raise ValueError(f"bias_shift must be a finite logit shift, got {bias_shift!r}")
    rng = np.random.default_rng(random_state)
    names = [JIGSAW_IDENTITIES[j] if j < len(JIGSAW_IDENTITIES) else f"identity_{j}"
             for j in range(n_identities)]
    if biased_identities is None:
        biased_identities = names[::2]
    if isinstance(biased_identities, str):
        raise TypeError(f"biased_identities must be a list of identity names, got the string "
                        f"{biased_identities!r} (write [{biased_identities!r}])")
    unknown = sorted(set(biased_identities) - set(names))
    if unknown:
        raise ValueError(f"biased_identities {unknown} are not among the identity columns")

    annotated = rng.random(n_rows) < annotated_fraction
    shares = np.exp(rng.uniform(np.log(lo), np.log(hi), n_identities))
    base_logit = np.log(toxic_fraction / (1 - toxic_fraction))
    logit = np.full(n_rows, base_logit)
    bias = np.zeros(n_rows)
    identity_values = {}
    for j, name in enumerate(names):
        member_rate = min(shares[j] / annotated_fraction, 1.0)
        member = annotated & (rng.random(n_rows) < member_rate)
        values = np.where(member, rng.uniform(0.5, 1.0, n_rows),
                          np.where(rng.random(n_rows) < 0.1, rng.uniform(0.0, 0.45, n_rows), 0.0))
        values[~annotated] = np.nan
        identity_values[name] = np.round(values, 2)
        logit += 0.7 * member  # identity mentions are more often toxic
        if name in biased_identities:
            bias += bias_shift * member
    toxic = rng.random(n_rows) < 1.0 / (1.0 + np.exp(-logit))
    toxicity = np.where(toxic, rng.uniform(0.5, 1.0, n_rows),
                        np.where(rng.random(n_rows) < 0.3, rng.uniform(0.0, 0.45, n_rows), 0.0))
    latent = -2.6 + 3.0 * toxic + rng.normal(0.0, 1.0, n_rows)
    data = {"toxicity": np.round(toxicity, 4)}
    data.update(identity_values)
    for model, shift in (("model_fair", 0.0), ("model_biased", 1.0)):
        noise = rng.normal(0.0, 0.35, n_rows)
        score = 1.0 / (1.0 + np.exp(-(latent + noise + shift * bias)))
        if score_decimals is not None:
            score = np.round(score, score_decimals)
        data[model] = score.astype(score_dtype)
    return pd.DataFrame(data)


def _check_share(name: str, value, interval: str, one: bool) -> None:
    """A ValueError naming ``name`` unless ``value`` is a number in (0, 1) (``one``: 1 too)."""
    try:
        share = float(value)
    except (TypeError, ValueError):
        share = np.nan
    if isinstance(value, bool) or not (0 < share < 1 or (one and share == 1)):
        raise ValueError(f"{name} must be in {interval}, got {value!r}")


def to_arrays(df: pd.DataFrame, *, label: str = "toxicity", score: str = "model_fair",
              subgroups=None, threshold: float = 0.5):
    """Binary labels, scores and an (n, k) boolean membership array from a Jigsaw-layout frame.

    Examples
    --------
    >>> from fastbias.synthetic import make_jigsaw_like, to_arrays
    >>> y, s, groups = to_arrays(make_jigsaw_like(n_rows=1_000, n_identities=2))
    >>> y.dtype, s.dtype, groups.shape
    (dtype('bool'), dtype('float32'), (1000, 2))
    """
    if subgroups is None:
        subgroups = [c for c in df.columns if c in JIGSAW_IDENTITIES or c.startswith("identity_")]
    y = at_or_above(df[label].to_numpy(), threshold)  # (as fastbias reads labels)
    s = df[score].to_numpy()
    groups = np.column_stack([at_or_above(df[c].to_numpy(), threshold) for c in subgroups]) \
        if subgroups \
        else np.zeros((len(df), 0), dtype=bool)
    return y, s, groups


#: Identity terms of the generated template sentences (:func:`make_madlibs_like`).
MADLIBS_TERMS = ["gay", "lesbian", "muslim", "jewish", "christian", "black", "white",
                 "transgender", "straight", "american", "canadian", "sikh", "buddhist",
                 "catholic", "asian", "latino", "european", "young", "old", "queer"]
#: The nine identities the bias metrics of :func:`make_madlibs_like` are computed over.
MADLIBS_METRIC_GROUPS = ["gay", "lesbian", "muslim", "jewish", "christian", "black", "white",
                         "transgender", "straight"]
_MOSTLY_TOXIC = ["gay", "muslim", "black"]
_MOSTLY_CLEAN = ["christian", "white", "straight"]


@dataclass(frozen=True)
class MadlibsData:
    """Skewed template sentences for model selection (see :func:`make_madlibs_like`)."""

    text: pd.Series           #: the sentences
    toxic: np.ndarray         #: bool label, one per sentence
    subgroups: pd.DataFrame   #: bool membership of the nine metric identities
    identity_terms: list      #: every identity term (e.g. stop words for an identity-blind model)


def make_madlibs_like(n_rows: int | None = 30_000, *, sentences: pd.DataFrame | None = None,
                      identity_terms=None, hidden_share: float = 0.5, skew: float = 0.9,
                      random_state=0) -> MadlibsData:
    """Template sentences where selecting by AUC and by the bias metrics disagree.

    The sentences follow the "name_adj" template of Dixon et al. (2018)'s
    madlibs set, ``"<name> is a <adjective> <identity>"``, labelled toxic by the
    adjective. To make the label depend on identity words as it does in real
    comments, the adjective is removed from ``hidden_share`` of the sentences,
    and a share ``skew`` of the non-toxic sentences about *gay*, *muslim* or
    *black* and of the toxic ones about *christian*, *white* or *straight* is
    dropped. A model that learns the identity words then gains overall AUC and
    loses worst-subgroup BPSN/BNSP AUC, so plain AUC and the Jigsaw final
    metric pick different candidates (docs/model_selection.md).

    Parameters
    ----------
    n_rows : int or None, default 30,000
        Sentences returned (after the skew), shuffled; None keeps all. Asking
        for more than remain is a ValueError (72,000 generated sentences
        leave about 62,000).
    sentences : DataFrame, optional
        The real madlibs set (``bias_madlibs_77k.csv``: columns ``Text``,
        ``Label`` with ``"BAD"`` for toxic, and ``Template``, of which the
        ``"name_adj"`` rows are used). Default: 72,000 generated sentences.
    identity_terms : list of str, optional
        Every identity term of ``sentences`` (default :data:`MADLIBS_TERMS`),
        returned for uses such as the stop words of an identity-blind model;
        it must hold the nine :data:`MADLIBS_METRIC_GROUPS`, whose
        memberships are computed (a sentence belongs to a group when the term
        is a whole word of it).
    hidden_share, skew : float in [0, 1]
    random_state : int, default 0

    Returns
    -------
    MadlibsData
        ``text`` (Series), ``toxic`` (bool array), ``subgroups`` (bool
        DataFrame of :data:`MADLIBS_METRIC_GROUPS`, aligned with ``text``,
        index 0..n-1) and ``identity_terms``.

    Examples
    --------
    >>> from fastbias.synthetic import make_madlibs_like
    >>> data = make_madlibs_like(n_rows=1_000, random_state=0)
    >>> len(data.text), data.subgroups.shape
    (1000, (1000, 9))
    >>> data.text.iloc[0]
    'Maria is a white'
    >>> bool(data.toxic[0]), bool(data.subgroups.loc[0, "white"])
    (False, True)
    """
    for name, value in [("hidden_share", hidden_share), ("skew", skew)]:
        if not 0 <= value <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    if n_rows is not None and (isinstance(n_rows, bool) or not isinstance(
            n_rows, (int, np.integer)) or n_rows < 1):
        raise ValueError(f"n_rows must be an int >= 1 or None, got {n_rows!r}")
    rng = np.random.default_rng(random_state)
    terms = list(MADLIBS_TERMS if identity_terms is None else identity_terms)
    if sentences is None:
        n = 72_000
        names = ["Alex", "Sam", "Maria", "Wei", "Omar", "Priya", "Jonas", "Aiko", "Kofi", "Lena"]
        bad = ["awful", "dumb", "nasty", "horrible", "stupid", "disgusting", "filthy", "terrible"]
        nice = ["kind", "great", "caring", "nice", "lovely", "wonderful", "gracious", "happy"]
        toxic = rng.random(n) < 0.5
        adjective = np.where(toxic, rng.choice(bad, n), rng.choice(nice, n))
        text = pd.Series([f"{who} is a {adj} {term}" for who, adj, term in
                          zip(rng.choice(names, n), adjective, rng.choice(MADLIBS_TERMS, n))])
    else:
        missing = [c for c in ("Text", "Label") if c not in sentences.columns]
        if missing:
            raise ValueError(f"sentences lacks column(s) {missing} (the madlibs layout: Text, "
                             f"Label, Template)")
        if "Template" in sentences.columns:
            sentences = sentences[sentences["Template"] == "name_adj"]
        text = sentences["Text"].astype(str).reset_index(drop=True)
        toxic = (sentences["Label"] == "BAD").to_numpy()
    missing = [g for g in MADLIBS_METRIC_GROUPS if g not in terms]
    if missing:
        raise ValueError(f"identity_terms lacks the metric identities {missing}")
    # "<name> is a <adjective> <identity...>": hide the adjective in some sentences
    parts = text.str.split(" ", n=4)
    hidden = (rng.random(len(text)) < hidden_share) & (parts.str.len() == 5).to_numpy()
    shown = pd.Series(np.where(hidden, parts.str[0] + " is a " + parts.str[4], text))
    lower = text.str.lower()
    members = pd.DataFrame({t: lower.str.contains(r"\b" + re.escape(t) + r"\b", regex=True)
                            for t in dict.fromkeys(_MOSTLY_TOXIC + _MOSTLY_CLEAN
                                                   + MADLIBS_METRIC_GROUPS)})
    drop = ((members[_MOSTLY_TOXIC].any(axis=1).to_numpy() & ~toxic)
            | (members[_MOSTLY_CLEAN].any(axis=1).to_numpy() & toxic)) \
        & (rng.random(len(text)) < skew)
    kept = np.flatnonzero(~drop)
    if n_rows is not None and n_rows > kept.shape[0]:
        raise ValueError(f"n_rows={n_rows:,} but only {kept.shape[0]:,} sentences remain after "
                         f"the skew (of {len(text):,}); ask for fewer, or pass n_rows=None")
    rows = rng.permutation(kept)[:n_rows]
    return MadlibsData(text=shown.iloc[rows].reset_index(drop=True), toxic=toxic[rows].copy(),
                       subgroups=members[MADLIBS_METRIC_GROUPS].iloc[rows].reset_index(drop=True),
                       identity_terms=terms)
