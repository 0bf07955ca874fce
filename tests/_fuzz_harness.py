"""Random fuzz across entry points against an independent brute force (review helper)."""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd

import fastbias
from fastbias.validate.errors import OmittedRowsWarning, UndefinedMetricWarning

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
COUNTS = ["subgroup_size", "subgroup_negatives", "subgroup_positives", "background_negatives",
          "background_positives"]
WEIGHT_COLS = ["subgroup_negative_weight", "subgroup_positive_weight",
               "background_negative_weight", "background_positive_weight"]
TH_COUNTS = ["subgroup_negatives", "subgroup_positives", "background_negatives",
             "background_positives", "subgroup_tp", "subgroup_fp", "background_tp",
             "background_fp"]


# ------------------------------------------------------------------ brute force

def _pair_prob(a_s, a_w, b_s, b_w):
    """P(s_b > s_a) + 1/2 P(=) over the weighted pairs (a, b), exactly (Fractions), or None."""
    wa = sum(Fraction(float(x)) for x in a_w)
    wb = sum(Fraction(float(x)) for x in b_w)
    if wa == 0 or wb == 0:
        return None
    num = Fraction(0)
    # group by score values for speed
    bs = {}
    for s, w in zip(b_s, b_w):
        bs[s] = bs.get(s, Fraction(0)) + Fraction(float(w))
    as_ = {}
    for s, w in zip(a_s, a_w):
        as_[s] = as_.get(s, Fraction(0)) + Fraction(float(w))
    for sa, wa_ in as_.items():
        for sb, wb_ in bs.items():
            if sb > sa:
                num += wa_ * wb_
            elif sb == sa:
                num += wa_ * wb_ / 2
    return num / (wa * wb)


def brute(spec, df, names):
    """{(model, subgroup): {metric: float or nan, counts...}}, {model: overall auc},
    {(model, t, subgroup): th counts}: from the raw rows of df, by the documented rules."""
    lab = df[spec["label"]]
    if spec["label_kind"] == "text":
        y = (lab == spec["pos_label"]).to_numpy()
    elif spec["label_kind"] == "frac":
        y = (lab.astype(float) >= spec["label_threshold"]).to_numpy()
    else:
        y = lab.astype(float).to_numpy() == 1.0
    w = (df[spec["weight"]].to_numpy(float) if spec["weight"] else np.ones(len(df)))
    st = spec["subgroup_threshold"]

    def member_of(name):
        parts = name.split(" & ")
        mem = np.ones(len(df), bool)
        ann = np.ones(len(df), bool)
        for p in parts:
            if "=" in p and p.split("=", 1)[0] in spec["sensitive"]:
                col, val = p.split("=", 1)
                v = df[col]
                a = v.notna().to_numpy()
                m = (v.astype(object).astype(str) == val).to_numpy() & a
            else:
                v = df[p]
                if v.dtype == bool:
                    m = v.to_numpy()
                    a = np.ones(len(df), bool)
                else:
                    x = v.astype(float).to_numpy()
                    a = ~np.isnan(x)
                    m = a & (np.nan_to_num(x, nan=-1.0) >= st)
            mem &= m
            ann &= a
        return mem, ann

    out, overall, th = {}, {}, {}
    for model in spec["models"]:
        s_all = df[model].to_numpy()
        keep = ~pd.isna(df[model]).to_numpy()
        if spec["nan_policy"] == "omit":
            keep &= np.isfinite(np.asarray(s_all, dtype=float))
        s = s_all
        ov = _pair_prob(s[keep & ~y], w[keep & ~y], s[keep & y], w[keep & y])
        overall[model] = float(ov) if ov is not None else math.nan
        for name in names:
            mem, ann = member_of(name)
            mem = mem & keep
            bg = ~mem & keep & (ann if spec["missing"] == "exclude" else True)
            gm, gp, bm, bp = mem & ~y, mem & y, bg & ~y, bg & y
            row = {
                "subgroup_size": int(mem.sum()), "subgroup_negatives": int(gm.sum()),
                "subgroup_positives": int(gp.sum()), "background_negatives": int(bm.sum()),
                "background_positives": int(bp.sum()),
            }
            sub = _pair_prob(s[gm], w[gm], s[gp], w[gp])
            bpsn = _pair_prob(s[gm], w[gm], s[bp], w[bp])
            bnsp = _pair_prob(s[bm], w[bm], s[gp], w[gp])
            # P(s(D-) > s(Dg-)): pairs (a in Dg-, b in D-)
            naeg = _pair_prob(s[gm], w[gm], s[bm], w[bm])
            paeg = _pair_prob(s[gp], w[gp], s[bp], w[bp])
            row["subgroup_auc"] = float(sub) if sub is not None else math.nan
            row["bpsn_auc"] = float(bpsn) if bpsn is not None else math.nan
            row["bnsp_auc"] = float(bnsp) if bnsp is not None else math.nan
            row["negative_aeg"] = float(Fraction(1, 2) - naeg) if naeg is not None else math.nan
            row["positive_aeg"] = float(Fraction(1, 2) - paeg) if paeg is not None else math.nan
            row["_w"] = [float(math.fsum(w[c])) for c in (gm, gp, bm, bp)]
            out[(model, name)] = row
            for t in spec["thresholds"] or []:
                tt = np.asarray(t).astype(np.asarray(s).dtype) if np.asarray(s).dtype.kind == "f" else t
                pred = np.zeros(len(df), bool)
                pred[keep] = np.asarray(s[keep]) >= tt
                th[(model, float(t), name)] = {
                    "subgroup_negatives": math.fsum(w[gm]), "subgroup_positives": math.fsum(w[gp]),
                    "background_negatives": math.fsum(w[bm]),
                    "background_positives": math.fsum(w[bp]),
                    "subgroup_tp": math.fsum(w[gp & pred]), "subgroup_fp": math.fsum(w[gm & pred]),
                    "background_tp": math.fsum(w[bp & pred]),
                    "background_fp": math.fsum(w[bm & pred])}
    return out, overall, th


