"""Independent brute-force references (fractions) for tests/test_paired_bernstein_reference.py."""
import math
from fractions import Fraction as F


def _psi(x, y):
    return F(1) if x > y else (F(1, 2) if x == y else F(0))


def delong_parts(xa, xb, wx, ya, yb, wy):
    """X sample (scores under models a, b; weights), Y sample. theta = P(X > Y) + 1/2 P(=).
    Returns dict with theta_a, theta_b, var_a, var_b, cov (Fractions or None)."""
    Wx, Wy = sum(wx, F(0)), sum(wy, F(0))
    if Wx <= 0 or Wy <= 0:
        return None
    out = {}
    V10 = {}
    V01 = {}
    for m, (xs, ys) in (("a", (xa, ya)), ("b", (xb, yb))):
        v10 = [sum((wy[j] * _psi(xs[i], ys[j]) for j in range(len(ys))), F(0)) / Wy
               for i in range(len(xs))]
        v01 = [sum((wx[i] * _psi(xs[i], ys[j]) for i in range(len(xs))), F(0)) / Wx
               for j in range(len(ys))]
        theta = sum((wx[i] * v10[i] for i in range(len(xs))), F(0)) / Wx
        V10[m], V01[m] = v10, v01
        out["theta_" + m] = theta
    if not (Wx > 1 and Wy > 1):
        out.update(var_a=None, var_b=None, cov=None)
        return out

    def cov(p, q):
        tp, tq = out["theta_" + p], out["theta_" + q]
        s10 = sum((wx[i] * (V10[p][i] - tp) * (V10[q][i] - tq) for i in range(len(wx))),
                  F(0)) / (Wx - 1)
        s01 = sum((wy[j] * (V01[p][j] - tp) * (V01[q][j] - tq) for j in range(len(wy))),
                  F(0)) / (Wy - 1)
        return s10 / Wx + s01 / Wy

    out.update(var_a=cov("a", "a"), var_b=cov("b", "b"), cov=cov("a", "b"))
    return out


def paired_reference(y, sa, sb, groups, w=None):
    """y: list of 0/1; groups: dict name -> list of bool. Returns dict (subgroup, metric) ->
    dict(value_a, value_b, difference, var_diff (Fraction), se_a, se_b)."""
    n = len(y)
    w = [F(1)] * n if w is None else [F(v) for v in w]
    sa = [F(v) for v in sa]
    sb = [F(v) for v in sb]

    def sample(rows):
        return [sa[i] for i in rows], [sb[i] for i in rows], [w[i] for i in rows]

    res = {}

    def put(key, xrows, yrows, aeg=False):
        xa, xb, wx = sample(xrows)
        ya, yb, wy = sample(yrows)
        p = delong_parts(xa, xb, wx, ya, yb, wy)
        if p is None:
            res[key] = None
            return
        ta, tb = p["theta_a"], p["theta_b"]
        if aeg:
            ta, tb = F(1, 2) - ta, F(1, 2) - tb
        r = {"value_a": ta, "value_b": tb, "difference": ta - tb}
        if p["var_a"] is None:
            r.update(var_diff=None)
        else:
            r.update(var_a=p["var_a"], var_b=p["var_b"], cov=p["cov"],
                     var_diff=p["var_a"] + p["var_b"] - 2 * p["cov"])
        res[key] = r

    pos = [i for i in range(n) if y[i]]
    neg = [i for i in range(n) if not y[i]]
    put(("overall", "overall_auc"), pos, neg)
    for name, mask in groups.items():
        gp = [i for i in pos if mask[i]]
        gn = [i for i in neg if mask[i]]
        bp = [i for i in pos if not mask[i]]
        bn = [i for i in neg if not mask[i]]
        put((name, "subgroup_auc"), gp, gn)
        put((name, "bpsn_auc"), bp, gn)
        put((name, "bnsp_auc"), gp, bn)
        put((name, "negative_aeg"), bn, gn, aeg=True)
        put((name, "positive_aeg"), bp, gp, aeg=True)
    return res


def z_p(diff, var_diff):
    se = math.sqrt(var_diff)
    if se == 0:
        return se, None, None
    z = float(diff) / se
    return se, z, math.erfc(abs(z) / math.sqrt(2))
