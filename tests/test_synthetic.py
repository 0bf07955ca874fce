"""The generated data sets: what their docstrings promise, checked from the text itself."""
import numpy as np
import pandas as pd
import pytest

from fastbias.synthetic import MADLIBS_METRIC_GROUPS, MADLIBS_TERMS, make_madlibs_like


def test_madlibs_like_sentences_members_and_skew():
    data = make_madlibs_like(n_rows=None, random_state=3)
    words = data.text.str.lower().str.split()
    # "<name> is a <adjective> <identity>" or, hidden, "<name> is a <identity>"
    assert words.str.len().isin([4, 5]).all()
    assert (words.str[1] == "is").all() and (words.str[2] == "a").all()
    assert words.str[-1].isin(MADLIBS_TERMS).all()
    hidden = words.str.len() == 4
    assert 0.45 < hidden.mean() < 0.55
    # the adjective, where shown, carries the label
    bad = {"awful", "dumb", "nasty", "horrible", "stupid", "disgusting", "filthy", "terrible"}
    shown = ~hidden
    assert (words[shown].str[3].isin(bad).to_numpy() == data.toxic[shown.to_numpy()]).all()
    # membership = the identity word (brute force from the words)
    for group in MADLIBS_METRIC_GROUPS:
        expected = words.apply(lambda w, g=group: g in w).to_numpy()
        np.testing.assert_array_equal(data.subgroups[group].to_numpy(), expected, err_msg=group)
    assert list(data.subgroups.columns) == MADLIBS_METRIC_GROUPS
    assert data.subgroups.index.equals(data.text.index) and len(data.toxic) == len(data.text)
    # skew: ~90% of the clean "gay/muslim/black" and toxic "christian/white/straight" dropped
    share_toxic = {g: data.toxic[data.subgroups[g].to_numpy()].mean()
                   for g in MADLIBS_METRIC_GROUPS}
    for group in ["gay", "muslim", "black"]:
        assert share_toxic[group] > 0.85, share_toxic
    for group in ["christian", "white", "straight"]:
        assert share_toxic[group] < 0.15, share_toxic
    for group in ["lesbian", "jewish", "transgender"]:
        assert 0.4 < share_toxic[group] < 0.6, share_toxic


def test_madlibs_like_takes_the_real_layout_and_checks_it():
    sentences = pd.DataFrame({
        "Text": ["Ana is a kind gay person", "Ana is a nasty gay person", "murder gay",
                 "Bo is a nasty white", "Bo is a kind white"] * 20,
        "Label": ["NOT_BAD", "BAD", "BAD", "BAD", "NOT_BAD"] * 20,
        "Template": ["name_adj", "name_adj", "verb_adj", "name_adj", "name_adj"] * 20})
    data = make_madlibs_like(None, sentences=sentences, hidden_share=0.0, skew=0.0)
    assert len(data.text) == 80                                      # name_adj rows only
    assert set(data.text) == {"Ana is a kind gay person", "Ana is a nasty gay person",
                              "Bo is a nasty white", "Bo is a kind white"}
    assert data.subgroups["gay"].sum() == 40 and data.subgroups["white"].sum() == 40
    hidden = make_madlibs_like(None, sentences=sentences, hidden_share=1.0, skew=0.0)
    assert set(hidden.text) == {"Ana is a gay person", "Bo is a white"}
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['Label'\]"):
        make_madlibs_like(sentences=sentences.drop(columns="Label"))
    with pytest.raises(ValueError, match="lacks the metric identities"):
        make_madlibs_like(sentences=sentences, identity_terms=["gay", "white"])
    with pytest.raises(ValueError, match="skew must be in"):
        make_madlibs_like(skew=1.5)
    with pytest.raises(ValueError, match="only 80 sentences remain"):
        make_madlibs_like(81, sentences=sentences, hidden_share=0.0, skew=0.0)
    with pytest.raises(ValueError, match="n_rows must be an int"):
        make_madlibs_like(True)