# ------------------------------------------------------------------ random draws

def draw(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([20, 30, 50, 80, 150, 400], p=[.2, .2, .25, .2, .1, .05]))
    spec = {"seed": seed, "label": "y", "nan_policy": "raise"}
    df = pd.DataFrame(index=range(n))
    ybin = rng.random(n) < rng.uniform(0.2, 0.8)
    lk = str(rng.choice(["int", "bool", "frac", "text"]))
    spec["label_kind"] = lk
    spec["label_threshold"] = 0.5
    spec["pos_label"] = None
    if lk == "int":
        df["y"] = ybin.astype(np.int64)
    elif lk == "bool":
        df["y"] = ybin
    elif lk == "frac":
        lt = float(rng.choice([0.5, 0.3, 0.7, 0.25]))
        spec["label_threshold"] = lt
        df["y"] = np.round(rng.random(n) * 8) / 8
    else:
        spec["pos_label"] = "toxic"
        df["y"] = np.where(ybin, "toxic", "fine")
    nm = int(rng.integers(1, 4))
    spec["models"] = [f"m{i}" for i in range(nm)]
    for m in spec["models"]:
        sk = str(rng.choice(["ties", "f32", "neg", "zeros", "cont"]))
        if sk == "ties":
            v = rng.integers(0, int(rng.integers(2, 5)), n) / 4.0
        elif sk == "f32":
            v = (rng.random(n) * rng.choice([1, 3])).astype(np.float32)
            v[rng.random(n) < .3] = np.float32(0.1)
        elif sk == "neg":
            v = -rng.integers(0, 6, n) * 0.5 - 1.0
        elif sk == "zeros":
            v = rng.choice([-0.0, 0.0, 0.5, -0.5, 1.0], n)
        else:
            v = rng.normal(size=n)
        df[m] = v
    st = float(rng.choice([0.5, 0.5, 0.3, 0.75]))
    spec["subgroup_threshold"] = st
    spec["missing"] = str(rng.choice(["background", "exclude"]))
    ng = int(rng.integers(1, 5))
    groups = []
    for i in range(ng):
        g = f"g{i}"
        gk = str(rng.choice(["bool", "int", "frac", "nan", "one", "empty", "all", "oneclass",
                             "Int64", "boolean"]))
        p = rng.uniform(0.1, 0.6)
        if gk == "bool":
            df[g] = rng.random(n) < p
        elif gk == "int":
            df[g] = (rng.random(n) < p).astype(np.int64)
        elif gk == "frac":
            df[g] = np.round(rng.random(n) * 4) / 4 * (rng.random(n) < 2 * p)
        elif gk == "nan":
            x = (rng.random(n) < p).astype(float)
            x[rng.random(n) < 0.25] = np.nan
            df[g] = x
        elif gk in ("Int64", "boolean"):
            x = pd.array((rng.random(n) < p).astype(int), dtype="Int64")
            x[rng.random(n) < 0.2] = pd.NA
            df[g] = x.astype(gk)
        elif gk == "one":
            x = np.zeros(n)
            x[rng.integers(n)] = 1.0
            df[g] = x
        elif gk == "empty":
            df[g] = np.zeros(n)
        elif gk == "all":
            df[g] = np.ones(n)
        else:  # one class only
            df[g] = 0.0
            idx = np.flatnonzero(ybin if lk != "frac" else
                                 (df["y"].to_numpy() >= spec["label_threshold"]))
            sel = idx[rng.random(len(idx)) < 0.4]
            x = np.zeros(n)
            x[sel] = 1.0
            df[g] = x
        groups.append(g)
    spec["subgroups"] = groups
    spec["sensitive"] = []
    if rng.random() < 0.35:
        k = int(rng.integers(1, 3))
        for j in range(k):
            c = ["race", "gender"][j]
            vals = rng.choice(["a", "b", "c", None], n, p=[.4, .3, .2, .1]).astype(object)
            df[c] = vals
            spec["sensitive"].append(c)
    wk = str(rng.choice(["none", "none", "int", "frac", "zeros"]))
    spec["weight"] = None
    if wk != "none":
        if wk == "int":
            wv = rng.integers(1, 4, n).astype(float)
        elif wk == "frac":
            wv = rng.integers(1, 9, n) / 4.0
        else:
            wv = rng.integers(0, 3, n).astype(float)
        df["w"] = wv
        spec["weight"] = "w"
    spec["intersections"] = 2 if rng.random() < 0.3 else None
    spec["min_subgroup_size"] = int(rng.choice([1, 1, 2, 3]))
    spec["thresholds"] = (sorted(set(float(x) for x in rng.choice(
        [0.0, 0.1, 0.25, 0.5, 0.75, -1.0, -0.0], int(rng.integers(1, 3)))))
        if rng.random() < 0.35 else None)
    spec["significance"] = "holm" if rng.random() < 0.25 else None
    spec["ci"] = "delong" if rng.random() < 0.25 else None
    if rng.random() < 0.12:
        spec["nan_policy"] = "omit"
        m = spec["models"][0]
        x = df[m].to_numpy().copy()
        x[rng.random(n) < 0.1] = np.nan
        df[m] = x
    return spec, df


# ------------------------------------------------------------------ paths

def _kw(spec):
    kw = dict(label=spec["label"], scores=spec["models"],
              subgroups=spec["subgroups"], subgroup_threshold=spec["subgroup_threshold"],
              missing_subgroup=spec["missing"], sample_weight=spec["weight"],
              intersections=spec["intersections"], min_subgroup_size=spec["min_subgroup_size"],
              significance=spec["significance"], ci=spec["ci"], thresholds=spec["thresholds"],
              sensitive_features=spec["sensitive"] or None)
    if spec["label_kind"] == "text":
        kw["pos_label"] = spec["pos_label"]
    else:
        kw["label_threshold"] = spec["label_threshold"]
    return kw


def _tidy_from_result(res):
    tab = {}
    for rec in res.table.to_dict("records"):
        tab[(rec["model"], rec["subgroup"])] = rec
    th = {}
    if res.thresholds is not None:
        for rec in res.thresholds.to_dict("records"):
            th[(rec["model"], float(rec["threshold"]), rec["subgroup"])] = rec
    return tab, {k: float(v) for k, v in res.overall_auc.items()}, th


def run_paths(spec, df, tmp, which=None):
    """{path: (table, overall, thresholds) or an exception}."""
    import dask
    import dask.dataframe as dd

    import fastbias.dask as fdask

    kw = _kw(spec)
    out = {}
    omit = spec["nan_policy"] == "omit"

    def attempt(name, fn):
        if which is not None and name not in which:
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                warnings.simplefilter("ignore", OmittedRowsWarning)
                out[name] = fn()
        except Exception as exc:  # noqa: BLE001
            out[name] = exc

    attempt("evaluate", lambda: _tidy_from_result(fastbias.evaluate(
        df, nan_policy=spec["nan_policy"], **kw)))
    if spec["missing"] == "background" and not (spec["sensitive"] and spec["intersections"]):
        attempt("bias_metrics", lambda: _bias_metrics(spec, df))
        if not omit and spec["ci"] is None:
            attempt("BiasEvaluator", lambda: _evaluator(spec, df))
    if not omit:
        p = os.path.join(tmp, f"d{spec['seed']}.parquet")
        df.to_parquet(p)
        c = os.path.join(tmp, f"d{spec['seed']}.csv")
        df.to_csv(c, index=False)
        attempt("parquet", lambda: _tidy_from_result(fastbias.evaluate_parquet(
            p, bucket_rows=7, **kw)))
        attempt("csv", lambda: _tidy_from_result(fastbias.evaluate_csv(
            c, bucket_rows=7, **kw)))

        def on_dask():
            with dask.config.set(scheduler="synchronous"):
                return _tidy_from_result(fdask.evaluate(dd.from_pandas(df, npartitions=3), **kw))
        attempt("dask", on_dask)
        attempt("cli", lambda: _cli(spec, df, tmp, p, stream=False))
        attempt("cli_stream", lambda: _cli(spec, df, tmp, p, stream=True))
    else:
        c = os.path.join(tmp, f"d{spec['seed']}.parquet")
        df.to_parquet(c)
        attempt("cli", lambda: _cli(spec, df, tmp, c, stream=False))
    return out


def _groups_arg(spec, df):
    d = {g: df[g] for g in spec["subgroups"]}
    for c in spec["sensitive"]:
        d[c] = df[c]
    return d


def _bias_metrics(spec, df):
    tab, ov, th = {}, {}, {}
    for m in spec["models"]:
        kw = dict(sample_weight=(df[spec["weight"]] if spec["weight"] else None),
                  subgroup_threshold=spec["subgroup_threshold"], ci=spec["ci"],
                  nan_policy=spec["nan_policy"], intersections=spec["intersections"],
                  min_subgroup_size=spec["min_subgroup_size"],
                  significance=spec["significance"])
        if spec["label_kind"] == "text":
            kw["pos_label"] = spec["pos_label"]
        else:
            kw["label_threshold"] = spec["label_threshold"]
        t = fastbias.bias_metrics(df[spec["label"]], df[m], _groups_arg(spec, df), **kw)
        for name, rec in t.to_dict("index").items():
            tab[(m, name)] = rec
        ov[m] = float(t.attrs["overall_auc"])
        if spec["thresholds"]:
            kw2 = {k: kw[k] for k in ("sample_weight", "subgroup_threshold", "nan_policy")}
            kw2.update({k: kw[k] for k in ("pos_label", "label_threshold") if k in kw})
            tt = fastbias.threshold_metrics(df[spec["label"]], df[m], _groups_arg(spec, df),
                                            thresholds=spec["thresholds"], **kw2)
            for (thr, name), rec in tt.to_dict("index").items():
                th[(m, float(thr), name)] = rec
    return tab, ov, th


def _evaluator(spec, df):
    kw = dict(sample_weight=(df[spec["weight"]] if spec["weight"] else None),
              subgroup_threshold=spec["subgroup_threshold"],
              intersections=spec["intersections"], min_subgroup_size=spec["min_subgroup_size"])
    if spec["label_kind"] == "text":
        kw["pos_label"] = spec["pos_label"]
    else:
        kw["label_threshold"] = spec["label_threshold"]
    ev = fastbias.BiasEvaluator(df[spec["label"]], _groups_arg(spec, df), **kw)
    tab, ov = {}, {}
    for m in spec["models"]:
        t = ev.metrics(df[m], significance=spec["significance"])
        for name, rec in t.to_dict("index").items():
            tab[(m, name)] = rec
        ov[m] = float(t.attrs["overall_auc"])
    return tab, ov, {}


@contextlib.contextmanager
def cli_streaming(batch_rows: int | None):
    """Inside, the CLI streams whatever the data's size, in batches of ``batch_rows`` rows
    (buckets of 7); yields the arguments to add (none where ``batch_rows`` is None)."""
    import fastbias.cli as cli

    if batch_rows is None:
        yield []
        return
    saved = (cli._resident_memory, cli.KERNEL_RESERVE, cli._row_bytes, cli._streaming_settings)
    try:
        cli._resident_memory = lambda: 0
        cli.KERNEL_RESERVE = 0
        cli._row_bytes = lambda args, n: 10 ** 9
        cli._streaming_settings = lambda *a, **k: (batch_rows, 7)
        yield ["--max-memory", "64M"]
    finally:
        (cli._resident_memory, cli.KERNEL_RESERVE, cli._row_bytes,
         cli._streaming_settings) = saved


def _cli(spec, df, tmp, path, stream):
    import fastbias.cli as cli

    outp = os.path.join(tmp, f"o{spec['seed']}{'s' if stream else 'm'}.json")
    argv = ["report", path, "--label", spec["label"], "--scores", *spec["models"],
            "--subgroups", *spec["subgroups"], "--out", outp, "--force", "--progress", "never",
            "--subgroup-threshold", repr(spec["subgroup_threshold"]),
            "--missing-subgroup", spec["missing"]]
    if spec["label_kind"] == "text":
        argv += ["--positive", spec["pos_label"]]
    else:
        argv += ["--label-threshold", repr(spec["label_threshold"])]
    if spec["weight"]:
        argv += ["--weight", spec["weight"]]
    if spec["ci"]:
        argv += ["--ci", spec["ci"]]
    if spec["significance"]:
        argv += ["--significance", spec["significance"]]
    if spec["intersections"]:
        argv += ["--intersections", str(spec["intersections"])]
    if spec["intersections"] or spec["sensitive"]:  # (refused where nothing uses it)
        argv += ["--min-subgroup-size", str(spec["min_subgroup_size"])]
    if spec["sensitive"]:
        argv += ["--sensitive-features", *spec["sensitive"]]
    if spec["thresholds"]:
        argv += ["--thresholds", *[repr(t) for t in spec["thresholds"]]]
    if spec["nan_policy"] == "omit":
        argv += ["--nan-policy", "omit"]
    err = io.StringIO()
    with cli_streaming(11 if stream else None) as extra:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(argv + extra)
    if status != 0:
        raise RuntimeError(f"cli status {status}: {err.getvalue()[-800:]}")
    if stream and "streaming it" not in err.getvalue():
        raise RuntimeError("cli did not stream")
    data = json.loads(open(outp).read())
    tab, ov, th = {}, {}, {}
    for mod in data["models"]:
        ov[mod["name"]] = mod["overall_auc"] if mod["overall_auc"] is not None else math.nan
        for rec in mod["subgroups"]:
            rec = {k: (math.nan if v is None else v) for k, v in rec.items()}
            tab[(mod["name"], rec["subgroup"])] = rec
        for rec in mod.get("thresholds") or []:
            rec = {k: (math.nan if v is None else v) for k, v in rec.items()}
            th[(mod["name"], float(rec["threshold"]), rec["subgroup"])] = rec
    return tab, ov, th


# ------------------------------------------------------------------ comparison

def _close(a, b, tol=1e-12):
    a = float(a) if a is not None else math.nan
    b = float(b) if b is not None else math.nan
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol * max(1.0, abs(b))


def compare(spec, df, results, stats=None):
    """A list of problem strings."""
    probs = []
    stats = stats if stats is not None else {}
    ok = {k: v for k, v in results.items() if not isinstance(v, Exception)}
    for k, v in results.items():
        if isinstance(v, Exception):
            probs.append(f"{k}: raised {type(v).__name__}: {str(v)[:300]}")
    if not ok:
        return probs
    # names: every path must list the same subgroups in the same order per model
    all_names = set()
    for m in spec["models"]:
        names_by = {k: [key[1] for key in v[0] if key[0] == m] for k, v in ok.items()}
        base = names_by.get("evaluate") or next(iter(names_by.values()))
        for k, nms in names_by.items():
            all_names |= set(nms)
            if nms != base and set(nms) != set(base):
                probs.append(f"{k}: {m} subgroups {nms} != evaluate's {base}")
            elif nms != base:
                probs.append(f"{k}: {m} subgroup order {nms} != {base}")
    all_names = sorted(all_names)
    ref, ref_ov, ref_th = brute(spec, df, all_names)
    for k, (tab, ov, th) in ok.items():
        for m in spec["models"]:
            stats["values"] = stats.get("values", 0) + 1
            if not _close(ov.get(m, math.nan), ref_ov[m]):
                probs.append(f"{k}: overall_auc[{m}] {ov.get(m)} != {ref_ov[m]}")
        for key, rec in tab.items():
            r = ref[key]
            for c in METRICS:
                stats["values"] = stats.get("values", 0) + 1
                if not _close(rec.get(c, math.nan), r[c]):
                    probs.append(f"{k}: {key} {c} {rec.get(c)} != brute {r[c]}")
            for c in COUNTS:
                if c in rec:
                    stats["values"] = stats.get("values", 0) + 1
                    if rec[c] != r[c]:
                        probs.append(f"{k}: {key} {c} {rec[c]} != brute {r[c]}")
            if spec["weight"]:
                for c, rv in zip(WEIGHT_COLS, r["_w"]):
                    if c in rec and not _close(rec[c], rv):
                        probs.append(f"{k}: {key} {c} {rec[c]} != brute {rv}")
        if spec["thresholds"] and k != "BiasEvaluator":
            want = {key for key in ref_th if key[2] in {kk[1] for kk in tab}
                    and (k != "bias_metrics" or " & " not in key[2] or
                         any(n.startswith(c + "=") for c in spec["sensitive"]
                             for n in key[2].split(" & ")))}
            if {key for key in th if key[2] in {kk[1] for kk in tab}} != want:
                probs.append(f"{k}: threshold rows {sorted(set(th) ^ want)[:6]} differ")
            for key, rec in th.items():
                if key not in ref_th or key[2] not in {kk[1] for kk in tab}:
                    continue
                for c in TH_COUNTS:
                    stats["values"] = stats.get("values", 0) + 1
                    if not _close(rec.get(c, math.nan), ref_th[key][c]):
                        probs.append(f"{k}: th {key} {c} {rec.get(c)} != brute {ref_th[key][c]}")
    # path vs path for intervals and p-values
    MEM = ["evaluate", "bias_metrics", "BiasEvaluator", "cli"]
    OOC = ["parquet", "csv", "dask", "cli_stream"]
    ci_cols = [f"{m}_{s}" for m in METRICS for s in ("low", "high", "se")] if spec["ci"] else []
    p_cols = [f"{m}_pvalue" for m in METRICS] if spec["significance"] else []
    adj_cols = ([f"{m}_pvalue_adjusted" for m in METRICS] + [f"{m}_significant" for m in METRICS]
                if spec["significance"] else [])

    def big(key):  # every cell >= 30 rows: the same test in memory and out of core
        r = ref[key]
        return min(r["subgroup_negatives"], r["subgroup_positives"], r["background_negatives"],
                   r["background_positives"]) >= 30

    def cmp(a, b, cols, keys):
        ta, tb = ok[a][0], ok[b][0]
        for key in keys:
            if key not in ta or key not in tb:
                continue
            for c in cols:
                if c not in ta[key] and c not in tb[key]:
                    continue
                stats["values"] = stats.get("values", 0) + 1
                va, vb = ta[key].get(c, "missing"), tb[key].get(c, "missing")
                if c.endswith("_significant"):
                    if bool(va) != bool(vb):
                        probs.append(f"{a}: {key} {c} {va} != {b} {vb}")
                elif isinstance(va, str) or isinstance(vb, str) or not _close(va, vb, 1e-9):
                    probs.append(f"{a}: {key} {c} {va} != {b} {vb}")

    for group in (MEM, OOC):
        present = [k for k in group if k in ok]
        for k in present[1:]:
            cmp(k, present[0], ci_cols + p_cols + adj_cols, list(ok[k][0]))
    mem = [k for k in MEM if k in ok]
    ooc = [k for k in OOC if k in ok]
    if mem and ooc:
        keys = list(ok[mem[0]][0])
        cmp(ooc[0], mem[0], ci_cols, keys)
        cmp(ooc[0], mem[0], p_cols, [k for k in keys if big(k)])
        if all(big(k) for k in keys):
            cmp(ooc[0], mem[0], adj_cols, keys)
    return probs
